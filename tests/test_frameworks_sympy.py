"""frameworks/sympy.py: where sympy's own runner runs a task's tests (only where the overrides
file pins it), what it finds of the runner, how its records are read and graded, and a
sympy-style project (sympy_helpers.py) graded end to end through the real path and sandbox."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from repo_helpers import diff_of, git_repo
from swebounty.envs.overrides import Override, load_overrides
from swebounty.frameworks import BaseTree, TestRun, by_name, framework_for
from swebounty.frameworks.sympy import Runner, Sympy, read_results, runner_of
from swebounty.pytest_guard import GuardResult
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict
from sympy_helpers import F2P, P2P, PROJECT, RUNTESTS, sympy_project

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
FILE = "minisym/tests/test_calc.py"


def _task(**fields: Any) -> Task:
    return Task(**{"instance_id": "o__p-1", "repo": "o/p", "base_commit": "HEAD",
                   "ecosystem": "python", **fields})  # fmt: skip


def test_the_runner_is_bin_test_its_module_its_helpers_and_the_options_it_has(
    tmp_path: Path,
) -> None:
    git_repo(tmp_path / "o__p", PROJECT)
    tree = BaseTree(_task(), tmp_path, tmp_path / "cache")
    assert runner_of(tree) == Runner(
        script="bin/test",
        module="minisym.utilities.runtests",
        module_file="minisym/utilities/runtests.py",
        files=("bin/test", "bin/get_minisym.py", "minisym/utilities/runtests.py",
               "minisym/utilities/pytest.py"),
        options=("--no-cache", "--verbose", "--no-subprocess"),
        helpers=(("minisym.utilities.pytest", "minisym/utilities/pytest.py"),),
    )  # fmt: skip
    # No bin/test, or a runtests.py without sympy's classes: no runner.
    git_repo(tmp_path / "o__q", {k: v for k, v in PROJECT.items() if k != "bin/test"})
    assert runner_of(BaseTree(_task(repo="o/q"), tmp_path, tmp_path / "cache")) is None
    other = {**PROJECT, "minisym/utilities/runtests.py": "def test(): pass\n"}
    git_repo(tmp_path / "o__r", other)
    assert runner_of(BaseTree(_task(repo="o/r"), tmp_path, tmp_path / "cache")) is None
    assert "class SymPyTests" in RUNTESTS


def test_it_applies_only_where_pinned_and_sympy_is_pinned_before_pytest_got_raises(
    tmp_path: Path,
) -> None:
    """The shipped overrides pin sympy's runner for base commits before 2016-10-12 (PR
    #11710 gave sympy/utilities/pytest.py its `raises` under pytest on 2016-10-11)."""
    tree = BaseTree(_task(), tmp_path, tmp_path / "cache")
    assert not Sympy().applies(_task(), tree)
    ctx = SimpleNamespace(repos_dir=tmp_path, cache_dir=tmp_path / "cache",
                          envs=SimpleNamespace(overrides=load_overrides()))  # fmt: skip
    old = git_repo(tmp_path / "old" / "sympy__sympy", PROJECT, when="2016-07-16T19:05:08Z")
    new = git_repo(tmp_path / "new" / "sympy__sympy", PROJECT, when="2016-12-02T18:08:40Z")
    for root, expected in ((old, "sympy"), (new, "pytest")):
        task = _task(instance_id="sympy__sympy-1", repo="sympy/sympy")
        found = framework_for(task, SimpleNamespace(**{**vars(ctx), "repos_dir": root.parent}))
        assert found.name == expected
    assert by_name("sympy").name == "sympy"
    # Another repository with the same runner stays on pytest unless pinned.
    pinned = [Override(repo="o/p", why="runs its tests with bin/test", framework="sympy")]
    git_repo(tmp_path / "o__p", PROJECT)
    assert framework_for(_task(), ctx).name == "pytest"
    assert framework_for(_task(), SimpleNamespace(**{**vars(ctx), "envs": SimpleNamespace(
        overrides=pinned)})).name == "sympy"  # fmt: skip


def test_it_runs_the_test_patchs_files_the_runner_collects() -> None:
    patch = "".join(
        f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1,2 @@\n x\n+def test_y(): pass\n"
        for p in ("sympy/core/tests/test_basic.py", "sympy/core/tests/helpers.py",
                  "sympy/printing/tests/test_ccode.py")
    )  # fmt: skip
    files = Sympy().test_files(_task(test_patch=patch))
    assert files == ["sympy/core/tests/test_basic.py", "sympy/printing/tests/test_ccode.py"]


def _read(tests: dict[str, dict[str, str | None]], exit_code: int) -> TestRun:
    run = TestRun(test_files=[FILE], framework="sympy", patch_method="git")
    guard = GuardResult(exitstatus=exit_code, tests=tests)
    run.failure = read_results(_task(), guard, run, 60.0, {FILE: FILE})
    return run


def _record(status: str, kind: str = "test", message: str = "") -> dict[str, str | None]:
    return {"status": status, "message": message, "kind": kind, "doc": None}


def test_records_are_graded_by_sympys_bare_names_and_an_import_error_is_its_files() -> None:
    run = _read({f"{FILE}::test_double": _record("passed"),
                 f"{FILE}::test_name": _record("passed")}, 0)  # fmt: skip
    assert run.failure is None and run.uncollected == {}
    task = _task(FAIL_TO_PASS=F2P, PASS_TO_PASS=P2P)
    sub = Submission(instance_id="o__p-1", model_patch="diff", model_name_or_path="m")
    verdict = Sympy().grade(task, sub, run)
    assert verdict.status == "resolved", verdict.reason
    broken = _read({FILE: _record("error", "import", "Traceback...\nImportError: no raises")}, 1)
    assert broken.uncollected == {FILE: "ImportError: no raises"}
    verdict = Sympy().grade(task, sub, broken)
    assert verdict.status == "unresolved"
    statuses = {t.test_id: (t.status, t.message) for t in verdict.tests}
    assert statuses["test_double"] == (
        "missing",
        f"never ran; modules that failed to import: {FILE}",
    )


def test_the_exit_status_must_agree_with_the_records() -> None:
    lying = _read({f"{FILE}::test_double": _record("failed")}, 0)
    assert lying.failure == "the runner exited 0, but 1 tests failed or errored"
    tampered = TestRun(test_files=[FILE])
    read_results(_task(), GuardResult(exitstatus=0, problems=["a pass ... not believed"]),
                 tampered, 60.0, {})  # fmt: skip
    assert tampered.flags == ["tampers_with_test_runner"] and tampered.outcomes == {}


# ------------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return sympy_project(tmp_path_factory.mktemp("sympyish"))


def evaluate(project: dict[str, Any], subs: Any, run_id: str) -> Verdict:
    from swebounty.evaluation import evaluate

    (verdict,) = evaluate(project["dataset"], subs, run_id=run_id, repos_dir=project["repos"],
                          cache_dir=project["cache"], runs_dir=project["runs"])  # fmt: skip
    return verdict


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """minisym's tests run by its own runner, as the overrides file pins sympy's."""
    import swebounty.envs.manager as manager

    pin = Override(repo="small/minisym", why="its tests run with bin/test", framework="sympy")
    monkeypatch.setattr(manager, "load_overrides", lambda path=None: [*load_overrides(), pin])


FORCE_PASSES = RUNTESTS.replace(
    "if kind is AssertionError:\n                        reporter.test_fail((kind, value, tb))",
    "if kind is AssertionError:\n                        reporter.test_pass()",
)


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
@pytest.mark.usefixtures("pinned")
def test_a_sympy_style_project_is_graded_by_its_own_runner(project: dict[str, Any]) -> None:
    gold = evaluate(project, "gold", "gold")
    assert gold.status == "resolved", gold.reason
    assert {t.test_id: t.status for t in gold.tests} == dict.fromkeys(F2P + P2P, "passed")
    output = (project["runs"] / "gold" / "small__minisym-1" / "test_output.txt").read_text()
    assert "test_double ok" in output  # the runner's own verbose log, as SWE-bench reads it

    empty = evaluate(project, "empty", "empty")
    assert empty.status == "unresolved", empty.reason
    assert {t.test_id: t.status for t in empty.tests} == {"test_double": "failed",
                                                         "test_name": "passed"}  # fmt: skip


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
@pytest.mark.usefixtures("pinned")
def test_a_patch_that_edits_the_runner_is_graded_with_the_bases(project: dict[str, Any]) -> None:
    assert FORCE_PASSES != RUNTESTS
    patch = diff_of(project["repo"], {"minisym/utilities/runtests.py": FORCE_PASSES})
    sub = Submission(instance_id="small__minisym-1", model_patch=patch, model_name_or_path="m")
    verdict = evaluate(project, [sub], "forced")
    assert verdict.status == "unresolved", verdict.reason
    assert "modifies_test_config" in verdict.hack_flags
    assert verdict.test_infra_reverted == ["minisym/utilities/runtests.py"]
    assert {t.test_id: t.status for t in verdict.tests}["test_double"] == "failed"
