"""The apply fallbacks (git, 3way, fuzz), rollback and resetting to the base."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from swebounty import headtree, patches
from swebounty.diffs import PatchError, files_in_patch
from swebounty.patches import apply_patch, reset_files

needs_gnu_patch = pytest.mark.skipif(
    shutil.which("patch") is None, reason="GNU patch is not installed"
)

LINES = "".join(f"line {i}\n" for i in range(1, 21))


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env
    )
    return proc.stdout


def make_repo(path: Path, files: dict[str, str]) -> Path:
    """A workspace like the harness makes: one commit holding the base tree."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, content in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(content)
    git(path, "add", "-A")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return path


def diff_of(repo: Path, changes: dict[str, str | None], *git_diff_args: str) -> str:
    """The git diff that `changes` make to `repo`, leaving `repo` as it was."""
    for name, content in changes.items():
        if content is None:
            (repo / name).unlink()
        else:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(content)
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", *git_diff_args)
    git(repo, "reset", "-q", "--hard")
    return diff


def status(repo: Path) -> str:
    return git(repo, "status", "--porcelain", "--untracked-files=all")


# ---------------------------------------------------------------------------- applying


def test_clean_patch_applies_with_git_apply_even_at_an_offset(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"f.txt": LINES})
    patch = diff_of(repo, {"f.txt": LINES.replace("line 10\n", "line ten\n")})
    (repo / "f.txt").write_text("new top\n" * 4 + LINES)  # hunk now sits 4 lines lower
    assert apply_patch(repo, patch) == "git"
    assert "line ten" in (repo / "f.txt").read_text()
    assert git(repo, "diff", "--cached") == ""  # nothing staged


def test_patch_that_only_3way_applies(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"f.txt": LINES})
    # Five lines of context: fuzz may ignore three, so a change two lines away defeats it,
    # while a 3-way merge sees two independent edits.
    patch = diff_of(repo, {"f.txt": LINES.replace("line 10\n", "line ten\n")}, "-U5")
    (repo / "f.txt").write_text(LINES.replace("line 8\n", "line eight\n"))
    assert apply_patch(repo, patch) == "3way"
    text = (repo / "f.txt").read_text()
    assert "line ten\n" in text and "line eight\n" in text
    assert git(repo, "diff", "--cached") == ""  # index as before, like plain git apply


@needs_gnu_patch
def test_patch_that_only_fuzz_applies(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"f.txt": LINES})
    # No index line (a plain diff -u), so 3-way has no blob; the outer context is stale.
    patch = (
        "--- a/f.txt\n+++ b/f.txt\n@@ -7,7 +7,7 @@\n"
        " stale 7\n line 8\n line 9\n-line 10\n+line ten\n line 11\n line 12\n stale 13\n"
    )
    assert apply_patch(repo, patch) == "fuzz"
    assert (repo / "f.txt").read_text() == LINES.replace("line 10\n", "line ten\n")
    assert status(repo) == " M f.txt\n"  # no .orig, no .rej


def test_patch_that_nothing_applies_says_why_and_leaves_the_workspace_alone(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "r", {"f.txt": LINES, "g.txt": "keep\n"})
    good = diff_of(repo, {"g.txt": "changed\n", "new/n.txt": "created\n"})
    bad = diff_of(repo, {"f.txt": LINES.replace("line 10\n", "line ten\n")})
    (repo / "f.txt").write_text(LINES.replace("line 10\n", "line X\n"))
    git(repo, "add", "f.txt")  # a staged change must survive the failed 3-way attempt too
    before_index = git(repo, "diff", "--cached")
    with pytest.raises(PatchError) as info:
        apply_patch(repo, good + bad)
    message = str(info.value)
    assert "[git]" in message and "[3way]" in message and "[fuzz]" in message
    assert (repo / "g.txt").read_text() == "keep\n"
    assert not (repo / "new").exists()
    assert "<<<<<<<" not in (repo / "f.txt").read_text()
    assert git(repo, "diff", "--cached") == before_index
    assert status(repo) == "M  f.txt\n"


def test_empty_patch_changes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"f.txt": LINES})
    assert apply_patch(repo, "") == "empty"
    assert apply_patch(repo, "  \n") == "empty"
    assert status(repo) == ""


def test_a_patch_that_applies_without_changing_a_file_is_empty(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"f.txt": LINES})
    same = "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n"
    same += "-line 1\n+line 1\n line 2\n"
    assert apply_patch(repo, same) == "empty" and status(repo) == ""
    # Whatever changes the tree is not empty: a blank line, an empty file, a mode.
    changes: list[dict[str, str | None]] = [{"f.txt": LINES + "\n"}, {"new.txt": ""}]
    patches_ = [diff_of(repo, c) for c in changes]
    (repo / "f.txt").chmod(0o755)
    patches_.append(git(repo, "diff"))
    git(repo, "reset", "-q", "--hard")
    assert "new mode 100755" in patches_[-1] and "new.txt" in patches_[1]
    for patch in patches_:
        assert apply_patch(repo, patch) == "git", patch
        git(repo, "reset", "-q", "--hard")
        git(repo, "clean", "-qfd")


def test_non_utf8_and_huge_patches_are_rejected_before_touching_anything(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "r", {"f.txt": "a\n"})
    patch = diff_of(repo, {"f.txt": "b\n"})
    with pytest.raises(PatchError, match="UTF-8"):
        apply_patch(repo, patch.encode() + b"\xff")
    with pytest.raises(PatchError, match="limit"):
        apply_patch(repo, patch, max_bytes=len(patch) - 1)
    with pytest.raises(PatchError, match="no file diffs"):
        apply_patch(repo, "this is not a diff\n")
    assert status(repo) == ""
    assert apply_patch(repo, patch.encode()) == "git"


@pytest.mark.parametrize("target", [".git/config", "../outside.txt", "sub/.GIT/hooks/x"])
def test_patches_reaching_outside_or_into_git_are_refused(tmp_path: Path, target: str) -> None:
    repo = make_repo(tmp_path / "r", {"f.txt": "a\n"})
    patch = f"--- a/{target}\n+++ b/{target}\n@@ -0,0 +1 @@\n+[core]\n"
    with pytest.raises(PatchError, match="refusing"):
        apply_patch(repo, patch)
    assert not (tmp_path / "outside.txt").exists()


def test_patch_through_a_planted_symlink_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path / "r", {"f.txt": "a\n"})
    (repo / "link").symlink_to(outside)
    patch = "--- /dev/null\n+++ b/link/evil.txt\n@@ -0,0 +1 @@\n+x\n"
    with pytest.raises(PatchError, match="symbolic link"):
        apply_patch(repo, patch)
    assert list(outside.iterdir()) == []


def test_patch_with_a_binary_file_applies_with_git(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"f.txt": "a\n"})
    (repo / "b.bin").write_bytes(b"\x00\x01\x02")
    git(repo, "add", "b.bin")
    patch = git(repo, "diff", "--cached", "--binary")
    git(repo, "rm", "-q", "--cached", "b.bin")
    (repo / "b.bin").unlink()
    assert apply_patch(repo, patch) == "git"
    assert (repo / "b.bin").read_bytes() == b"\x00\x01\x02"


def test_test_patch_applies_over_a_submission_that_touched_the_same_file(tmp_path: Path) -> None:
    """The harness's order: submission, then the test patch (3-way needs a matching index)."""
    repo = make_repo(tmp_path / "r", {"f.txt": LINES})
    test_patch = diff_of(repo, {"f.txt": LINES.replace("line 10\n", "line ten\n")}, "-U5")
    model = diff_of(repo, {"f.txt": LINES.replace("line 8\n", "line eight\n")})
    assert apply_patch(repo, model) == "git"
    assert apply_patch(repo, test_patch) == "3way"
    assert "line eight" in (repo / "f.txt").read_text()


# ---------------------------------------------------------------------------- resetting


def test_reset_files_restores_modified_and_deleted_and_removes_created(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r", {"tests/test_a.py": "A\n", "tests/test_b.py": "B\n", "src.py": "S\n"}
    )
    (repo / "tests/test_a.py").write_text("tampered\n")
    (repo / "tests/test_b.py").unlink()
    (repo / "tests/new/deep").mkdir(parents=True)
    (repo / "tests/new/deep/test_c.py").write_text("planted\n")
    (repo / "src.py").write_text("model change\n")
    reset_files(repo, ["tests/test_a.py", "tests/test_b.py", "tests/new/deep/test_c.py"])
    assert (repo / "tests/test_a.py").read_text() == "A\n"
    assert (repo / "tests/test_b.py").read_text() == "B\n"
    assert not (repo / "tests/new").exists()
    assert (repo / "src.py").read_text() == "model change\n"  # not in the list: untouched
    assert status(repo) == " M src.py\n"


def test_reset_files_replaces_a_planted_symlink_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_a.py").write_text("host file\n")
    repo = make_repo(tmp_path / "r", {"tests/test_a.py": "A\n"})
    shutil.rmtree(repo / "tests")
    (repo / "tests").symlink_to(outside)
    reset_files(repo, ["tests/test_a.py"])
    assert not (repo / "tests").is_symlink()
    assert (repo / "tests/test_a.py").read_text() == "A\n"
    assert (outside / "test_a.py").read_text() == "host file\n"


def test_reset_files_never_deletes_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_new.py").write_text("host file\n")
    repo = make_repo(tmp_path / "r", {"f.txt": "a\n"})
    (repo / "tests").symlink_to(outside)
    reset_files(repo, ["tests/test_new.py"])
    assert (outside / "test_new.py").read_text() == "host file\n"
    # The planted link is gone, so the test patch can create its file there.
    assert not (repo / "tests").is_symlink()


def test_reset_then_test_patch_creating_a_file_applies_twice(tmp_path: Path) -> None:
    """A submission that already created the test patch's new file must not block it."""
    repo = make_repo(tmp_path / "r", {"f.txt": "a\n"})
    test_patch = diff_of(repo, {"tests/test_new.py": "def test_x():\n    pass\n"})
    model = diff_of(repo, {"tests/test_new.py": "def test_x():\n    assert True\n"})
    assert apply_patch(repo, model) == "git"
    reset_files(repo, files_in_patch(test_patch))
    assert apply_patch(repo, test_patch) == "git"
    assert "pass" in (repo / "tests/test_new.py").read_text()


@needs_gnu_patch
def test_gnu_patch_never_writes_a_file_the_checked_headers_do_not_name(tmp_path: Path) -> None:
    from swebounty.patches import _gnu_patch

    repo = make_repo(tmp_path / "r", {"f.txt": "a\n"})
    patch = diff_of(repo, {"f.txt": "b\n"}).encode()
    assert "do not name" in (_gnu_patch(repo, patch, ["g.txt"]) or "")
    assert (repo / "f.txt").read_text() == "a\n"
    assert _gnu_patch(repo, patch, ["f.txt"]) is None
    assert (repo / "f.txt").read_text() == "b\n"


# ---------------------------------------------------------------------------- HEAD and index


def _counting_git(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The git processes patches.py (and headtree.py, which reads HEAD for it) starts."""
    calls: list[list[str]] = []
    real = patches._run

    def counting(argv: list[str], cwd: Path, data: bytes | None = None) -> object:
        calls.append(argv)
        return real(argv, cwd, data)

    monkeypatch.setattr(patches, "_run", counting)
    monkeypatch.setattr(headtree, "_run", counting)
    return calls


def test_head_tree_asks_git_once_per_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "ws", {"a.txt": "one\n"})
    calls = _counting_git(monkeypatch)
    first = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert patches.head_tree(repo) == first and len(calls) == 1
    assert patches.head_tree(repo) == first and len(calls) == 1  # read from .git, remembered
    # Another checkout of the same commit (a later evaluation's workspace): no git either.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    assert patches.head_tree(clone) == first and len(calls) == 1
    # HEAD moves to a new commit: its own tree, git asked once more.
    (repo / "a.txt").write_text("two\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "next")
    second = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert second != first
    assert patches.head_tree(repo) == second and len(calls) == 2
    # A branch only in packed-refs, or a detached HEAD: still the right tree.
    git(repo, "pack-refs", "--all")
    assert not any((repo / ".git" / "refs" / "heads").iterdir())
    assert patches.head_tree(repo) == second and len(calls) == 3
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    assert patches.head_tree(repo) == first and len(calls) == 3
    assert patches.head_tree(tmp_path / "missing") is None


def test_head_entries_list_a_tree_once_and_read_the_listing_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"a.txt": "one\n", "d/b.py": "two\n", "d/run.sh": "echo\n"}
    repo = make_repo(tmp_path / "ws", files)
    (repo / "d" / "run.sh").chmod(0o755)
    os.symlink("a.txt", repo / "link")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "more")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    calls = _counting_git(monkeypatch)
    wanted = ["a.txt", "d/run.sh", "link", "d", "missing.txt", "d/b.py"]
    first = headtree.head_entries(repo, wanted)
    assert set(first) == {"a.txt", "d/run.sh", "link", "d/b.py"}  # a directory is no entry
    assert first["d/run.sh"][0] == "100755" and first["link"][0] == "120000"
    assert first["a.txt"][1] == git(repo, "rev-parse", "HEAD:a.txt").strip()
    listed = len(calls)
    # Another workspace of the same commit, another question: the listing answers.
    assert headtree.head_entries(clone, ["a.txt"]) == {"a.txt": first["a.txt"]}
    (clone / "a.txt").write_text("changed\n")  # the work tree does not matter, HEAD does
    reset_files(clone, ["a.txt"])
    assert (clone / "a.txt").read_text() == "one\n"
    assert not [c for c in calls[listed:] if "ls-tree" in c]
    # A new commit is a new tree: listed once more.
    (repo / "a.txt").write_text("three\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "next")
    new = headtree.head_entries(repo, ["a.txt"])["a.txt"][1]
    assert new == git(repo, "rev-parse", "HEAD:a.txt").strip() != first["a.txt"][1]


def test_the_index_is_found_without_asking_git_and_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "ws", {"a.txt": LINES})
    assert patches._index_path(repo) == repo / git(repo, "rev-parse", "--git-path", "index").strip()
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))  # .git is a file there: git says where
    assert (
        patches._index_path(linked)
        == linked / git(linked, "rev-parse", "--git-path", "index").strip()
    )
    calls = _counting_git(monkeypatch)
    diff = diff_of(repo, {"a.txt": LINES.replace("line 3\n", "line three\n")})
    before = (repo / ".git" / "index").read_bytes()
    broken = diff + "diff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-x\n+y\n"
    with pytest.raises(PatchError):
        apply_patch(repo, broken)
    assert (repo / ".git" / "index").read_bytes() == before and status(repo) == ""
    assert not [c for c in calls if "--git-path" in c]
