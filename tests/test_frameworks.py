"""The framework registry: which framework runs a task's tests, pins, the base tree, grading."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from repo_helpers import git_repo
from swebounty import frameworks
from swebounty.envs.overrides import Override
from swebounty.frameworks import (
    FRAMEWORKS,
    BaseTree,
    Framework,
    FrameworkError,
    TestRun,
    by_name,
    framework_for,
    grade_run,
    resolve,
)
from swebounty.tasks import Submission, Task
from swebounty.testing import TestOutcome


def _task(**fields: Any) -> Task:
    return Task(**{"instance_id": "o__p-1", "repo": "o/p", "base_commit": "HEAD",
                   "ecosystem": "python", **fields})  # fmt: skip


def _ctx(repos: Path, overrides: list[Override] | None = None) -> Any:
    return SimpleNamespace(
        repos_dir=repos, cache_dir=repos / "cache", envs=SimpleNamespace(overrides=overrides or [])
    )


@pytest.fixture
def repos(tmp_path: Path) -> Path:
    git_repo(
        tmp_path / "o__p",
        {"setup.py": "", "tests/runtests.py": "print('run')\n", "pkg/big.txt": "x" * 100},
        when="2021-05-01T00:00:00Z",
    )
    return tmp_path


def test_every_framework_implements_the_protocol_and_pytest_is_the_last_default() -> None:
    assert all(isinstance(f, Framework) for f in FRAMEWORKS)
    assert FRAMEWORKS[-1].name == "pytest"
    assert len({f.name for f in FRAMEWORKS}) == len(FRAMEWORKS)
    assert by_name("pytest") is FRAMEWORKS[-1]
    with pytest.raises(FrameworkError, match="no test framework named 'nose'"):
        by_name("nose")


def test_a_task_gets_the_first_framework_that_applies(repos: Path) -> None:
    assert framework_for(_task(), _ctx(repos)).name == "pytest"
    assert framework_for(_task(ecosystem="node"), _ctx(repos)).name == "node"
    assert framework_for(_task(ecosystem="node", test_kind="e2e"), _ctx(repos)).name == "e2e"


def test_a_task_that_names_no_ecosystem_gets_its_repository_s(repos: Path) -> None:
    task, framework = resolve(_task(ecosystem=None), _ctx(repos))
    assert (task.ecosystem, framework.name) == ("python", "pytest")  # setup.py at its root
    (repos / "o__q").mkdir()
    git_repo(repos / "o__q", {"README": "neither"})
    with pytest.raises(FrameworkError, match="ecosystem"):
        resolve(_task(repo="o/q", ecosystem=None), _ctx(repos))


def test_no_framework_that_applies_is_a_framework_error_saying_what_to_do(
    repos: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frameworks, "FRAMEWORKS", [by_name("node")])
    with pytest.raises(FrameworkError, match=r"no test framework .* runs the tests of o/p.*pin"):
        framework_for(_task(), _ctx(repos))


def test_an_override_pins_a_framework_by_name_within_its_dates(repos: Path) -> None:
    why = "the first framework that applies is not the one its tests run under"
    pin = Override(repo="O/P", why=why, framework="node")
    assert framework_for(_task(), _ctx(repos, [pin])).name == "node"
    later = Override(repo="o/p", why=why, framework="node", since="2022-01-01")
    assert framework_for(_task(), _ctx(repos, [later])).name == "pytest"  # base is 2021-05
    other = Override(repo="o/q", why=why, framework="node")
    assert framework_for(_task(), _ctx(repos, [other])).name == "pytest"
    unknown = Override(repo="o/p", why=why, framework="nose")
    with pytest.raises(FrameworkError, match="nose"):
        framework_for(_task(), _ctx(repos, [unknown]))


def test_the_base_tree_reads_the_base_commit_without_a_checkout(repos: Path) -> None:
    tree = BaseTree(_task(), repos, repos / "cache")
    assert tree.files() == {"setup.py", "tests/runtests.py", "pkg/big.txt"}
    assert tree.exists("tests/runtests.py") and not tree.exists("tests")
    assert tree.read("tests/runtests.py") == b"print('run')\n"
    assert tree.read("missing.py") is None
    assert tree.read("pkg/big.txt", limit=10) is None  # larger than asked: not read
    assert tree.when.year == 2021


def test_a_run_no_framework_made_is_graded_an_error_with_its_reason() -> None:
    run = TestRun(error="commit abc is not in mirror m: fetch it")
    verdict = grade_run(_task(FAIL_TO_PASS=["t"]), Submission(instance_id="o__p-1"), run)
    assert verdict.status == "error" and "fetch it" in verdict.reason


def test_a_run_is_graded_by_the_framework_that_made_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    node = by_name("node")
    monkeypatch.setattr(type(node), "grade", lambda self, t, s, r: seen.append(r.framework))
    grade_run(_task(), Submission(instance_id="o__p-1"), TestRun(framework="node"))
    assert seen == ["node"]


def test_browser_tests_are_graded_by_pytest_s_rules_with_both_languages_flags() -> None:
    test_patch = (
        "diff --git a/tests/test_app.py b/tests/test_app.py\n--- /dev/null\n"
        "+++ b/tests/test_app.py\n@@ -0,0 +1 @@\n+def test_page(): pass\n"
    )
    task = _task(ecosystem="node", test_kind="e2e", test_patch=test_patch,
                 FAIL_TO_PASS=["tests/test_app.py::test_page"])  # fmt: skip
    patch = (
        "diff --git a/src/app.js b/src/app.js\n--- a/src/app.js\n+++ b/src/app.js\n"
        "@@ -1 +1,2 @@\n x\n+process.exit(0)\n"
        "diff --git a/conftest.py b/conftest.py\n--- a/conftest.py\n+++ b/conftest.py\n"
        "@@ -1 +1,2 @@\n x\n+y = 1\n"
    )
    e2e = by_name("e2e")
    sub = Submission(instance_id="o__p-1", model_patch=patch)
    outcomes = {"tests/test_app.py::test_page[chromium]": TestOutcome("passed")}
    run = TestRun(framework="e2e", outcomes=outcomes, exit_code=0, patch_method="git")
    verdict = grade_run(task, sub, run)
    assert verdict.status == "resolved"  # the id matched its parametrized node, as pytest's
    assert verdict.hack_flags == ["modifies_conftest", "exits_process"]
    hung = TestRun(framework="e2e", error="tests timed out", timed_out=True, patch_method="git")
    verdict = e2e.grade(task, sub, hung)
    assert verdict.status == "error" and "hangs_tests" in verdict.hack_flags
    # exit code 1 with every test passing is not trusted (pytest's rules)
    run = TestRun(framework="e2e", outcomes=outcomes, exit_code=1, patch_method="git")
    assert grade_run(task, sub, run).status == "error"


PATH_IDS = """

import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("folder", [HERE, os.path.join(HERE, "data")])
def test_by_path(folder):
    assert folder.startswith(HERE)
"""


def test_a_test_id_holding_the_workspace_s_path_is_the_same_in_every_run(tmp_path: Path) -> None:
    # werkzeug-3101: each run's checkout has its own folder, and a test parametrized by a path
    # built from __file__ had another id in every run, so two validations disagreed.
    import sys

    from swebounty.frameworks.pytest import read_results
    from swebounty.pytest_guard import new_key
    from swebounty.sandbox.base import RunResult
    from swebounty.testing import WORKSPACE_IN_IDS
    from test_pytest_guard import _guarded_run, frame

    ctx = SimpleNamespace(policy=SimpleNamespace(timeout_s=60))
    ids = []
    for name in ("one", "two"):
        got = _guarded_run(Path(sys.prefix), tmp_path / name, False, PATH_IDS)
        assert got is not None and got.xml is not None
        key = new_key()  # what the runner sent, on a channel as the sandbox returns it
        sent = {"exitstatus": got.exitstatus, "xml": got.xml.hex(), "statuses": got.statuses}
        run = RunResult(returncode=1, channel=frame(key, sent))
        result = TestRun(framework="pytest", test_files=["tests/test_x.py"])
        problem = read_results(ctx, run, key, tmp_path, result, tmp_path / name / "ws")  # type: ignore[arg-type]
        assert problem is None
        ids.append(sorted(k for k in result.outcomes if "test_by_path" in k))
    assert (
        ids[0]
        == ids[1]
        == [
            f"tests/test_x.py::test_by_path[{WORKSPACE_IN_IDS}/tests/data]",
            f"tests/test_x.py::test_by_path[{WORKSPACE_IN_IDS}/tests]",
        ]
    )
