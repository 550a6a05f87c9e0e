"""Work directories: where a harness process makes its workspaces (and the short-pathed home of
its model sockets), and the sweep of those a dead process left behind.

A harness process (a local run, or a Ray worker) makes one work directory under the cache and
removes it when it ends. A process that is killed cannot remove it, so the name says whose it
is: `PARENT/swebounty-<uid>-<kind><pid>.<host>-<random>`. The next harness of the same user
on the same host removes those whose process is gone; a cache shared by several hosts is safe,
since a host never judges another host's processes. `<host>` also names the pid namespace: a
pid means another process, or none, in another one (a container that shares the cache or the
tmpfs, and the host's name), so a harness there would take a live harness here for dead.

Workspaces in memory: writing, then deleting, a checkout of thousands of files costs 1-4 s on a
busy disk (ext4 with online discard here) and about a quarter of that on a tmpfs. So a process
whose sandbox never writes the host copy of a workspace (`Sandbox.overlays_ephemeral`: bwrap
0.10+ started by root lays an overlay on it, whose writes land in a bounded tmpfs of the run)
also makes a "memory" work directory on a tmpfs (/dev/shm, else $XDG_RUNTIME_DIR), and puts
there each workspace whose tree fits with a wide margin (`memory_place`). Otherwise, and for an
ordinary user, whose sandbox binds the workspace writable (a test could fill the RAM outside
every limit through it), workspaces stay on the cache's disk. $SWEBOUNTY_WORKSPACES chooses:
`auto` (the default), `disk` (never in memory), or a directory to use instead of the tmpfs
(the same safety rule and the same fits check apply to it).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from swebounty import safefs
from swebounty.repos import git, resolve_commit

log = logging.getLogger(__name__)

_NAME = re.compile(r"swebounty-(\d+)-[a-z]*(\d+)\.([0-9a-f]{8})-")

WORKSPACES_ENV = "SWEBOUNTY_WORKSPACES"
MEMORY_DIRS = ("/dev/shm",)  # then $XDG_RUNTIME_DIR
# A workspace goes to memory only if this much of the filesystem stays free after it: other
# workers' workspaces, the sandboxes' own tmpfs areas and the machine need the rest.
RESERVE_SHARE = 0.25
RESERVE_MIN_BYTES = 1 << 30
PAGE = 4096
# In the memory work directory, beside the workspaces' directories (`<instance id>-<hex>`):
# the packs of their trees' objects, for the next workspaces of the same trees (packcache.py).
PACK_CACHE = ".packs"


def work_root(cache_dir: Path) -> Path:
    """Where the work directories of runs on `cache_dir` are made (make_work_dir)."""
    return cache_dir / "work"


def host_tag() -> str:
    """This host and pid namespace, in a work directory's name (a hash: host names may hold
    any character). A namespace that ends and whose number comes back later is no harm: its
    processes are all gone, so what they left is rightly swept."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0  # no /proc: the host alone, as before
    return hashlib.sha256(f"{socket.gethostname()}\0{namespace}".encode()).hexdigest()[:8]


def make_work_dir(cache_dir: Path, kind: str = "run") -> Path:
    """A fresh work directory of this user and this process, for workspaces: under the cache
    (work_root), named `swebounty-<uid>-<kind><pid>.<host>-<random>` (`kind`: lowercase letters).

    Under the cache (CACHE/work), not the temp directory: SWE-bench's tests ran in /testbed
    while their temp files went to /tmp, and some tests depend on the two sharing no top-level
    directory (docutils writes an included file's path relative to the working directory when
    they do, and sphinx then names it ../../../pytest-of-USER/...). The same holds for the
    memory work directory (make_memory_work_dir): /dev/shm and /run/user/UID share no top-level
    directory with /tmp, and a forced directory must not be under /tmp either. 0711 lets a
    sandbox user reach its own workspace inside without listing the others (only the task's
    own paths are mounted into its sandbox anyway).
    """
    parent = work_root(cache_dir)
    parent.mkdir(mode=0o711, parents=True, exist_ok=True)
    work_dir = make_process_dir(parent, kind)
    os.chmod(work_dir, 0o711)
    return work_dir


def memory_roots() -> list[Path]:
    """Where memory work directories may be made, as $SWEBOUNTY_WORKSPACES says: a forced
    directory, or the tmpfs candidates (/dev/shm, $XDG_RUNTIME_DIR) that are fit for it, or
    none (`disk`). Also where the sweep looks for a dead process's leftovers."""
    choice = os.environ.get(WORKSPACES_ENV, "auto").strip() or "auto"
    if choice == "disk":
        return []
    if choice != "auto":
        forced = Path(choice)
        if not forced.is_absolute() or not forced.is_dir():
            raise ValueError(
                f"${WORKSPACES_ENV}={choice!r}: give `auto`, `disk` or an existing absolute "
                "directory"
            )
        if Path(os.path.realpath(forced)).parts[:2] == ("/", "tmp"):  # the tests' TMPDIR
            raise ValueError(
                f"${WORKSPACES_ENV}={choice!r} shares its top-level directory with the temp "
                "directory, which some tests cannot bear (workdirs.make_work_dir): pick another"
            )
        if not _fit_for_work_dirs(Path(os.path.realpath(forced))):
            raise ValueError(
                f"${WORKSPACES_ENV}={choice!r} must be a directory of yours (or root's) that "
                "you can write and others cannot, unless it is sticky like /tmp"
            )
        return [Path(os.path.realpath(forced))]
    candidates = [*MEMORY_DIRS, os.environ.get("XDG_RUNTIME_DIR", "")]
    roots: list[Path] = []
    for name in candidates:
        if not name or not os.path.isabs(name):
            continue
        path = Path(os.path.realpath(name))
        if path not in roots and _fit_for_work_dirs(path) and fs_type(path) == "tmpfs":
            roots.append(path)
    return roots


def _fit_for_work_dirs(path: Path) -> bool:
    """A directory of this user's or root's that others cannot rename entries in unless it is
    sticky (mkdtemp then makes our directory in it atomically: nobody can plant it)."""
    try:
        info = path.stat()
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid not in (0, os.getuid()):
        return False
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def fs_type(path: Path) -> str | None:
    """The type of the filesystem `path` (resolved) is on, from /proc/self/mountinfo: the last
    mount on the longest matching mount point (a later mount hides an earlier one)."""
    best: tuple[int, str] | None = None
    target = str(path)
    for point, kind in _mounts():
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), kind)
    return best[1] if best else None


def _mounts() -> Iterator[tuple[str, str]]:
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return
    for line in text.splitlines():
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) >= 5 and rest:
            # Octal escapes: a space is \040 in a mount point.
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), parts[4])
            yield point, rest.split()[0]


def make_memory_work_dir(kind: str, overlaid: bool) -> Path | None:
    """This process's memory work directory (see the module docstring), or None: the sandbox
    does not overlay workspaces (`overlaid`), $SWEBOUNTY_WORKSPACES is `disk`, or no tmpfs
    fits. Named and swept like make_work_dir's; made in the root with the most free space."""
    roots = memory_roots()
    if not overlaid:
        if roots and os.environ.get(WORKSPACES_ENV, "auto") not in ("", "auto"):
            log.warning(
                "$%s ignored: this sandbox writes workspaces in place (as an ordinary user it "
                "binds them writable), so they stay on the cache's disk",
                WORKSPACES_ENV,
            )
        return None
    if not roots:
        return None
    root = max(roots, key=lambda r: _free(r)[0])
    work_dir = make_process_dir(root, kind)
    os.chmod(work_dir, 0o711)
    return work_dir


def _free(path: Path) -> tuple[int, int, int, int]:
    """(free bytes, total bytes, free inodes, total inodes) of the filesystem of `path`."""
    try:
        st = os.statvfs(path)
    except OSError:
        return 0, 0, 0, 0
    return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize, st.f_favail, st.f_files


def fits(path: Path, tree_bytes: int, tree_files: int) -> bool:
    """Whether a checkout of a tree (`git ls-tree -l` sizes) fits on the filesystem of `path`,
    leaving RESERVE_SHARE of it (at least RESERVE_MIN_BYTES) free: its files rounded up to
    whole pages, plus the pack of its objects (about the same bytes again), plus the
    directories and the files the evaluation adds (a margin of a quarter)."""
    free, total, free_inodes, total_inodes = _free(path)
    need = (tree_bytes + tree_files * PAGE + tree_bytes) * 5 // 4
    reserve = max(RESERVE_MIN_BYTES, int(total * RESERVE_SHARE))
    if free - need < reserve:
        return False
    # A tmpfs without an inode limit reports 0 total inodes.
    return total_inodes == 0 or free_inodes - tree_files * 2 >= total_inodes * RESERVE_SHARE


@functools.lru_cache(maxsize=256)
def tree_size(mirror: Path, commit: str) -> tuple[int, int]:
    """(bytes, files) of `commit`'s tree: the sum of its blobs' sizes, and how many entries
    it has (`git ls-tree -r -l`; cached: every attempt at a task asks)."""
    listing = git(mirror, "ls-tree", "-r", "-l", "-z", f"{resolve_commit(mirror, commit)}^{{tree}}")
    size = files = 0
    for record in listing.stdout.split(b"\0"):
        fields = record.partition(b"\t")[0].split()
        if len(fields) == 4:
            files += 1
            size += int(fields[3]) if fields[3].isdigit() else 0  # "-": a submodule's gitlink
    return size, files


def memory_place(
    memory_dir: Path | None, name: str, tree_bytes: int, tree_files: int
) -> Path | None:
    """A fresh directory `name` in the memory work directory for a workspace whose tree has
    these sizes, or None when there is no memory work directory or the tree does not fit
    (then the workspace goes to the disk)."""
    if memory_dir is None or not fits(memory_dir, tree_bytes, tree_files):
        return None
    place = memory_dir / name
    place.mkdir(mode=0o711)
    return place


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
    """Remove the work directories on `cache_dir`, and the memory work directories
    (memory_roots), that this user's harness processes on this host left when they died
    (killed mid-run); returns how many were removed."""
    removed = sweep_dead_dirs(work_root(cache_dir.expanduser().resolve()))
    try:
        roots = memory_roots()
    except ValueError:
        roots = []  # a bad setting: make_memory_work_dir reports it
    return removed + sum(sweep_dead_dirs(root) for root in roots)


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
