from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from repo_helpers import git_env
from swebounty import repos
from swebounty.repos import (
    RepoError,
    commit_date,
    ensure_mirror,
    find_mirror,
    make_workspace,
)


def run(repo: Path, *args: str, date: str = "2023-05-01T12:00:00+02:00") -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        env=git_env(date),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def commit_files(repo: Path, files: dict[str, str], message: str, date: str) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    run(repo, "add", "-A")
    run(repo, "commit", "-q", "-m", message, date=date)
    return run(repo, "rev-parse", "HEAD")


@pytest.fixture
def origin(tmp_path: Path) -> dict[str, object]:
    """A repo with a base commit, later commits, a tag, a branch, a stash and a note."""
    repo = tmp_path / "origin"
    repo.mkdir()
    run(repo, "init", "-q", "-b", "main")
    commit_files(
        repo, {"README": "hello\n", "pkg/a.py": "A = 1\n"}, "first", "2023-01-01T00:00:00Z"
    )
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "link").symlink_to("README")
    base = commit_files(repo, {"pkg/b.py": "B = 2\n"}, "base", "2023-02-03T04:05:06+01:00")
    later = commit_files(
        repo, {"pkg/a.py": "A = 'the future fix'\n"}, "fix", "2023-03-01T00:00:00Z"
    )
    run(repo, "tag", "-a", "v1.0", "-m", "release", later)
    run(repo, "branch", "feature", later)
    run(repo, "notes", "add", "-m", "a note from the future", later)
    (repo / "README").write_text("stashed future\n")
    run(repo, "stash", "-q")
    return {"repo": repo, "base": base, "later": later}


def test_find_mirror_names(tmp_path: Path) -> None:
    assert find_mirror("o/n", None) is None
    assert find_mirror("o/n", tmp_path) is None
    (tmp_path / "o__n").mkdir()  # a folder that is not a git repo is not a mirror
    assert find_mirror("o/n", tmp_path) is None
    run(tmp_path, "init", "-q", "o__n")
    assert find_mirror("o/n", tmp_path) == tmp_path / "o__n"

    nested = tmp_path / "nested"
    (nested / "o").mkdir(parents=True)
    run(nested / "o", "init", "-q", "n")
    assert find_mirror("o/n", nested) == nested / "o" / "n"

    bare = tmp_path / "bare"
    bare.mkdir()
    run(bare, "init", "-q", "--bare", "o__n.git")
    assert find_mirror("o/n", bare) == bare / "o__n.git"


def test_ensure_mirror_prefers_repos_dir(origin: dict[str, object], tmp_path: Path) -> None:
    repos_dir = tmp_path / "repos"
    repos_dir.mkdir()
    run(repos_dir, "clone", "-q", str(origin["repo"]), "o__n")
    got = ensure_mirror("o/n", repos_dir=repos_dir, cache_dir=tmp_path / "cache")
    assert got == repos_dir / "o__n"
    assert not (tmp_path / "cache" / "mirrors").exists()


def test_ensure_mirror_clones_once_under_concurrency(
    origin: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []
    real_clone = repos._clone

    def counting_clone(url: str, target: Path) -> None:
        calls.append(target)
        real_clone(url, target)

    monkeypatch.setattr(repos, "_clone", counting_clone)
    barrier = threading.Barrier(4)
    results: list[Path] = []
    errors: list[BaseException] = []

    def worker() -> None:
        barrier.wait()
        try:
            results.append(
                ensure_mirror(
                    "o/n", repos_dir=None, cache_dir=tmp_path / "cache", url=str(origin["repo"])
                )
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    target = tmp_path / "cache" / "mirrors" / "o__n.git"
    assert results == [target] * 4
    assert calls == [target]
    assert run(target, "rev-parse", "--is-bare-repository") == "true"
    assert run(target, "rev-parse", "main") == origin["later"]
    # Reused afterwards, and no temporary clone directories left behind.
    ensure_mirror("o/n", repos_dir=None, cache_dir=tmp_path / "cache", url=str(origin["repo"]))
    assert len(calls) == 1
    assert sorted(p.name for p in target.parent.iterdir()) == ["o__n.git", "o__n.lock"]


def test_ensure_mirror_fetches_missing_commits(origin: dict[str, object], tmp_path: Path) -> None:
    url = str(origin["repo"])
    mirror = ensure_mirror("o/n", repos_dir=None, cache_dir=tmp_path, url=url)
    newer = commit_files(origin["repo"], {"new.txt": "x\n"}, "newer", "2023-04-01T00:00:00Z")  # type: ignore[arg-type]
    with pytest.raises(RepoError, match="fetch"):
        commit_date(mirror, newer)
    again = ensure_mirror("o/n", repos_dir=None, cache_dir=tmp_path, url=url, commits=[newer])
    assert again == mirror
    assert commit_date(mirror, newer) == datetime(2023, 4, 1, tzinfo=timezone.utc)


def test_ensure_mirror_fetches_commit_only_on_a_pull_ref(
    origin: dict[str, object], tmp_path: Path
) -> None:
    repo, url = origin["repo"], str(origin["repo"])
    assert isinstance(repo, Path)
    mirror = ensure_mirror("o/n", repos_dir=None, cache_dir=tmp_path, url=url)
    run(repo, "checkout", "-q", "-b", "pr", str(origin["base"]))
    pr = commit_files(repo, {"pr.txt": "x\n"}, "pr", "2023-04-02T00:00:00Z")
    run(repo, "update-ref", "refs/pull/1/head", pr)
    run(repo, "checkout", "-q", "main")
    run(repo, "branch", "-D", "pr")
    ensure_mirror("o/n", repos_dir=None, cache_dir=tmp_path, url=url, commits=[pr])
    assert run(mirror, "rev-parse", f"refs/swebounty/fetched/{pr}") == pr


def test_ensure_mirror_clone_failure_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(RepoError, match="--repos-dir") as info:
        ensure_mirror(
            "o/missing", repos_dir=None, cache_dir=tmp_path, url=str(tmp_path / "nowhere")
        )
    assert "could not clone" in str(info.value)
    assert not (tmp_path / "mirrors" / "o__missing.git").exists()


def test_commit_date_is_utc(origin: dict[str, object]) -> None:
    got = commit_date(origin["repo"], origin["base"])  # type: ignore[arg-type]
    assert got == datetime(2023, 2, 3, 3, 5, 6, tzinfo=timezone.utc)
    assert got.utcoffset() is not None and got.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


def test_commit_date_is_remembered_per_commit(
    origin: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base, later = origin["repo"], str(origin["base"]), str(origin["later"])
    assert isinstance(repo, Path)
    calls: list[tuple[str, ...]] = []
    real = repos.git

    def counting(where: Path, *args: str, **kw: object) -> object:
        calls.append(args)
        return real(where, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(repos, "git", counting)
    dates = {base: datetime(2023, 2, 3, 3, 5, 6, tzinfo=timezone.utc)}
    dates[later] = datetime(2023, 3, 1, tzinfo=timezone.utc)
    for _ in range(2):
        for commit, date in dates.items():
            assert commit_date(repo, commit) == date
    asked = len(calls)
    assert asked <= 4  # the first time only, two processes a commit
    for commit, date in dates.items():
        assert commit_date(repo, commit) == date
        assert commit_date(repo, commit.upper()) == date  # not a full id: resolved
    assert len(calls) == asked + 2  # only to resolve the two spellings that are not ids
    # A full id the mirror lacks still says how to get it, each time it is asked.
    missing = "0" * 40
    for _ in range(2):
        with pytest.raises(RepoError, match="fetch"):
            commit_date(repo, missing)


def test_a_commits_tree_is_looked_up_once(
    origin: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base, later = origin["repo"], str(origin["base"]), str(origin["later"])
    assert isinstance(repo, Path)
    calls: list[tuple[str, ...]] = []
    real = repos.git

    def counting(where: Path, *args: str, **kw: object) -> object:
        calls.append(args)
        return real(where, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(repos, "git", counting)
    for i, commit in enumerate([base, later, base, later, base[:12]]):
        ws = make_workspace(repo, commit, tmp_path / f"ws{i}")
        want = run(repo, "rev-parse", f"{commit}^{{tree}}")
        assert run(ws, "rev-parse", "HEAD^{tree}") == want
        text = "A = 'the future fix'\n" if commit == later else "A = 1\n"
        assert (ws / "pkg" / "a.py").read_text() == text
        looked_up = [c for c in calls if "rev-parse" in c]
        assert len(looked_up) == (2 * min(i + 1, 2) + (i == 4))  # a short id: resolved first
    with pytest.raises(RepoError, match="fetch"):
        make_workspace(repo, "0" * 40, tmp_path / "missing")


def _all_objects(repo: Path) -> set[str]:
    out = run(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return set(out.split())


def test_workspace_has_no_history(origin: dict[str, object], tmp_path: Path) -> None:
    mirror, base = origin["repo"], str(origin["base"])
    assert isinstance(mirror, Path)
    ws = make_workspace(mirror, base, tmp_path / "ws")

    log = run(ws, "log", "--all", "--format=%H %an <%ae> %ad %cd %s", "--date=unix")
    assert len(log.splitlines()) == 1
    head = run(ws, "rev-parse", "HEAD")
    assert log == f"{head} swebounty <swebounty@localhost> 946684800 946684800 base"
    assert run(ws, "rev-parse", "HEAD^{tree}") == run(mirror, "rev-parse", f"{base}^{{tree}}")
    for cmd in (
        ("tag",),
        ("reflog", "--all"),
        ("stash", "list"),
        ("notes", "list"),
        ("remote",),
        ("for-each-ref", "--format=%(refname)"),
    ):
        out = run(ws, *cmd)
        assert out in ("", "refs/heads/main"), (cmd, out)

    listing = run(mirror, "rev-list", "--objects", f"{base}^{{tree}}")
    tree_objects = {line.split()[0] for line in listing.splitlines()}
    assert _all_objects(ws) == tree_objects | {head}
    future_blob = run(mirror, "rev-parse", f"{origin['later']}:pkg/a.py")
    assert future_blob not in _all_objects(ws)

    assert (ws / "pkg" / "a.py").read_text() == "A = 1\n"
    assert (ws / "pkg" / "b.py").read_text() == "B = 2\n"
    assert os.access(ws / "run.sh", os.X_OK)
    assert (ws / "link").is_symlink() and os.readlink(ws / "link") == "README"
    assert run(ws, "status", "--porcelain") == ""
    assert run(ws, "config", "core.autocrlf") == "false"
    assert not (ws / ".git" / "hooks").exists()


def test_pack_objects_copies_exactly_the_listed_objects(
    origin: dict[str, object], tmp_path: Path
) -> None:
    """The one packer behind workspaces and submodule checkouts: what it is told, no link back."""
    mirror, base = origin["repo"], str(origin["base"])
    assert isinstance(mirror, Path)
    listing = run(mirror, "rev-list", "--objects", f"{base}^{{tree}}")
    dest = tmp_path / "dest"
    repos.init_bare_minimum(dest)
    objects = mirror / ".git" / "objects"
    repos.pack_objects(dest / ".git", objects, f"{listing}\n".encode(), repos.isolated_git_env())
    assert _all_objects(dest) == {line.split()[0] for line in listing.splitlines()}
    assert not (dest / ".git" / "objects" / "info" / "alternates").exists()


def test_workspace_is_deterministic(origin: dict[str, object], tmp_path: Path) -> None:
    mirror, base = origin["repo"], str(origin["base"])
    assert isinstance(mirror, Path)
    one = make_workspace(mirror, base, tmp_path / "one")
    two = make_workspace(mirror, base[:10], tmp_path / "two")
    assert run(one, "rev-parse", "HEAD") == run(two, "rev-parse", "HEAD")


def test_workspace_leaves_the_mirror_alone(origin: dict[str, object], tmp_path: Path) -> None:
    """The mirror is only read: nothing is written in it, even for a moment, so it may be
    read-only or on another filesystem than the workspace (a tmpfs /tmp, /dev/shm)."""
    mirror, base = origin["repo"], str(origin["base"])
    assert isinstance(mirror, Path)
    written: list[str] = []
    for _ in range(2):
        before = {p: p.stat().st_mtime_ns for p in (mirror / ".git").rglob("*")}
        ws = make_workspace(mirror, base, tmp_path / f"ws{len(written)}")
        after = {p: p.stat().st_mtime_ns for p in (mirror / ".git").rglob("*")}
        written.append(str(sorted(set(after.items()) ^ set(before.items()))))
        assert not (ws / ".git" / "objects" / "info" / "alternates").exists()
    # Git's own bookkeeping aside (none is expected), no pack or temporary file appeared.
    assert written == ["[]", "[]"]
    assert not list((mirror / ".git" / "objects" / "pack").glob("tmp_*"))

    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        pytest.skip("no /dev/shm to put a workspace on another filesystem")
    if shm.stat().st_dev == mirror.stat().st_dev:
        pytest.skip("/dev/shm is on the mirror's filesystem here")
    dest = Path(tempfile.mkdtemp(dir=shm)) / "ws"
    try:
        ws = make_workspace(mirror, base, dest)
        assert (ws / "pkg" / "b.py").read_text() == "B = 2\n"
        assert run(ws, "status", "--porcelain") == ""
    finally:
        shutil.rmtree(dest.parent)


def test_workspace_from_bare_mirror(origin: dict[str, object], tmp_path: Path) -> None:
    mirror = ensure_mirror("o/n", repos_dir=None, cache_dir=tmp_path, url=str(origin["repo"]))
    ws = make_workspace(mirror, str(origin["later"]), tmp_path / "ws")
    assert (ws / "pkg" / "a.py").read_text() == "A = 'the future fix'\n"
    assert len(run(ws, "log", "--all", "--format=%H").splitlines()) == 1


def test_workspace_missing_commit(origin: dict[str, object], tmp_path: Path) -> None:
    mirror = origin["repo"]
    assert isinstance(mirror, Path)
    with pytest.raises(RepoError, match=r"commit 0{40} is not in mirror .*fetch it"):
        make_workspace(mirror, "0" * 40, tmp_path / "ws")
    assert not (tmp_path / "ws").exists()
    with pytest.raises(RepoError, match="not a commit id"):
        make_workspace(mirror, "--all", tmp_path / "ws")


def test_workspace_refuses_non_empty_dest(origin: dict[str, object], tmp_path: Path) -> None:
    dest = tmp_path / "ws"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    with pytest.raises(RepoError, match="not empty"):
        make_workspace(origin["repo"], str(origin["base"]), dest)  # type: ignore[arg-type]
    assert (dest / "keep.txt").read_text() == "mine"


def test_workspace_with_submodule(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = tmp_path / "super"
    repo.mkdir()
    run(repo, "init", "-q", "-b", "main")
    (repo / ".gitmodules").write_text('[submodule "vendor/lib"]\n\tpath = vendor/lib\n\turl = x\n')
    (repo / "main.py").write_text("print(1)\n")
    run(repo, "add", "main.py", ".gitmodules")
    # A gitlink to a commit of another repository, as `git submodule add` would record.
    run(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendor/lib")
    run(repo, "commit", "-q", "-m", "with submodule")
    commit = run(repo, "rev-parse", "HEAD")
    assert "160000" in run(repo, "ls-tree", "-r", commit)
    with caplog.at_level(logging.INFO, logger="swebounty.repos"):
        ws = make_workspace(repo, commit, tmp_path / "ws")
    assert "vendor/lib" in caplog.text
    assert (ws / "main.py").read_text() == "print(1)\n"
    assert run(ws, "rev-parse", "HEAD^{tree}") == run(repo, "rev-parse", f"{commit}^{{tree}}")
    assert "1" * 40 not in _all_objects(ws)
    assert (ws / "vendor" / "lib").is_dir() and not any((ws / "vendor" / "lib").iterdir())
    assert run(ws, "status", "--porcelain") == ""
