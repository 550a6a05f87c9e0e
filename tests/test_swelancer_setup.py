"""A task's starting state (base commit + setup patch, setups.py) and the reversed setup patch
as its reference fix (swelancer/reverse.py), as SWE-Lancer's IC tasks use them: on small git
repositories, and end to end on the web-app demo graded by its hidden browser test."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swebounty.demo import build_demo
from swebounty.evalcontext import EvalContext
from swebounty.report.browser import browser_missing
from swebounty.repos import RepoError, make_workspace, tree_of
from swebounty.runs import evaluate_run
from swebounty.sandbox import bwrap_available
from swebounty.setups import starting_point
from swebounty.store import Store
from swebounty.swelancer.reverse import ReverseError, reverse_patch
from swebounty.tasks import Task, empty_submissions, gold_submissions

BWRAP_OK, BWRAP_WHY = bwrap_available()
NO_BROWSER = browser_missing()


def sh(repo: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, input=input).stdout  # fmt: skip


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repo with a base commit and a later one changing every kind of thing a diff can."""
    repo = tmp_path / "owner__app"
    repo.mkdir()
    sh(repo, "init", "-q", "-b", "main")
    sh(repo, "config", "user.email", "t@t"), sh(repo, "config", "user.name", "t")
    (repo / "app.js").write_text("let n = 0\nshow()\nreset()\n")
    (repo / "old.txt").write_text("old\n")
    (repo / "gone.txt").write_text("gone\n")
    (repo / "run.sh").write_text("echo hi\n")
    (repo / "moved.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    sh(repo, "add", "-A"), sh(repo, "commit", "-qm", "base")
    base = sh(repo, "rev-parse", "HEAD").strip()
    (repo / "app.js").write_text("let n = 0\nshow()\nreset(); show()\n")
    (repo / "old.txt").write_text("new, no newline")
    (repo / "gone.txt").unlink()
    (repo / "added.txt").write_text("added\n")
    (repo / "run.sh").chmod(0o755)
    sh(repo, "mv", "moved.txt", "renamed.txt")
    sh(repo, "add", "-A"), sh(repo, "commit", "-qm", "fix")
    return repo, base, sh(repo, "rev-parse", "HEAD").strip()


def _files(patch: str) -> list[str]:
    return sorted(f"diff --git {part}" for part in patch.split("diff --git ")[1:])


def test_a_reversed_patch_is_what_git_reverses(tmp_path: Path) -> None:
    repo, base, fix = _repo(tmp_path)
    forward = sh(repo, "diff", "--full-index", "-M", base, fix)
    backward = sh(repo, "diff", "--full-index", "-M", fix, base)
    assert _files(reverse_patch(forward)) == _files(backward)  # git orders files its own way
    assert reverse_patch(reverse_patch(forward)) == forward
    with pytest.raises(ReverseError, match="not a git diff"):
        reverse_patch("just text\n")
    binary = "diff --git a/x.png b/x.png\nGIT binary patch\nliteral 1\n"
    with pytest.raises(ReverseError, match="binary"):
        reverse_patch(binary)


def test_the_starting_state_is_a_commit_of_the_harness_never_of_the_clone(
    tmp_path: Path,
) -> None:
    repo, base, fix = _repo(tmp_path)
    # SWE-Lancer's shape: the fixed commit, and a patch that puts the bug back.
    setup = sh(repo, "diff", "--full-index", "-M", fix, base)
    refs_before = sh(repo, "for-each-ref")
    task = Task(instance_id="t-1", repo="owner/app", base_commit=fix, setup_patch=setup)
    cache = tmp_path / "cache"
    mirror, state = starting_point(task, repos_dir=tmp_path, cache_dir=cache)
    assert mirror.is_relative_to(cache) and state != fix
    assert tree_of(mirror, state) == tree_of(repo, base)  # the bug is back
    assert sh(mirror, "rev-parse", f"{state}^") == fix + "\n"
    assert sh(mirror, "show", "-s", "--format=%ct", state) == sh(repo, "show", "-s",
                                                                  "--format=%ct", fix)  # fmt: skip
    assert sh(repo, "for-each-ref") == refs_before  # the user's clone is untouched
    assert starting_point(task, repos_dir=tmp_path, cache_dir=cache) == (mirror, state)
    # A workspace made from it has one commit and the bug.
    ws = make_workspace(mirror, state, tmp_path / "ws")
    assert (ws / "app.js").read_text() == "let n = 0\nshow()\nreset()\n"
    assert sh(ws, "rev-list", "--count", "HEAD") == "1\n"
    # Without a setup patch nothing changes; a patch that does not apply says so.
    plain = task.model_copy(update={"setup_patch": ""})
    assert starting_point(plain, repos_dir=tmp_path, cache_dir=cache) == (repo, fix)
    bad = task.model_copy(update={"setup_patch": setup.replace("reset(); show()", "other()")})
    with pytest.raises(RepoError, match="does not apply"):
        starting_point(bad, repos_dir=tmp_path, cache_dir=cache)


@pytest.mark.sandbox
@pytest.mark.network
@pytest.mark.browser
@pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
@pytest.mark.skipif(NO_BROWSER is not None, reason=f"no browser: {NO_BROWSER}")
def test_web_app_from_its_fixed_commit_and_a_setup_patch(tmp_path: Path) -> None:
    # The web demo as SWE-Lancer ships a task: the commit with the fix (and its browser test),
    # a patch putting the bug back (and taking the test out), the fix as that patch reversed.
    mirror, (demo,) = build_demo(tmp_path / "demo", "web")
    parents = [line.split() for line in sh(mirror, "log", "--all", "--format=%H %P").splitlines()]
    fixed = next(c for c, *ps in parents if ps == [demo.base_commit])
    setup = reverse_patch(demo.patch + demo.test_patch)
    task = demo.model_copy(update={"base_commit": fixed, "setup_patch": setup, "patch": demo.patch})
    ctx = EvalContext.create(cache_dir=tmp_path / "cache", runs_dir=tmp_path / "runs",
                             repos_dir=mirror.parent)  # fmt: skip
    runs = []
    with Store.open(tmp_path / "runs" / "runs.sqlite") as store:
        for name, subs in (
            ("gold", gold_submissions([task])),
            ("empty", empty_submissions([task])),
        ):
            runs += evaluate_run(name, [(task, subs[0])], ctx, store)
    gold, empty = runs
    assert gold.status == "resolved", gold.reason
    assert empty.status == "unresolved", empty.reason
    assert [t.test_id for t in empty.tests if t.status != "passed"] == [
        "e2e/test_counter.py::test_reset_shows_zero"
    ]
