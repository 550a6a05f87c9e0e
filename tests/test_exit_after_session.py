"""An exception out of pytest after its session ended (a conftest's pytest_unconfigure; pytest
8.4+ raising the tests' unraisable exceptions when warnings are errors, as tqdm-1751's base did
in a second validation) leaves the session's results and exit status standing, and the process
still ends without the interpreter's exit, which a thread the tests left (tqdm's atexit join)
would hang until the run's timeout. On a small repo this file builds, through the real
evaluation path and sandbox (`network`: the environment comes from the package index)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo_helpers import BUGGY_PROJECT, diff_of, git, git_repo
from swebounty.sandbox import bwrap_available

BWRAP_OK, BWRAP_WHY = bwrap_available()
WHEN = "2024-03-01T12:00:00+00:00"
TIMEOUT_S = 120.0

CONFTEST = """\
def pytest_unconfigure(config):
    raise RuntimeError("raised after the session's end")
"""

TESTS = """\
import atexit
import threading

from proj.a import double


def test_double():
    assert double(3) == 6


def test_leaves_a_thread_the_exit_would_wait_for():
    stuck = threading.Thread(target=threading.Event().wait)
    stuck.start()
    atexit.register(stuck.join)
"""
FIXED = "def double(x):\n    return x * 2\n\n\ndef name():\n    return 'proj'\n"


@pytest.mark.sandbox
@pytest.mark.network
@pytest.mark.slow
@pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
def test_an_exception_after_the_session_keeps_its_results_and_does_not_hang(
    tmp_path: Path,
) -> None:
    from swebounty.evaluation import evaluate
    from swebounty.tasks import Task

    repo = git_repo(tmp_path / "repos" / "small__proj", {**BUGGY_PROJECT, "conftest.py": CONFTEST},
                    when=WHEN)  # fmt: skip
    task = Task(
        instance_id="small__proj-1",
        repo="small/proj",
        base_commit=git(repo, "rev-parse", "HEAD").strip(),
        problem_statement="double() adds",
        patch=diff_of(repo, {"proj/a.py": FIXED}),
        test_patch=diff_of(repo, {"tests/test_a.py": TESTS}),
        FAIL_TO_PASS=["tests/test_a.py::test_double"],
        PASS_TO_PASS=["tests/test_a.py::test_leaves_a_thread_the_exit_would_wait_for"],
        created_at="2024-03-01T12:00:00Z",
    )
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    kw = {"repos_dir": tmp_path / "repos", "cache_dir": tmp_path / "cache"}
    runs = tmp_path / "runs"
    gold = evaluate(dataset, "gold", run_id="gold", runs_dir=runs, timeout_s=TIMEOUT_S, **kw)
    assert [v.status for v in gold] == ["resolved"], gold[0].reason
    assert gold[0].seconds < TIMEOUT_S / 2  # the process ended, not the run's timeout
    empty = evaluate(dataset, "empty", run_id="empty", runs_dir=runs, timeout_s=TIMEOUT_S, **kw)
    assert [v.status for v in empty] == ["unresolved"], empty[0].reason
    assert empty[0].seconds < TIMEOUT_S / 2
