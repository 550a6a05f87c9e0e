"""Git mirrors (one local clone per repo) and history-free workspaces.

A workspace is a fresh git repository whose only commit holds exactly the base commit's tree.
Only that tree's objects are copied (packed straight from the mirror with `git pack-objects`),
so `git log --all`, tags, the reflog, packs, stashes, notes and remotes cannot reveal anything
newer than the base: the objects of later commits are simply not there.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from swebounty import packcache
from swebounty.headtree import raise_if_interrupted

log = logging.getLogger(__name__)

# The workspace commit carries no real identity or date: both would leak the base's context.
WORKSPACE_IDENTITY = ("swebounty", "swebounty@localhost")
WORKSPACE_DATE = "946684800 +0000"  # 2000-01-01T00:00:00Z
WORKSPACE_BRANCH = "main"
WORKSPACE_MESSAGE = "base"
_OBJECT_ID = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")  # sha1 or sha256
_PARALLEL_CHECKOUT = ("-c", "checkout.workers=8", "-c", "checkout.thresholdForParallelism=100")

# Written straight into .git/config: cheaper than one `git config` process per key.
_WORKSPACE_CONFIG = """\
[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tlogallrefupdates = false
\tautocrlf = false
\tsafecrlf = false
\tfsmonitor = false
\thooksPath = /dev/null
[gc]
\tauto = 0
[user]
\tname = {name}
\temail = {email}
"""


class RepoError(Exception):
    """A repository or commit cannot be used; the message says what to do about it."""


# ---------------------------------------------------------------------------- git helpers


def isolated_git_env() -> dict[str, str]:
    """Environment that ignores the user's global/system git config (signing, hooks, crlf).

    Author and committer are the fixed workspace identity and date; override them for
    other reproducible commits.
    """
    env = dict(os.environ)
    for key in list(env):
        # An inherited GIT_DIR/GIT_INDEX_FILE/... would point our commands at another repo.
        if key.startswith("GIT_") and key not in ("GIT_SSH_COMMAND", "GIT_ASKPASS"):
            del env[key]
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_AUTHOR_NAME=WORKSPACE_IDENTITY[0],
        GIT_AUTHOR_EMAIL=WORKSPACE_IDENTITY[1],
        GIT_AUTHOR_DATE=WORKSPACE_DATE,
        GIT_COMMITTER_NAME=WORKSPACE_IDENTITY[0],
        GIT_COMMITTER_EMAIL=WORKSPACE_IDENTITY[1],
        GIT_COMMITTER_DATE=WORKSPACE_DATE,
        LC_ALL="C",
    )
    return env


def _user_env() -> dict[str, str]:
    """Environment for talking to the user's own clones and remotes (their config applies)."""
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    env["GIT_TERMINAL_PROMPT"] = "0"  # never hang on a credentials prompt
    env["LC_ALL"] = "C"
    return env


def git(
    repo: Path,
    *args: str,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git -C repo args...`, capturing output; raise RepoError on failure if `check`."""
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=input,
        capture_output=True,
        env=env if env is not None else _user_env(),
        check=False,
    )
    raise_if_interrupted(proc)
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        words = list(args)
        while words[:1] == ["-c"]:  # name the command, not its config options
            words = words[2:]
        raise RepoError(f"git {' '.join(words[:3])} failed in {repo}: {err}")
    return proc


# ---------------------------------------------------------------------------- mirrors


def _is_git_repo(path: Path) -> bool:
    if (path / ".git").exists():
        return True
    # A bare repository: HEAD plus objects/ and refs/ at the top level.
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


def _mirror_candidates(repo: str, base: Path) -> Iterator[Path]:
    owner_name = repo.replace("/", "__")
    yield base / owner_name
    yield base / f"{owner_name}.git"
    yield base.joinpath(*repo.split("/"))
    yield base.joinpath(*repo.split("/")).with_name(repo.split("/")[-1] + ".git")


def find_mirror(repo: str, repos_dir: Path | None) -> Path | None:
    """A clone of `repo` ("owner/name") in `repos_dir`, named `owner__name[.git]` or `owner/name`."""
    if repos_dir is None:
        return None
    for candidate in _mirror_candidates(repo, Path(repos_dir)):
        if candidate.is_dir() and _is_git_repo(candidate):
            return candidate
    return None


def _missing_commits(mirror: Path, commits: Iterable[str]) -> list[str]:
    """The commits of `commits` that are missing from `mirror`."""
    wanted = [c for c in commits if c]
    if not wanted:
        return []
    query = "".join(f"{c}^{{commit}}\n" for c in wanted).encode()
    out = git(mirror, "cat-file", "--batch-check", input=query).stdout.decode()
    return [
        c for c, line in zip(wanted, out.splitlines(), strict=False) if line.endswith("missing")
    ]


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock; works across processes and across threads (one fd each)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _clone(url: str, target: Path) -> None:
    """Bare, full clone (no --filter: evaluation must never fetch lazily) into `target`."""
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent))
    try:
        proc = subprocess.run(
            ["git", "clone", "--bare", "--quiet", "--", url, str(tmp / "repo.git")],
            capture_output=True,
            env=_user_env(),
            check=False,
        )
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip()
            raise RepoError(f"could not clone {url}: {err}")
        # `clone --bare` sets no fetch refspec; this one lets a later `git fetch` update it.
        git(tmp / "repo.git", "config", "remote.origin.fetch", "+refs/heads/*:refs/heads/*")
        (tmp / "repo.git").rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure_mirror(
    repo: str,
    *,
    repos_dir: Path | None,
    cache_dir: Path,
    url: str | None = None,
    commits: Sequence[str] = (),
) -> Path:
    """The local mirror of `repo`: one in `repos_dir`, else a bare clone cached under `cache_dir`.

    The clone happens once, under a file lock, however many workers ask at the same time.
    If `commits` are given and missing from a cached clone, it is fetched once to get them
    (clones in `repos_dir` belong to the user and are never modified).
    """
    found = find_mirror(repo, repos_dir)
    if found is not None:
        return found
    owner_name = repo.replace("/", "__")
    mirrors = Path(cache_dir) / "mirrors"
    target = mirrors / f"{owner_name}.git"
    source = url or f"https://github.com/{repo}.git"
    with file_lock(mirrors / f"{owner_name}.lock"):
        if not _is_git_repo(target):
            log.info("cloning %s into %s (once; later runs reuse it)", source, target)
            try:
                _clone(source, target)
            except RepoError as exc:
                where = (
                    f"{repos_dir}/{owner_name}" if repos_dir else f"--repos-dir DIR/{owner_name}"
                )
                raise RepoError(
                    f"{exc}. Clone {repo} yourself (git clone {source} {where}) and pass "
                    f"--repos-dir, or give the task a reachable repo_url."
                ) from exc
        missing = _missing_commits(target, commits)
        if missing:
            log.info("fetching %s: %d commit(s) missing from %s", source, len(missing), target)
            git(target, "fetch", "--quiet", "--tags", "origin", check=False)
            for commit in _missing_commits(target, missing):
                # Servers such as GitHub serve any reachable commit by id (e.g. from a PR);
                # a ref keeps it from being garbage-collected later.
                refspec = f"+{commit}:refs/swebounty/fetched/{commit}"
                git(target, "fetch", "--quiet", "origin", refspec, check=False)
    return target


def commit_date(mirror: Path, commit: str) -> datetime:
    """The committer date of `commit`, as an aware UTC datetime. Remembered per mirror and full
    commit id (what the id hashes never changes): asking git took two processes."""
    full = commit if _OBJECT_ID.match(commit) else resolve_commit(mirror, commit)
    return _commit_date(os.path.abspath(mirror), full)


@functools.lru_cache(maxsize=4096)
def _commit_date(mirror: str, full: str) -> datetime:
    full = resolve_commit(Path(mirror), full)  # says how to fetch a commit the mirror lacks
    proc = git(Path(mirror), "show", "-s", "--format=%ct", full, "--")
    return datetime.fromtimestamp(int(proc.stdout.strip()), tz=timezone.utc)


def _missing_commit(mirror: Path, commit: str) -> RepoError:
    return RepoError(
        f"commit {commit} is not in mirror {mirror}: fetch it "
        f"(git -C {mirror} fetch origin {commit}) or update the clone"
    )


# ---------------------------------------------------------------------------- workspaces


def resolve_commit(mirror: Path, commit: str) -> str:
    """The full id of `commit` in `mirror`, or RepoError saying how to get it."""
    if commit.startswith("-") or not commit.strip():
        raise RepoError(f"{commit!r} is not a commit id")
    proc = git(mirror, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", check=False)
    if proc.returncode != 0:
        raise _missing_commit(mirror, commit)
    return proc.stdout.decode().strip()


def make_workspace(
    mirror: Path,
    commit: str,
    dest: Path,
    *,
    pack_cache: Path | None = None,
    fill_submodules: Callable[[Path], object] | None = None,
) -> Path:
    """Create at `dest` a git repo whose only commit has exactly `commit`'s tree, checked out.

    `dest` must not exist or be an empty directory. `fill_submodules` (Sources.fill) fills the
    submodules `.gitmodules` declares, or raises; without it, their directories stay empty. The
    mirror is only read. With `pack_cache` (the harness's own, seen by no sandbox), the pack of
    the tree's objects is copied from an earlier workspace of the tree, or left for a later one.
    """
    mirror, dest = Path(mirror), Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise RepoError(f"workspace {dest} already exists and is not empty; remove it first")
    if commit.startswith("-") or not commit.strip():
        raise RepoError(f"{commit!r} is not a commit id")
    env = isolated_git_env()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        init_bare_minimum(dest)
        tree = _copy_tree_objects(mirror, commit, dest / ".git", env, pack_cache)
        head = _write_commit(dest / ".git", tree)
        (dest / ".git" / "refs" / "heads" / WORKSPACE_BRANCH).write_text(head + "\n")
        git(dest, *_PARALLEL_CHECKOUT, "read-tree", "--reset", "-u", "HEAD", env=env)
        if (dest / ".gitmodules").exists():
            (fill_submodules or _log_submodules)(dest)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest


def init_bare_minimum(dest: Path) -> None:
    """What `git init --template=` makes, written directly: no hooks, no sample files."""
    gitdir = dest / ".git"
    for sub in ("objects/pack", "objects/info", "refs/heads", "refs/tags"):
        (gitdir / sub).mkdir(parents=True)
    (gitdir / "HEAD").write_text(f"ref: refs/heads/{WORKSPACE_BRANCH}\n")
    name, email = WORKSPACE_IDENTITY
    (gitdir / "config").write_text(_WORKSPACE_CONFIG.format(name=name, email=email))


def _copy_tree_objects(
    mirror: Path, commit: str, gitdir: Path, env: dict[str, str], pack_cache: Path | None = None
) -> str:
    """Pack exactly the objects reachable from `commit`'s tree into `gitdir`; return the tree.

    pack-objects runs in the workspace's repository with the mirror's objects as an alternate
    (for this command only: the workspace keeps no link to the mirror), so its temporary pack
    is written, and renamed, inside the workspace: the mirror is never written, and may sit on
    another filesystem. No compression and no delta search (--window=0; the mirror's deltas
    between objects of the tree are still reused): this pack lives for one evaluation, and
    compressing it cost sympy's 2,100 objects 2.3 s of 2.6 (0.3 s without). Even so, sympy's
    pack takes 0.8 s to write (its blobs are deltas against other commits' objects, undone
    here): with `pack_cache`, a copy of an earlier pack of the same tree takes its place.
    """
    full = commit if _OBJECT_ID.match(commit) else resolve_commit(mirror, commit)
    objects, tree = objects_and_tree(os.path.abspath(mirror), full)
    packs = gitdir / "objects" / "pack"
    if pack_cache is not None and packcache.copy_into(pack_cache / tree, packs):
        return tree
    pack_objects(gitdir, objects, git(mirror, "rev-list", "--objects", tree).stdout, env)
    if pack_cache is not None:
        packcache.keep(packs, pack_cache, tree)
    return tree


def pack_objects(gitdir: Path, objects: Path, listing: bytes, env: dict[str, str]) -> None:
    """Pack the objects `listing` names, read through `objects` (the mirror's), into `gitdir`.

    Uncompressed and with no delta search (see `_copy_tree_objects`): the pack is thrown away.
    """
    alternate = {**env, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects)}
    opts = ("-c", "pack.compression=0", "pack-objects", "-q", "--window=0")
    pack = str(gitdir / "objects" / "pack" / "pack")
    git(gitdir.parent, *opts, pack, input=listing, env=alternate)


@functools.lru_cache(maxsize=1024)
def objects_and_tree(mirror: str, commit: str) -> tuple[Path, str]:
    """The mirror's objects and `commit`'s tree (remembered: two git processes a workspace)."""
    proc = git(Path(mirror), "rev-parse", "--git-common-dir", f"{commit}^{{commit}}", check=False)
    lines = proc.stdout.decode().split()
    if proc.returncode != 0 or len(lines) != 2:
        raise _missing_commit(Path(mirror), commit)
    objects = (Path(mirror) / lines[0]).resolve() / "objects"
    tree = git(Path(mirror), "rev-parse", f"{lines[1]}^{{tree}}").stdout.decode().strip()
    if not _OBJECT_ID.match(tree):
        raise RepoError(f"git named the tree of {commit} {tree!r}, which is not an object id")
    return objects, tree


def tree_of(mirror: Path, commit: str) -> str:
    """The id of `commit`'s tree (remembered per mirror and full commit id)."""
    full = commit if _OBJECT_ID.match(commit) else resolve_commit(mirror, commit)
    return objects_and_tree(os.path.abspath(mirror), full)[1]


def _write_commit(gitdir: Path, tree: str) -> str:
    """Write the workspace's one commit (fixed identity, date and message) as a loose object,
    as `git commit-tree` would, without starting git for it; return its id."""
    name, email = WORKSPACE_IDENTITY
    who = f"{name} <{email}> {WORKSPACE_DATE}"
    body = f"tree {tree}\nauthor {who}\ncommitter {who}\n\n{WORKSPACE_MESSAGE}\n".encode()
    data = b"commit %d\0" % len(body) + body
    sha = hashlib.sha1(data, usedforsecurity=False).hexdigest()  # git's object id
    path = gitdir / "objects" / sha[:2] / sha[2:]
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(zlib.compress(data))
    path.chmod(0o444)
    return sha


def _log_submodules(dest: Path) -> None:
    staged = git(dest, "ls-files", "--stage", env=isolated_git_env()).stdout.decode(errors="ignore")
    links = [line.split("\t", 1)[1] for line in staged.splitlines() if line.startswith("160000")]
    if links:
        log.info("workspace %s: submodules not populated: %s", dest, ", ".join(links))
