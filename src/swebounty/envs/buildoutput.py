"""Reading what a build left: the files the repository's own build code wrote.

An environment build runs the task repository's setup.py, build backend and conftest (hostile
by principle 9). What they leave in the build copy and the throw-away layer (extensions,
generated version files, metadata, .pth files) is copied into the shared cache and from there
into every task's workspace and layer. A link there would carry a host file along: a "built
extension" `_fast.so -> /root/.ssh/id_rsa` copied with `read_bytes()` put the key in the
natives cache and in each workspace. So what a build left is read here only as regular files,
never through a link (itself or on the way), within a size bound (safefs).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from swebounty import safefs

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 512 << 20  # a large compiled extension (scipy's) is far below
MAX_ENTRIES = 500_000


def read_file(root: Path, rel: str) -> tuple[bytes, int] | None:
    """(bytes, permission bits) of the regular file `root/rel`; None when it is anything else
    (a link, a FIFO, a device), is reached through a link, or is too large."""
    try:
        fd = safefs.open_beneath(root, rel)
    except (OSError, ValueError):
        return None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return None
        data = safefs.read_fd(fd, MAX_FILE_BYTES)  # the file just checked, not reopened
    finally:
        os.close(fd)
    return None if data is None else (data, mode & 0o755)


def copy_file(root: Path, rel: str, dest: Path) -> bool:
    """Copy the regular file `root/rel` to `dest` (a path the harness owns); False, with a
    warning, when it is not one (nothing is written then)."""
    found = read_file(root, rel)
    if found is None:
        log.warning("the build left %s that is not a regular file: not kept", root / rel)
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.unlink(missing_ok=True)
    dest.write_bytes(found[0])
    dest.chmod(found[1] | 0o600)
    return True


def copy_tree(src: Path, dest: Path, skip: frozenset[str] = frozenset()) -> list[str]:
    """Copy the regular files under `src` (a directory the build made: its metadata) to
    `dest`, names in `skip` left out; links and special files are not copied. Returns what
    was copied, relative."""
    copied: list[str] = []
    if not stat.S_ISDIR(os.lstat(src).st_mode):
        return copied
    dest.mkdir(parents=True, exist_ok=True)
    for rel, info in safefs.walk_files(src, max_entries=MAX_ENTRIES):
        if rel.rsplit("/", 1)[-1] in skip:
            continue
        if not stat.S_ISREG(info.st_mode):
            log.warning("the build left %s that is not a regular file: not kept", src / rel)
            continue
        if copy_file(src, rel, dest / rel):
            copied.append(rel)
    return copied


def read_text(path: Path, max_bytes: int = 16 << 20) -> str | None:
    """The text of the regular file `path` (its parent is the harness's; the file itself may
    have been planted), or None."""
    data = safefs.read_regular(path, max_bytes)
    return None if data is None else data.decode("utf-8", errors="replace")


def regular_files(root: Path, suffixes: tuple[str, ...]) -> list[str]:
    """Regular files under `root` (not .git's) whose names end with one of `suffixes`,
    relative, links not followed."""
    walk = safefs.walk_files(root, skip_dirs=frozenset({".git"}), max_entries=MAX_ENTRIES)
    return sorted(
        rel for rel, info in walk if rel.endswith(suffixes) and stat.S_ISREG(info.st_mode)
    )
