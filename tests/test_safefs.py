"""Host-side access to trees a submission wrote: no link followed, no hang, no recursion."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from swebounty import safefs


def _deep_tree(root: Path, depth: int) -> None:
    """`depth` nested directories, made through fds (the path is far beyond PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=child), "w") as f:
                f.write("x")
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def test_remove_tree_removes_a_tree_deeper_than_any_recursion(tmp_path: Path) -> None:
    top = tmp_path / "top"
    top.mkdir()
    _deep_tree(top, sys.getrecursionlimit() * 3)
    assert safefs.remove_tree(top) is None
    assert not top.exists()


def test_remove_tree_renames_nothing_above_the_held_depth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = tmp_path / "top"
    shallow = top.joinpath(*["d"] * (safefs._HELD_DEPTH - 2))
    shallow.mkdir(parents=True)
    for i in range(3):
        (top / f"pkg{i}" / "sub").mkdir(parents=True)
        (top / f"pkg{i}" / "sub" / "m.py").write_text("")
        (top / f"pkg{i}" / "f.txt").write_text("")
    (shallow / "bottom.txt").write_text("")
    renames: list[str] = []
    real = os.rename
    monkeypatch.setattr(os, "rename", lambda *a, **kw: renames.append(a[0]) or real(*a, **kw))
    fds = len(os.listdir("/proc/self/fd"))
    assert safefs.remove_tree(top) is None
    assert not top.exists() and renames == []  # depth first, no entry moved
    assert len(os.listdir("/proc/self/fd")) == fds
    # Deeper than that, the rest is moved up and removed without holding more descriptors.
    deep = top.joinpath(*["d"] * (safefs._HELD_DEPTH + 5))
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("")
    assert safefs.remove_tree(top) is None
    assert not top.exists() and renames
    assert len(os.listdir("/proc/self/fd")) == fds


def test_remove_tree_removes_an_empty_directory_it_may_not_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As an ordinary user, a directory its owner made unreadable cannot be opened: if it is
    empty it goes all the same (root opens anything, so the refusal is played here)."""
    top = tmp_path / "top"
    (top / "a" / "locked").mkdir(parents=True)
    (top / "a" / "f.txt").write_text("")
    real = safefs._open_emptied

    def refusing(parent_fd: int, name: str) -> tuple[int, list[str]]:
        if name == "locked":
            raise PermissionError(13, "Permission denied", name)
        return real(parent_fd, name)

    monkeypatch.setattr(safefs, "_open_emptied", refusing)
    assert safefs.remove_tree(top) is None
    assert not top.exists()


def test_remove_tree_never_follows_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "keep.txt").write_text("host")
    top = tmp_path / "top"
    (top / "a").mkdir(parents=True)
    (top / "a" / "link").symlink_to(outside)
    (top / "a" / "file_link").symlink_to(outside / "sub" / "keep.txt")
    (top / "a" / ".swebounty-rm-1").write_text("a name the remover uses")
    os.mkfifo(top / "fifo")
    (top / "locked").mkdir(mode=0o000)
    assert safefs.remove_tree(top) is None
    assert not top.exists()
    assert (outside / "sub" / "keep.txt").read_text() == "host"


def test_remove_tree_reports_instead_of_raising(tmp_path: Path) -> None:
    assert safefs.remove_tree(tmp_path / "missing") is None
    assert "cannot open" in (safefs.remove_tree(tmp_path / "no" / "parent") or "")


def test_reads_refuse_links_special_files_and_big_files(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_bytes(b"data")
    (tmp_path / "link.txt").symlink_to("/proc/self/environ")
    os.mkfifo(tmp_path / "fifo")  # nobody writes: a blocking open would hang
    (tmp_path / "big").write_bytes(b"x" * 2000)
    (tmp_path / "dir").symlink_to(tmp_path)
    assert safefs.read_beneath(tmp_path, "ok.txt", 100) == b"data"
    assert safefs.read_beneath(tmp_path, "link.txt", 100) is None
    assert safefs.read_beneath(tmp_path, "fifo", 100) is None
    assert safefs.read_beneath(tmp_path, "big", 1000) is None
    assert safefs.read_beneath(tmp_path, "dir/ok.txt", 100) is None  # a link on the way
    assert safefs.read_regular(tmp_path / "ok.txt", 100) == b"data"
    assert safefs.read_regular(Path("/dev/zero"), 100) is None
    assert safefs.regular_beneath(tmp_path, "ok.txt") and safefs.regular_beneath(tmp_path, "big")
    for rel in ("link.txt", "fifo", "dir/ok.txt", "dir", "absent", "../ok.txt"):
        assert not safefs.regular_beneath(tmp_path, rel), rel


def test_writes_replace_what_is_in_the_way_and_never_write_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "pkg").symlink_to(outside)
    (root / "leaf").symlink_to(outside / "target")
    safefs.write_beneath(root, "pkg/mod.py", b"print(1)\n", 0o755)
    safefs.write_beneath(root, "leaf", b"data")
    assert (
        not (root / "pkg").is_symlink() and (root / "pkg" / "mod.py").read_bytes() == b"print(1)\n"
    )
    assert os.stat(root / "pkg" / "mod.py").st_mode & 0o777 == 0o755
    assert not (root / "leaf").is_symlink()
    assert list(outside.iterdir()) == []
    safefs.remove_beneath(root, "pkg/mod.py", prune_empty_parents=True)
    assert not (root / "pkg").exists()
    assert safefs.exists_beneath(root, "leaf") and not safefs.exists_beneath(root, "nope")


def test_walk_files_does_not_follow_links_and_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.py").write_text("")
    (tmp_path / "a" / "loop").symlink_to(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("")
    found = sorted(p for p, _ in safefs.walk_files(tmp_path, skip_dirs=frozenset({".git"})))
    assert found == ["a/b/f.py", "a/loop"]
    with pytest.raises(safefs.UnsafePathError):
        list(safefs.walk_files(tmp_path, max_entries=2))


def test_walks_reach_any_depth_with_few_descriptors(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * (safefs._HELD_DEPTH + 40))
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("")
    (tmp_path / "d" / "top.txt").write_text("")
    (tmp_path / "d" / "d" / "link").symlink_to(tmp_path / "d")
    fds = len(os.listdir("/proc/self/fd"))
    found = sorted(safefs.walk_paths(tmp_path))
    assert found == sorted(p for p, _ in safefs.walk_files(tmp_path))
    depth = safefs._HELD_DEPTH + 40
    assert found == ["d/" * depth + "bottom.txt", "d/d/link", "d/top.txt"]
    walk = safefs.walk_paths(tmp_path)
    next(walk)
    walk.close()  # abandoned half-way: its descriptors are closed
    assert len(os.listdir("/proc/self/fd")) == fds


def test_node_artifacts_are_copied_without_following_links(tmp_path: Path) -> None:
    from swebounty.node.e2e import copy_artifacts

    src, dest = tmp_path / "artifacts", tmp_path / "logs"
    (src / "shots").mkdir(parents=True)
    (src / "shots" / "page.png").write_bytes(b"png")
    (src / "environ").symlink_to("/proc/self/environ")
    (src / "etc").symlink_to("/etc")  # a linked directory: nothing under it is copied
    os.mkfifo(src / "pipe")
    assert copy_artifacts(src, dest) == ["shots/page.png"]
    assert sorted(p.name for p in dest.rglob("*")) == ["page.png", "shots"]
