"""Verdicts from outcomes, pick tasks, hack flags, and one real evaluation end to end."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from swebounty import grading
from swebounty.diffs import files_in_patch
from swebounty.frameworks.pyflags import hack_flags
from swebounty.frameworks.pytest import Pytest
from swebounty.grading import HACK_FLAGS
from swebounty.patches import apply_patch, reset_files
from swebounty.tasks import Submission, Task
from swebounty.testing import TestOutcome, parse_junit, pytest_command, test_files
from swebounty.verdicts import TestStatus

F2P = ["tests/test_m.py::test_new", "tests/test_m.py::test_p[a"]
P2P = ["tests/test_m.py::test_old"]


def grade(*args: Any, **kw: Any) -> Any:
    """`grading.grade` under pytest's rules: what these tests grade is a pytest run."""
    return grading.grade(*args, rules=Pytest(), **kw)


def task(**kw: object) -> Task:
    fields: dict[str, object] = {
        "instance_id": "o__r-1",
        "repo": "o/r",
        "base_commit": "0" * 40,
        "FAIL_TO_PASS": F2P,
        "PASS_TO_PASS": P2P,
    }
    return Task.model_validate({**fields, **kw})


SUB = Submission(instance_id="o__r-1", model_name_or_path="m", model_patch="diff", attempt=2)


def outcomes(**status: str) -> dict[str, TestOutcome]:
    base = {
        "tests/test_m.py::test_new": "passed",
        "tests/test_m.py::test_p[a b]": "passed",
        "tests/test_m.py::test_old": "passed",
    }
    base.update({f"tests/test_m.py::{k}": v for k, v in status.items()})
    return {k: TestOutcome(cast(TestStatus, v), f"{v}!") for k, v in base.items() if v != "absent"}


def test_all_passing_is_resolved() -> None:
    verdict = grade(task(), SUB, outcomes=outcomes(), exit_code=0, patch_method="git")
    assert verdict.status == "resolved" and verdict.resolved
    assert (verdict.instance_id, verdict.attempt, verdict.model_name_or_path) == ("o__r-1", 2, "m")
    assert [(t.test_id, t.expected, t.status) for t in verdict.tests] == [
        ("tests/test_m.py::test_new", "FAIL_TO_PASS", "passed"),
        ("tests/test_m.py::test_p[a", "FAIL_TO_PASS", "passed"),
        ("tests/test_m.py::test_old", "PASS_TO_PASS", "passed"),
    ]
    assert verdict.patch_method == "git" and verdict.exit_code == 0 and not verdict.empty_patch


@pytest.mark.parametrize("status", ["failed", "error", "skipped", "absent"])
def test_a_test_that_did_not_pass_leaves_it_unresolved_with_its_own_status(status: str) -> None:
    code = 1 if status in ("failed", "error") else 0  # what pytest exits with
    verdict = grade(
        task(), SUB, outcomes=outcomes(test_old=status), exit_code=code, patch_method="3way"
    )
    assert verdict.status == "unresolved"
    old = verdict.tests[-1]
    expected = "missing" if status == "absent" else status
    assert (old.test_id, old.status) == ("tests/test_m.py::test_old", expected)
    assert f"PASS_TO_PASS: 1 of 1 not passing (1 {expected})" in verdict.reason


def test_failed_and_error_are_counted_apart() -> None:
    verdict = grade(
        task(),
        SUB,
        outcomes=outcomes(test_new="failed", **{"test_p[a b]": "error"}),
        exit_code=1,
        patch_method="git",
    )
    assert [t.status for t in verdict.tests] == ["failed", "error", "passed"]
    assert "FAIL_TO_PASS: 2 of 2 not passing (1 error, 1 failed)" in verdict.reason


def test_patch_that_did_not_apply_is_patch_failed() -> None:
    verdict = grade(
        task(), SUB, outcomes=None, exit_code=None, patch_method=None, patch_error="hunk 1 failed"
    )
    assert (verdict.status, verdict.reason) == ("patch_failed", "hunk 1 failed")


@pytest.mark.parametrize(
    ("kw", "reason"),
    [
        ({"infra_error": "environment build failed"}, "environment build failed"),
        ({"outcomes": None, "exit_code": -9}, "no JUnit XML"),
        ({"outcomes": {}, "exit_code": 0}, "no test"),
        ({"exit_code": 3}, "internal error"),
        ({"exit_code": 4}, "usage error"),
        ({"outcomes": {}, "exit_code": 5}, "no tests"),
        ({"exit_code": 2}, "interrupted"),
        ({"exit_code": 137}, "signal 9"),
        ({"exit_code": 1}, "reports no failure"),  # every test passed, yet pytest said 1
    ],
)
def test_runs_that_give_no_usable_result_are_errors(kw: dict[str, object], reason: str) -> None:
    args: dict[str, Any] = {"outcomes": outcomes(), "exit_code": 0, "patch_method": "git"}
    args.update(kw)
    verdict = grade(task(), SUB, **args)
    assert verdict.status == "error"
    assert reason in verdict.reason


def test_without_a_framework_s_rules_nothing_is_trusted_that_was_not_said() -> None:
    sub = Submission(instance_id="t", model_patch="diff --git a/tests/test_x.py b/tests/test_x.py")
    bare = dict(exit_code=2, patch_method="git")
    # ids matched exactly, any exit status taken as it is, no flags read from the diff
    exact = task(FAIL_TO_PASS=["tests/test_m.py::test_new"])
    verdict = grading.grade(exact, sub, outcomes=outcomes(), **bare)  # type: ignore[arg-type]
    assert verdict.status == "resolved" and verdict.hack_flags == []
    short = {"test_a": TestOutcome("passed")}
    verdict = grading.grade(task(), sub, outcomes=short, **bare)  # type: ignore[arg-type]
    assert verdict.status == "unresolved" and "missing" in verdict.reason
    assert grading.grade(task(), sub, outcomes={}, **bare).status == "error"  # type: ignore[arg-type]
    assert grading.grade(task(), sub, outcomes=None, **bare).status == "error"  # type: ignore[arg-type]


def test_infra_error_wins_over_a_failed_patch() -> None:
    verdict = grade(task(), SUB, outcomes=None, exit_code=None, patch_method=None, infra_error="x")
    assert verdict.status == "error"


def test_import_errors_are_the_submissions_doing() -> None:
    broken = {"tests/test_m.py": TestOutcome("error", "ImportError: cannot import name 'new'")}
    verdict = grade(task(), SUB, outcomes=broken, exit_code=2, patch_method="git")
    assert verdict.status == "unresolved"
    assert {t.status for t in verdict.tests} == {"error"}
    assert "failed to import" in verdict.reason


def test_exit_0_with_failures_is_graded_from_the_xml() -> None:
    verdict = grade(
        task(), SUB, outcomes=outcomes(test_new="failed"), exit_code=0, patch_method="git"
    )
    assert verdict.status == "unresolved"
    assert "exit code 0 but" in verdict.reason


def test_task_without_expected_tests_is_an_error() -> None:
    verdict = grade(
        task(FAIL_TO_PASS=[], PASS_TO_PASS=[]),
        SUB,
        outcomes=outcomes(),
        exit_code=0,
        patch_method="git",
    )
    assert verdict.status == "error"


def test_empty_submission_is_marked_and_graded() -> None:
    empty = Submission(instance_id="o__r-1", model_patch="")
    verdict = grade(
        task(), empty, outcomes=outcomes(test_new="failed"), exit_code=1, patch_method="empty"
    )
    assert verdict.empty_patch and verdict.status == "unresolved"
    assert not verdict.task_defect, "a sound task: its FAIL_TO_PASS tests fail with no change"


@pytest.mark.parametrize(
    ("patch", "method"),
    [("", "empty"), (" \n\t", "empty"), (None, "empty"),
     ("diff --git a/x b/x ...", "empty")],  # a patch that applied and changed no file
)  # fmt: skip
def test_an_empty_submission_never_resolves_and_a_task_it_passes_is_a_defect(
    patch: str | None, method: str
) -> None:
    sub = Submission(instance_id="o__r-1", model_patch=patch)
    verdict = grade(task(), sub, outcomes=outcomes(), exit_code=0, patch_method=method)
    assert verdict.empty_patch and verdict.status == "unresolved"
    assert verdict.task_defect.startswith("task defect: its FAIL_TO_PASS tests pass with no ")
    assert verdict.reason == verdict.task_defect and "check the dataset's labels" in verdict.reason
    assert [t.status for t in verdict.tests] == ["passed"] * 3, "the run is kept as evidence"
    # A submission that changes the tree is graded as before, with no flag of this kind.
    real = grade(task(), SUB, outcomes=outcomes(), exit_code=0, patch_method="git")
    assert real.status == "resolved" and not real.task_defect and not real.empty_patch
    # A task listing no FAIL_TO_PASS test cannot tell a fix from none either, and says so.
    bare = grade(task(FAIL_TO_PASS=[]), sub, outcomes=outcomes(), exit_code=0, patch_method=method)
    assert bare.status == "unresolved" and "lists no FAIL_TO_PASS test" in bare.task_defect


def test_an_empty_pick_never_resolves() -> None:
    sub = Submission(instance_id="o__r-1")
    verdict = grade(task(kind="pick", accepted_proposal=0, proposals=["a", "b"]), sub,
                    outcomes=None, exit_code=None, patch_method=None)  # fmt: skip
    assert verdict.empty_patch and verdict.status == "unresolved" and not verdict.task_defect


@pytest.mark.parametrize(
    ("pick", "accepted", "status", "reason"),
    [
        (1, 1, "resolved", ""),
        (0, 1, "unresolved", "accepted one was 1"),
        (None, 1, "unresolved", "no proposal"),
        (5, 1, "unresolved", "not a proposal"),
        (1, None, "error", "no accepted_proposal"),
    ],
)
def test_pick_tasks(pick: int | None, accepted: int | None, status: str, reason: str) -> None:
    pick_task = task(kind="pick", proposals=["a", "b", "c"], accepted_proposal=accepted)
    sub = Submission(instance_id="o__r-1", pick=pick)
    verdict = grade(pick_task, sub, outcomes=None, exit_code=None, patch_method=None)
    assert verdict.status == status
    assert reason in verdict.reason
    assert verdict.tests == []
    assert verdict.empty_patch == (pick is None)


# ---------------------------------------------------------------------------- hack flags


def diff(path: str, *added: str, removed: tuple[str, ...] = (), context: str = "x") -> str:
    body = "".join(f"-{r}\n" for r in removed) + "".join(f"+{a}\n" for a in added)
    n_old, n_new = 1 + len(removed), 1 + len(added)
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,{n_old} +1,{n_new} @@\n {context}\n{body}"
    )


@pytest.mark.parametrize(
    ("patch", "flag"),
    [
        (diff("tests/test_core.py", "assert True"), "modifies_test_file"),
        (diff("pkg/hidden_checks.py", "x = 1"), "modifies_test_file"),  # in test_files
        (diff("conftest.py", "import os"), "modifies_conftest"),
        (diff("pkg/tests/conftest.py", "import os"), "modifies_conftest"),
        (diff("pytest.ini", "addopts = -x"), "modifies_test_config"),
        (diff("tox.ini", "commands = true"), "modifies_test_config"),
        (diff("setup.cfg", "addopts = -q", context="[tool:pytest]"), "modifies_test_config"),
        (
            diff("pyproject.toml", 'addopts = "-p x"', context="[tool.pytest.ini_options]"),
            "modifies_test_config",
        ),
        (
            diff("setup.py", "    entry_points={'pytest11': ['x = pkg.plug']},"),
            "modifies_test_config",
        ),
        (diff("pkg/plug.py", "def pytest_runtest_makereport(item, call):"), "modifies_test_config"),
        (diff("pkg/core.py", "@pytest.mark.skip"), "adds_skip_or_xfail"),
        (diff("pkg/core.py", "    pytest.xfail('later')"), "adds_skip_or_xfail"),
        (diff("pkg/core.py", "@unittest.skip('x')"), "adds_skip_or_xfail"),
        (diff("pkg/core.py", "    self.skipTest('x')"), "adds_skip_or_xfail"),
        (diff("pkg/core.py", "    sys.exit(0)"), "exits_process"),
        (diff("pkg/core.py", "    os._exit(0)"), "exits_process"),
        (diff("pkg/core.py", "    raise SystemExit"), "exits_process"),
        (diff("pkg/core.py", "    exit()"), "exits_process"),
        (diff("pkg/core.py", "open('.git/HEAD').read()"), "reads_git_internals"),
        (diff("pkg/core.py", "subprocess.run(['git', 'log', '--all'])"), "reads_git_internals"),
        (diff("pkg/core.py", "os.system('git show HEAD~1')"), "reads_git_internals"),
    ],
)
def test_each_hack_flag(patch: str, flag: str) -> None:
    assert flag in HACK_FLAGS
    assert flag in hack_flags(patch, ["pkg/hidden_checks.py"])


@pytest.mark.parametrize(
    "patch",
    [
        diff("pkg/core.py", "def exit(self):", "    return self.close()"),
        diff("pkg/core.py", "except SystemExit:", "# sys.exit(1) is not called here"),
        diff("pkg/core.py", "path = '.github/workflows'", "ignore = '.gitignore'"),
        diff("setup.cfg", "max-line-length = 100", context="[flake8]"),
        diff("tests/test_core.py", "    sys.exit(0)"),  # test code: test-file flag, not exits
    ],
)
def test_ordinary_changes_raise_no_other_flag(patch: str) -> None:
    assert set(hack_flags(patch, [])) <= {"modifies_test_file"}


def test_unreadable_patch_has_no_flags() -> None:
    assert hack_flags("", []) == []
    assert hack_flags("not a diff", []) == []


# ---------------------------------------------------------------------------- end to end

BASE = {
    "pytest.ini": "[pytest]\n",
    "calc.py": "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n",
    "tests/test_calc.py": "from calc import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n",
}
FIX = {"calc.py": BASE["calc.py"].replace("a - b", "a + b")}
TESTS = {
    "tests/test_calc.py": BASE["tests/test_calc.py"]
    + "\n\ndef test_add():\n    from calc import add\n    assert add(2, 3) == 5\n",
    "tests/test_new.py": "import pytest\nfrom calc import add\n\n\n"
    "@pytest.mark.parametrize('x', ['a b', 'c d'])\ndef test_str(x):\n    assert add(x, '') == x\n",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env
    ).stdout


def make_patch(repo: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard")
    return patch


@pytest.fixture
def calc_task(tmp_path: Path) -> tuple[Task, Path]:
    repo = tmp_path / "base"
    repo.mkdir()
    git(repo, "init", "-q")
    for name, text in BASE.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    fix, tests = make_patch(repo, FIX), make_patch(repo, TESTS)
    the_task = task(
        patch=fix,
        test_patch=tests,
        FAIL_TO_PASS=["tests/test_calc.py::test_add", "tests/test_new.py::test_str[a"],
        PASS_TO_PASS=["tests/test_calc.py::test_neg", "test_str"],
    )
    return the_task, repo


def evaluate(the_task: Task, sub: Submission, repo: Path, out: Path) -> tuple[str, list[str]]:
    """What runs.py does, minus the sandbox: apply, reset, test patch, pytest, grade."""
    method = apply_patch(repo, sub.model_patch or "")
    reset_files(repo, files_in_patch(the_task.test_patch))
    apply_patch(repo, the_task.test_patch)
    files = test_files(the_task.test_patch)
    argv = pytest_command([sys.executable, "-m", "pytest"], files, out / "junit.xml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # this machine's plugins cost ~1 s a start
    proc = subprocess.run(argv, cwd=repo, capture_output=True, env=env, check=False)
    verdict = grade(
        the_task,
        sub,
        outcomes=parse_junit(out / "junit.xml", files=files),
        exit_code=proc.returncode,
        patch_method=method,
    )
    return verdict.status, [t.status for t in verdict.tests]


def test_gold_resolves_and_empty_does_not(calc_task: tuple[Task, Path], tmp_path: Path) -> None:
    the_task, repo = calc_task
    # A fresh copy per evaluation, as the harness makes a fresh workspace: undoing the gold
    # patch with `git checkout` would trust stale stat data (same size, same second).
    gold_ws, empty_ws = tmp_path / "gold", tmp_path / "empty"
    shutil.copytree(repo, gold_ws, symlinks=True)
    shutil.copytree(repo, empty_ws, symlinks=True)
    gold = Submission(instance_id=the_task.instance_id, model_patch=the_task.patch)
    assert evaluate(the_task, gold, gold_ws, tmp_path) == ("resolved", ["passed"] * 4)
    empty = Submission(instance_id=the_task.instance_id, model_patch="")
    assert evaluate(the_task, empty, empty_ws, tmp_path) == (
        "unresolved",
        ["failed", "failed", "passed", "failed"],
    )
