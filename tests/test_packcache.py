"""The pack cache: a later workspace of the same tree copies the first one's pack, and nothing
done to a workspace reaches the cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swebounty import packcache, repos
from swebounty.repos import git, isolated_git_env, make_workspace


def _repo(path: Path, files: dict[str, str]) -> str:
    env = isolated_git_env()
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", env=env)
    git(path, "add", "-A", env=env)
    git(path, "commit", "-qm", "base", env=env)
    return git(path, "rev-parse", "HEAD", env=env).stdout.decode().strip()


def _packings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the pack-objects runs of make_workspace."""
    runs: list[int] = []
    real = repos.git

    def counting(repo: Path, *args: str, **kw: object) -> object:
        if "pack-objects" in args:
            runs.append(1)
        return real(repo, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(repos, "git", counting)
    return runs


def _intact(ws: Path, files: dict[str, str]) -> None:
    env = isolated_git_env()
    assert git(ws, "status", "--porcelain", env=env).stdout == b""
    git(ws, "fsck", "--no-dangling", "--strict", env=env)
    for name, text in files.items():
        assert git(ws, "show", f"HEAD:{name}", env=env).stdout.decode() == text


FILES = {"README": "hello\n", "pkg/a.py": "A = 1\n" * 50, "pkg/b.py": "B = 2\n"}


def test_a_later_workspace_of_the_same_tree_copies_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit = _repo(tmp_path / "mirror", FILES)
    runs = _packings(monkeypatch)
    cache = tmp_path / "packs"
    first = make_workspace(tmp_path / "mirror", commit, tmp_path / "w1", pack_cache=cache)
    second = make_workspace(tmp_path / "mirror", commit, tmp_path / "w2", pack_cache=cache)
    assert len(runs) == 1  # the second one packed nothing
    for ws in (first, second):
        _intact(ws, FILES)
    cached = next((cache).iterdir())
    assert cached.stat().st_mode & 0o777 == 0o700 and cache.stat().st_mode & 0o777 == 0o700
    for pack in (second / ".git/objects/pack").iterdir():
        assert pack.stat().st_mode & 0o777 == 0o444
        assert pack.stat().st_ino != (cached / pack.name).stat().st_ino  # a copy, not a link


def test_nothing_done_to_a_workspace_reaches_the_cache(tmp_path: Path) -> None:
    commit = _repo(tmp_path / "mirror", FILES)
    cache = tmp_path / "packs"
    first = make_workspace(tmp_path / "mirror", commit, tmp_path / "w1", pack_cache=cache)
    # A hostile step rewrites the first workspace's pack in place, and changes its owner
    # and mode as the sandbox's preparation does.
    for pack in (first / ".git/objects/pack").iterdir():
        os.chmod(pack, 0o644)
        with open(pack, "r+b") as f:
            f.write(b"\0" * 64)
        os.chown(pack, os.getuid(), os.getgid())
    second = make_workspace(tmp_path / "mirror", commit, tmp_path / "w2", pack_cache=cache)
    _intact(second, FILES)


def test_least_recently_used_packs_go_beyond_the_bound_and_a_lost_entry_is_repacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = _repo(tmp_path / "one", FILES)
    two = _repo(tmp_path / "two", {**FILES, "README": "other\n"})
    cache = tmp_path / "packs"
    make_workspace(tmp_path / "one", one, tmp_path / "w1", pack_cache=cache)
    size = sum(f.stat().st_size for e in cache.iterdir() for f in e.iterdir())
    monkeypatch.setattr(packcache, "PACK_CACHE_BYTES", size)  # room for one entry
    make_workspace(tmp_path / "two", two, tmp_path / "w2", pack_cache=cache)
    tree_two = git(tmp_path / "two", "rev-parse", "HEAD^{tree}").stdout.decode().strip()
    assert [e.name for e in cache.iterdir()] == [tree_two]
    # An entry that lost its files (evicted while being read) is packed afresh, cleanly.
    for f in (cache / tree_two).iterdir():
        if f.name.endswith(".idx"):
            f.unlink()
    runs = _packings(monkeypatch)
    again = make_workspace(tmp_path / "two", two, tmp_path / "w3", pack_cache=cache)
    assert len(runs) == 1
    _intact(again, {**FILES, "README": "other\n"})
