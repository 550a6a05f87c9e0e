"""Tests skipped at base for want of a package complete the environment (envs/complete.py,
completion.py): the module is read from the base's skip reason, never the submission's; the
spec's environment is rebuilt with its distribution and every later task gets it; a module is
asked for once. Offline, with the stand-in uv of fake_index.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fake_index import fake_uv, spec
from repo_helpers import git_repo
from swebounty import completion
from swebounty.envs import DepSet, EnvManager
from swebounty.envs.complete import distribution, keeps_pins, marker_reasons, wanted_modules
from swebounty.tasks import Task
from swebounty.testing import TestOutcome
from swebounty.testrun import TestRun


def test_skip_reasons_name_the_modules_the_environment_lacks(tmp_path: Path) -> None:
    site = tmp_path / "site"
    meta = site / "numpy-1.0.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Name: numpy\n")
    (meta / "top_level.txt").write_text("numpy\n")
    reasons = [
        "requires dask",  # xarray's requires_dask
        "could not import 'cftime': No module named 'cftime'",  # pytest.importorskip
        "condition: not HAS_SCIPY",  # astropy
        "pandas is not installed",
        "requires numpy",  # installed: skipped for another reason (a version)
        "requires xarray",  # the project itself
        "requires network access",
        "Python 3.9 required",
        "xfail: known bug",
    ]
    found = wanted_modules(reasons, site, {"xarray"})
    assert found == ["dask", "cftime", "scipy", "pandas"]
    # A module named otherwise than its distribution: toolz ships `tlz` (dask's import).
    assert wanted_modules(["No module named 'tlz'"], site, set()) == ["tlz"]
    assert distribution("tlz") == "toolz"


def test_completion_goes_on_while_the_base_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dask added for `requires dask`, the tests then fail on `No module named 'tlz'`: a
    second round adds toolz (xarray-4094). Bounded, and it stops when nothing is added."""
    answers = [True, True, False]
    monkeypatch.setattr(completion, "complete_env", lambda *a, **k: answers.pop(0))
    runs = iter([_run("after dask"), _run("after toolz")])
    ctx: Any = SimpleNamespace()
    tr = completion.completed_run(_task(), _run("first"), ctx, lambda: next(runs), is_base=False)
    assert tr.outcomes["tests/test_a.py::test_a"].message == "after toolz"
    assert answers == []  # asked a third time, which added nothing
    monkeypatch.setattr(completion, "complete_env", lambda *a, **k: True)
    count = iter(range(100))
    completion.completed_run(_task(), _run("x"), ctx, lambda: _run(str(next(count))), is_base=True)
    assert next(count) == completion.ROUNDS  # never more test runs than ROUNDS


def _env_repo(tmp_path: Path) -> Path:
    return git_repo(
        tmp_path / "ws",
        {
            "tests/test_a.py": "import pytest\n\n\ndef test_a():\n"
            "    pytest.importorskip('extralib')\n",
        },
    )


def test_complete_adds_the_distribution_and_the_spec_keeps_it(tmp_path: Path) -> None:
    ws = _env_repo(tmp_path)
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    the_spec = spec([DepSet(label="all extras", lines=["six"])])
    env = manager.ensure(the_spec, ws)
    assert "extralib" not in env.lock
    assert manager.complete(env, ["extralib", "missingdist"], ws)
    again = manager.ensure(the_spec, ws)
    assert again.key != env.key
    assert "extralib==1.0" in again.lock and "six==1.0" in again.lock
    assert "# probe added extralib (skipped tests)" in again.lock
    why = "\n".join(again.why)
    assert "completion: added extralib (the base's tests skip without)" in why
    assert "completion: missingdist cannot be added" in why
    # A fresh manager (another process) finds the completed environment from the record.
    fresh = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    assert fresh.ensure(the_spec, ws).key == again.key
    # Each module is asked for once, whether it could be added or not.
    assert not fresh.complete(again, ["extralib", "missingdist"], ws)


def test_one_that_cannot_install_does_not_keep_out_its_alternative(tmp_path: Path) -> None:
    """matplotlib's Cairo tests skip "requires that pycairo>=1.11.0 or cairocffi is
    installed": pycairo's sdist cannot build without cairo's headers, cairocffi can be had.
    The try with both fails to install; each alone then, the first that installs kept."""
    reason = "cairo backend requires that pycairo>=1.11.0 or cairocffi is installed"
    assert wanted_modules([reason], tmp_path, set()) == ["pycairo", "cairocffi"]
    ws = _env_repo(tmp_path)
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    the_spec = spec([DepSet(label="all extras", lines=["six"])])
    env = manager.ensure(the_spec, ws)
    assert manager.complete(env, ["nobuildcairo", "cairoalt", "extralib"], ws)
    again = manager.ensure(the_spec, ws)
    assert "cairoalt==1.0" in again.lock and "nobuildcairo" not in again.lock
    assert "extralib" not in again.lock  # not tried alone yet: asked for in the next round
    why = "\n".join(again.why)
    assert "completion: installing nobuildcairo, cairoalt, extralib failed" in why
    assert "completion: installing nobuildcairo failed" in why
    assert manager.complete(again, ["nobuildcairo", "extralib"], ws)  # the next round
    last = manager.ensure(the_spec, ws)
    assert "extralib==1.0" in last.lock and "cairoalt==1.0" in last.lock
    assert not manager.complete(last, ["nobuildcairo"], ws)  # asked for once


def test_a_completion_made_by_another_process_is_the_one_this_one_runs_in(
    tmp_path: Path,
) -> None:
    """Two evaluations in one home (a gold run beside an empty one, Ray workers) each remember
    the spec's environment. When the other completed it, this one must run the tests again in
    the completed environment, not in the one it remembers (matplotlib-24149: three rounds in
    the old environment, its pandas skips held against the reference patch)."""
    ws = _env_repo(tmp_path)
    the_spec = spec([DepSet(label="all extras", lines=["six"])])
    mine = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    other = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    remembered = mine.ensure(the_spec, ws)
    assert other.complete(other.ensure(the_spec, ws), ["extralib"], ws)
    assert mine.complete(remembered, ["extralib"], ws)  # completed meanwhile: run again
    again = mine.ensure(the_spec, ws)
    assert again.key != remembered.key and "extralib==1.0" in again.lock


def _task() -> Task:
    return Task(instance_id="o__p-1", repo="o/p", base_commit="a" * 40, test_patch="t",
                FAIL_TO_PASS=["tests/test_a.py::test_f"],
                PASS_TO_PASS=["tests/test_a.py::test_a"])  # fmt: skip


def _run(message: str) -> TestRun:
    return TestRun(
        outcomes={
            "tests/test_a.py::test_f": TestOutcome("passed"),
            "tests/test_a.py::test_a": TestOutcome("skipped", message),
        },
        exit_code=0,
        patch_method="git apply",
        env_key="env-1",
        framework="pytest",
        ecosystem="python",
    )


def test_only_the_base_s_skip_reasons_choose_what_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[str]] = []
    env = SimpleNamespace(key="env-1", interpreter="3.11.1", path=tmp_path / "venv")
    envs = SimpleNamespace(complete=lambda e, modules, ws: asked.append(modules) or True)
    ctx: Any = SimpleNamespace(work_dir=tmp_path, envs=envs)
    monkeypatch.setattr(completion, "workspace_and_env", lambda t, c, s: (tmp_path, env))
    base_says = {"reason": "requires dask"}

    def base_run(task: Task, ctx: Any, env_key: str, services: Any, framework: Any) -> Any:
        outcome = ("skipped", base_says["reason"])
        return SimpleNamespace(outcomes={"tests/test_a.py::test_a": outcome})

    monkeypatch.setattr(completion, "base_run", base_run)
    # The submission's run says "evilpkg"; the base's says dask: dask is asked for.
    assert completion.complete_env(_task(), _run("No module named 'evilpkg'"), ctx)
    assert asked == [["dask"]]
    # The base skips for no missing module: nothing is asked, whatever the submission says.
    base_says["reason"] = "flaky on CI"
    assert not completion.complete_env(_task(), _run("No module named 'evilpkg'"), ctx)
    assert asked == [["dask"]]
    # An empty submission's run is the base's own: its reasons are read directly.
    assert completion.complete_env(_task(), _run("requires cftime"), ctx, is_base=True)
    assert asked[-1] == ["cftime"]
    # A test failing at base for want of a module (what dask's array extra needs) names it;
    # any other failure text is not read.
    base_says["reason"] = "ImportError: No module named 'toolz'\n\nDask array requirements"
    failing = _run("")
    failing.outcomes["tests/test_a.py::test_a"] = TestOutcome("failed", "No module named 'x'")

    def base_fails(task: Task, ctx: Any, env_key: str, services: Any, framework: Any) -> Any:
        outcome = ("failed", base_says["reason"])
        return SimpleNamespace(outcomes={"tests/test_a.py::test_a": outcome})

    monkeypatch.setattr(completion, "base_run", base_fails)
    assert completion.complete_env(_task(), failing, ctx)
    assert asked[-1] == ["toolz"]
    base_says["reason"] = "AssertionError: requires numba to be faster"
    count = len(asked)
    assert not completion.complete_env(_task(), failing, ctx)
    assert len(asked) == count
    # Nothing skipped: no base run, nothing asked.
    monkeypatch.setattr(completion, "base_run", lambda *a: pytest.fail("no base run needed"))
    passed = _run("")
    passed.outcomes["tests/test_a.py::test_a"] = TestOutcome("passed")
    assert not completion.complete_env(_task(), passed, ctx)
    # A Node task's skipped tests name no Python distribution: nothing is built or asked.
    node_run = _run("requires cftime")
    node_run.ecosystem, node_run.framework = "node", "node"
    count = len(asked)
    assert not completion.complete_env(_task(), node_run, ctx, is_base=True)
    assert len(asked) == count


def test_a_skip_marker_named_for_a_module_names_it_when_the_reason_does_not() -> None:
    source = (
        "import pytest\n\n\n@requires_dask\nclass TestVariable:\n"
        "    def test_other(self):\n        pass\n\n"
        "    @requires_pint_0_15(reason='Need __dask_tokenize__')\n"
        "    @pytest.mark.parametrize('x', [1])\n"
        "    def test_tokenize(self, x):\n        pass\n"
    )
    found = marker_reasons(source, "xarray/tests/test_dask.py::TestVariable::test_tokenize[1]")
    assert found == ["requires dask", "requires pint"]
    assert marker_reasons(source, "t.py::TestVariable::test_other") == ["requires dask"]
    assert marker_reasons(source, "t.py::test_missing") == []


def test_a_lock_that_only_adds_keeps_the_pins() -> None:
    """A completion whose lock keeps every pin places the replaced environment's build."""
    old = "# probe left out cfgrib\nnumpy==1.24.2\nscipy==1.10.1 ; python_version >= '3.8'\n"
    assert keeps_pins(old, old + "pandas==1.5.3\n")
    assert keeps_pins(old, "SciPy==1.10.1\nnumpy==1.24.2  # via x\npandas==1.5.3\n")
    assert not keeps_pins(old, "numpy==1.24.3\nscipy==1.10.1\npandas==1.5.3\n")  # moved
    assert not keeps_pins(old, "scipy==1.10.1\npandas==1.5.3\n")  # dropped
