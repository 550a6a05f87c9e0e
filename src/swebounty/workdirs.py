"""Work directories: where a harness process makes its workspaces (and the short-pathed home of
its model sockets), and the sweep of those a dead process left behind.

A harness process (a local run, or a Ray worker) makes one work directory under the cache and
removes it when it ends. A process that is killed cannot remove it, so the name says whose it
is: `PARENT/swebounty-<uid>-<kind><pid>.<host>-<random>`. The next harness of the same user
on the same host removes those whose process is gone; a cache shared by several hosts is safe,
since a host never judges another host's processes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import stat
import tempfile
from pathlib import Path

from swebounty import safefs

log = logging.getLogger(__name__)

_NAME = re.compile(r"swebounty-(\d+)-[a-z]*(\d+)\.([0-9a-f]{8})-")


def work_root(cache_dir: Path) -> Path:
    """Where the work directories of runs on `cache_dir` are made (make_work_dir)."""
    return cache_dir / "work"


def host_tag() -> str:
    """This host, in a work directory's name (a hash: host names may hold any character)."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def make_work_dir(cache_dir: Path, kind: str = "run") -> Path:
    """A fresh work directory of this user and this process, for workspaces: under the cache
    (work_root), named `swebounty-<uid>-<kind><pid>.<host>-<random>` (`kind`: lowercase letters).

    Under the cache (CACHE/work), not the temp directory: SWE-bench's tests ran in /testbed
    while their temp files went to /tmp, and some tests depend on the two sharing no top-level
    directory (docutils writes an included file's path relative to the working directory when
    they do, and sphinx then names it ../../../pytest-of-USER/...). 0711 lets a sandbox user
    reach its own workspace inside without listing the others (only the task's own paths are
    mounted into its sandbox anyway).
    """
    parent = work_root(cache_dir)
    parent.mkdir(mode=0o711, parents=True, exist_ok=True)
    work_dir = make_process_dir(parent, kind)
    os.chmod(work_dir, 0o711)
    return work_dir


def process_dir_prefix(kind: str) -> str:
    """The name of this process's directories of `kind`, up to their random part."""
    if not kind.isalpha() or not kind.islower():
        raise ValueError(f"a work directory's kind is lowercase letters, not {kind!r}")
    return f"swebounty-{os.getuid()}-{kind}{os.getpid()}.{host_tag()}-"


def make_process_dir(parent: Path, kind: str) -> Path:
    """A fresh directory in `parent` (mode 0700, this user's), named for this process so that
    sweep_dead_dirs can remove it if the process dies. Never a fixed name: mkdtemp creates it
    atomically, so nobody can plant it first, even in a world-writable `parent`."""
    return Path(tempfile.mkdtemp(prefix=process_dir_prefix(kind), dir=parent))


def sweep_dead_work_dirs(cache_dir: Path) -> int:
    """Remove the work directories on `cache_dir` that this user's harness processes on this
    host left when they died (killed mid-run); returns how many were removed."""
    return sweep_dead_dirs(work_root(cache_dir.expanduser().resolve()))


def sweep_dead_dirs(parent: Path) -> int:
    """Remove the directories in `parent` (make_process_dir) that this user's processes on this
    host left when they died; returns how many were removed."""
    uid, host, removed = os.getuid(), host_tag(), 0
    for entry in parent.glob(f"swebounty-{uid}-*"):
        m = _NAME.match(entry.name)
        if not m or int(m[1]) != uid or m[3] != host or _alive(int(m[2])):
            continue
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
            continue  # a link or another user's: never followed, never ours to remove
        problem = safefs.remove_tree(entry)
        removed += not problem
        log.info(
            "removed %s, left by dead process %s%s", entry, m[2], f": {problem}" * bool(problem)
        )
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True
