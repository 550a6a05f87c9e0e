"""Ctrl-C reaches the whole process group: a git the harness started dies of it before the main
thread learns of the interruption. That death must surface as the interruption, never as a fact
about the task (a missing commit, a patch that does not apply) saved as an `error` verdict."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

import pytest

from run_helpers import one_attempt
from swebounty import headtree, repos, runs
from swebounty.store import Store
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict

# A git that dies of SIGINT at once, as a real one does when Ctrl-C reaches it (the default
# disposition restored: a test run in the background of a shell inherits SIGINT ignored).
_DYING_GIT = f"""#!{sys.executable}
import os, signal
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.kill(os.getpid(), signal.SIGINT)
"""


@pytest.fixture
def dying_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = bin_dir / "git"
    git.write_text(_DYING_GIT)
    git.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return tmp_path


@pytest.mark.parametrize("check", [True, False])
def test_a_git_killed_by_sigint_is_an_interruption(dying_git: Path, check: bool) -> None:
    with pytest.raises(KeyboardInterrupt, match="git was interrupted"):
        repos.git(dying_git, "cat-file", "-e", "HEAD", check=check)


def test_a_patch_tool_killed_by_sigint_is_an_interruption(dying_git: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        headtree._run(["git", "ls-tree", "HEAD"], dying_git)


def test_a_run_whose_git_dies_of_sigint_saves_nothing_whatever_the_timing(
    dying_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run is never marked cancelled here: only the git's death says it was interrupted,
    # so no settling delay decides whether an `error` is saved.
    task, sub, ctx = one_attempt(dying_git / "runs")

    def evaluate_one(task: Task, sub: Submission, ctx: Any, log_dir: Path) -> Verdict:
        repos.git(dying_git, "cat-file", "-e", task.base_commit, check=False)
        raise AssertionError("unreachable: the git above was interrupted")

    monkeypatch.setattr(runs, "evaluate_one", evaluate_one)
    with Store.open(dying_git / "runs.sqlite") as store:
        with pytest.raises(KeyboardInterrupt):
            runs.evaluate_run("r", [(task, sub)], cast(Any, ctx), store)
        assert store.statuses("r") == {}
