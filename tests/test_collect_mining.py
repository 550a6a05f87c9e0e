"""Mining fixes from git history: merges, squash merges, rebases, direct commits, links."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from collect_helpers import GitRepo, WidgetRepo, build_widget_repo
from swebounty.collect.mining import (
    GitError,
    clean_message,
    fix_diff,
    fix_for_commit,
    linked_issues,
    mine_fixes,
    open_repo,
    release_before,
    repo_slug,
)

UTC = timezone.utc


@pytest.fixture(scope="module")
def widget(tmp_path_factory: pytest.TempPathFactory) -> WidgetRepo:
    return build_widget_repo(tmp_path_factory.mktemp("widget"))


def test_first_parent_history_gives_each_pr_once(widget: WidgetRepo) -> None:
    fixes = mine_fixes(widget.path, datetime(2024, 3, 1, tzinfo=UTC))
    assert [(f.kind, f.pr_number) for f in fixes] == [
        ("merge", 1), ("squash", 2), ("squash", 3), ("squash", 4), ("squash", 5),
        ("commit", None), ("squash", 6), ("squash", 7), ("squash", 8), ("merge", 9),
        ("squash", 10), ("squash", 12), ("squash", 13),
    ]  # fmt: skip
    by_pr = {f.pr_number: f for f in fixes}
    merge = by_pr[1]
    assert merge.base_commit == widget.shas["c0"] and merge.fix_commit == widget.shas["pr1"]
    assert merge.issue_numbers == [10]
    # A merged branch's fix started with its first commit, not at the merge.
    assert merge.created_at == datetime(2024, 3, 5, 10, tzinfo=UTC)
    assert merge.merged_at == datetime(2024, 3, 6, 10, tzinfo=UTC)
    assert by_pr[9].created_at == datetime(2024, 2, 20, 10, tzinfo=UTC)
    assert merge.message.startswith("add() returns wrong sums for negative numbers")
    assert by_pr[2].message == "Return 0.0 from mean() of an empty list\n\nCloses #11"
    assert by_pr[2].issue_numbers == [11]
    assert all(f.repo == "acme/widget" for f in fixes)


def test_merge_diff_is_the_whole_pr(widget: WidgetRepo) -> None:
    fix = next(f for f in mine_fixes(widget.path) if f.pr_number == 9)
    diff = fix_diff(fix).decode()
    assert "tests/test_round.py" in diff and "int(x + 0.5)" in diff
    assert "x * k" not in diff  # main's own changes since the branch point are not the PR's


def test_window_and_direct_commits(widget: WidgetRepo) -> None:
    march = mine_fixes(
        widget.path,
        datetime(2024, 3, 15, tzinfo=UTC),
        datetime(2024, 3, 19, tzinfo=UTC),
    )
    assert [f.pr_number for f in march] == [5, None]
    prs_only = mine_fixes(widget.path, datetime(2024, 3, 15, tzinfo=UTC), direct_commits=False)
    assert None not in [f.pr_number for f in prs_only]


def test_rebase_merged_pr(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    base = repo.commit("init", {"a.py": "a = 1\n"}, "2024-01-01T00:00:00Z")
    repo.commit("step one", {"a.py": "a = 2\n"}, "2024-01-02T00:00:00Z")
    top = repo.commit("step two", {"tests/test_a.py": "x\n"}, "2024-01-03T00:00:00Z")
    fix = fix_for_commit(repo.path, "o/r", top, pr_number=4, n_commits=2)
    assert fix is not None and fix.kind == "rebase" and fix.base_commit == base
    assert "a = 2" in fix_diff(fix).decode()
    single = fix_for_commit(repo.path, "o/r", top, pr_number=4)
    assert single is not None and single.kind == "commit" and single.base_commit != base
    assert fix_for_commit(repo.path, "o/r", "0" * 40, pr_number=4) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fixes #12", [12]),
        ("closes #3, resolves #4 and fixed: #5", [3, 4, 5]),
        ("Fix https://github.com/acme/widget/issues/7", [7]),
        ("Fixes other/repo#8, fixes acme/widget#9", [9]),
        ("See #10; related to #11", []),
        ("prefix #12", []),
        ("Fixes #12. Also fixes #12", [12]),
    ],
)
def test_closing_keywords(text: str, expected: list[int]) -> None:
    assert linked_issues(text, "acme/widget") == expected


def test_clean_message() -> None:
    msg = "Fix it (#12)\n\nBody.\n\nCo-authored-by: A <a@b>\nSigned-off-by: B <b@c>\n"
    assert clean_message(msg) == "Fix it\n\nBody."


def test_release_before(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    first = repo.commit("one", {"a": "1"}, "2024-01-01T00:00:00Z")
    assert release_before(repo.path, first) is None
    repo.git("tag", "v1.2.0")
    second = repo.commit("two", {"a": "2"}, "2024-01-02T00:00:00Z")
    assert release_before(repo.path, second) == "1.2.0"


def test_open_repo_errors(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="does not exist"):
        open_repo(tmp_path / "missing")
    with pytest.raises(GitError, match="not a git repository"):
        open_repo(tmp_path)


def test_repo_slug(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "thing")
    assert repo_slug(repo.path) == "local/thing"
    repo.git("remote", "add", "origin", "git@github.com:Own-er/na.me.git")
    assert repo_slug(repo.path) == "Own-er/na.me"


def test_bare_clone_is_mined(widget: WidgetRepo, tmp_path: Path) -> None:
    bare = tmp_path / "widget.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(widget.path), str(bare)], check=True)
    assert len(mine_fixes(bare, datetime(2024, 3, 1, tzinfo=UTC))) == 13
