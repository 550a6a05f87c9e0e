"""Reading diffs: the files a patch names, even when its hunks are malformed; its text bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from swebounty.diffs import PatchError, check_text, files_in_patch, parse_patch
from test_patches import git, make_repo


def test_files_in_patch_lists_created_deleted_renamed_binary_and_quoted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"old.py": "x\n", "gone.py": "y\n", "b.bin": "z\n"})
    (repo / "b.bin").write_bytes(b"\x00\x01")
    git(repo, "mv", "old.py", "new.py")
    (repo / "t\u00e9st dir").mkdir()
    (repo / "t\u00e9st dir" / "a b.py").write_text("1\n")
    (repo / "gone.py").unlink()
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "--binary", "-M")
    assert '"b/t\\303\\251st dir/a b.py"' in patch  # git quoted the name: exercise unquoting
    assert sorted(files_in_patch(patch)) == sorted(
        ["b.bin", "gone.py", "new.py", "old.py", "t\u00e9st dir/a b.py"]
    )
    by_path = {d.path: d for d in parse_patch(patch)}
    assert by_path["gone.py"].deleted
    assert by_path["b.bin"].binary


def test_files_in_patch_reads_headers_when_hunks_are_malformed() -> None:
    patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n garbage\n"
    assert files_in_patch(patch) == ["x.py"]


def test_check_text_rejects_bytes_that_are_not_utf8_and_huge_patches() -> None:
    with pytest.raises(PatchError, match="not valid UTF-8"):
        check_text(b"--- a/x\n+++ b/x\n+\xff\xfe\n")
    with pytest.raises(PatchError, match="not valid UTF-8"):
        check_text(b"+\xff".decode("utf-8", "surrogateescape"))
    with pytest.raises(PatchError, match="over the 10-byte limit"):
        check_text("x" * 11, max_bytes=10)
    assert check_text("+é\n".encode()) == "+é\n"
