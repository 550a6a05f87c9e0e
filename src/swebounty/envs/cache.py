"""The on-disk layout of the environment cache, its locks and its housekeeping.

    CACHE/envs/<env_key>/        a shared environment: venv/, lock.txt (what was installed),
                                 freeze.txt (uv pip freeze after), build.log, ready.json last
    CACHE/specs/<spec_key>/      one inferred spec: record.json (-> env_key, interpreter, how
                                 the project installs), meta/ (its captured metadata),
                                 build.log, failed.json when the build failed
    CACHE/locks/<key>.lock       flock files: one builder per spec and per environment
    CACHE/sdists/                old .tar.bz2/.tgz sdists repacked as .tar.gz (sdists.py)

A build that uses sources the user provides (`sources`, sources.py: FreeType for matplotlib)
has them in its spec's and its extensions' keys.

An env_key hashes the interpreter and the lock, so specs that resolve to the same packages share
one environment. `ready.json` is written last: a directory without it is a build that died and
is removed by the next builder (which holds the lock) or by prune.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from swebounty.envs.sources import Sources

log = logging.getLogger(__name__)

SCHEMA = 1  # bump when the layout or the build recipe changes: old keys then miss
READY = "ready.json"
FAILED = "failed.json"
# A failed build is not retried for this long (every task of a repo era would otherwise redo a
# minutes-long build that fails the same way); network failures are never remembered.
FAILURE_TTL = timedelta(hours=12)

_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


def digest(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class CacheLayout:
    def __init__(self, root: Path, sources: Sources | None = None) -> None:
        self.root = root
        self.sources = sources  # the folder of sources builds would download, if any
        for sub in ("envs", "specs", "locks"):
            (root / sub).mkdir(parents=True, exist_ok=True)

    def provided(self, project: Path) -> dict[str, str]:
        """The sources folder's sources that `project`'s build would download (name ->
        digest). {} without a folder, or when it holds none of them."""
        return self.sources.for_project(project) if self.sources is not None else {}

    def key_part(self, project: Path) -> dict[str, Any]:
        """What a key of `project`'s build adds for the sources provided to it: nothing when
        there are none, so that every other build keeps the key it had."""
        provided = self.provided(project)
        return {"sources": provided} if provided else {}

    def env_dir(self, env_key: str) -> Path:
        return self.root / "envs" / env_key

    def spec_dir(self, spec_key: str) -> Path:
        return self.root / "specs" / spec_key

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """Exclusive across processes (flock) and threads (flock on one open file description
        does not exclude another thread of the same process using it, so each holder opens its
        own, plus a thread lock for clarity)."""
        with _thread_locks_guard:
            tlock = _thread_locks.setdefault(f"{self.root}/{name}", threading.Lock())
        with tlock:
            path = self.root / "locks" / f"{name}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    @contextlib.contextmanager
    def try_lock(self, name: str) -> Iterator[bool]:
        """Like lock, without waiting: yields False when someone else holds it."""
        path = self.root / "locks" / f"{name}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic: readers never see half a file (they may run in other processes)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)


def recent_failure(spec_dir: Path) -> dict[str, Any] | None:
    data = read_json(spec_dir / FAILED)
    if not data:
        return None
    try:
        when = datetime.fromisoformat(str(data.get("at")))
    except ValueError:
        return None
    return data if datetime.now(timezone.utc) - when < FAILURE_TTL else None


def dir_size(path: Path) -> int:
    """Bytes on disk under `path`, each inode once: what a copy of the directory would take."""
    return dir_sizes(path)[0]


def dir_sizes(*paths: Path) -> tuple[int, int]:
    """(bytes under `paths`, bytes held by them alone), each inode once. uv hard-links
    installed files from its cache, so the second (files with no other link: bytecode,
    metadata, scripts) is what environments add to the disk while uv's cache is kept."""
    seen: set[tuple[int, int]] = set()
    total = own = 0
    for path in paths:
        for dirpath, _dirs, files in os.walk(path):
            for name in files:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                key = (st.st_dev, st.st_ino)
                if key in seen:
                    continue
                seen.add(key)
                total += st.st_blocks * 512
                own += st.st_blocks * 512 if st.st_nlink == 1 else 0
    return total, own


def remove_tree(path: Path) -> int:
    size = dir_size(path) if path.exists() else 0
    shutil.rmtree(path, ignore_errors=True)
    return size
