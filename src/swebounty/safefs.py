"""Host-side file access to trees that untrusted code could have written.

A workspace holds whatever a patch or a sandboxed step put there: any file may be a symlink to
a host file, a FIFO that blocks a reader forever, a device, or a tree too deep for recursion.
The harness runs as root, so following one of those is a host compromise. Every function here:
- walks paths one component at a time with `openat(O_NOFOLLOW)` from a directory the harness
  trusts, never resolving a link (a link on the way is an error, or is replaced when writing);
- opens files with O_NOFOLLOW | O_NONBLOCK and reads them only if fstat says regular file, up
  to a size bound;
- removes trees without recursion and without following links (`remove_tree`), however deep.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class UnsafePathError(OSError):
    """A path component is a link or not a directory: the harness will not go through it."""


def _parts(rel: str | os.PathLike[str]) -> list[str]:
    parts = [p for p in str(rel).split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise UnsafePathError(errno.EINVAL, f"not a relative path inside a tree: {rel!r}")
    return parts


@contextlib.contextmanager
def open_dir(root: Path, parts: list[str] | None = None, *, create: bool = False) -> Iterator[int]:
    """A directory fd for `root/parts...`, reached without following any link below `root`.

    With `create`, missing directories are made and anything else in the way (a file, a
    link) is removed first: used to put files back where a submission may have planted links.
    """
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts or []:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                if not create or e.errno not in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                    if e.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise UnsafePathError(
                            e.errno, f"{part!r} in {root} is not a directory"
                        ) from e
                    raise
                if e.errno != errno.ENOENT:
                    os.unlink(part, dir_fd=fd)
                os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def remove_at(dir_fd: int, name: str) -> None:
    """Remove `name` in `dir_fd` whatever it is (a tree is removed without following links)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        _remove_tree_at(dir_fd, name)
    else:
        os.unlink(name, dir_fd=dir_fd)


def write_beneath(root: Path, rel: str, data: bytes, mode: int = 0o644) -> None:
    """Make `root/rel` a regular file holding `data`: whatever was there (a link, a directory,
    a FIFO) is removed first, and links on the way are replaced by directories."""
    parts = _parts(rel)
    with open_dir(root, parts[:-1], create=True) as dfd:
        remove_at(dfd, parts[-1])
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(parts[-1], flags, mode, dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)  # the umask must not decide an executable bit
        finally:
            os.close(fd)


def symlink_beneath(root: Path, rel: str, target: str) -> None:
    """Make `root/rel` a symbolic link to `target` (never followed by the harness)."""
    parts = _parts(rel)
    with open_dir(root, parts[:-1], create=True) as dfd:
        remove_at(dfd, parts[-1])
        os.symlink(target, parts[-1], dir_fd=dfd)


def remove_beneath(root: Path, rel: str, *, prune_empty_parents: bool = False) -> None:
    """Remove `root/rel` whatever it is; a link on the way means there is nothing to remove
    (the path does not exist as a real path under `root`)."""
    parts = _parts(rel)
    try:
        with open_dir(root, parts[:-1]) as dfd:
            remove_at(dfd, parts[-1])
    except (FileNotFoundError, UnsafePathError):
        return
    if prune_empty_parents:
        for depth in range(len(parts) - 1, 0, -1):
            try:
                with open_dir(root, parts[: depth - 1]) as dfd:
                    os.rmdir(parts[depth - 1], dir_fd=dfd)
            except OSError:
                break


def exists_beneath(root: Path, rel: str) -> bool:
    """Whether `root/rel` exists (as anything, a link included) without a link on the way."""
    parts = _parts(rel)
    try:
        with open_dir(root, parts[:-1]) as dfd:
            os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return False
    return True


def regular_beneath(root: Path, rel: str) -> bool:
    """Whether `root/rel` is a regular file reached without a link (itself or on the way)."""
    try:
        parts = _parts(rel)
        with open_dir(root, parts[:-1]) as dfd:
            info = os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode)


def open_beneath(root: Path, rel: str) -> int:
    """A read-only descriptor of `root/rel` (whatever it is but a link: check it with fstat),
    reached without following any link below `root`; OSError when it cannot be (ELOOP or
    UnsafePathError: a link on the way)."""
    parts = _parts(rel)
    with open_dir(root, parts[:-1]) as dfd:
        return os.open(parts[-1], _READ_FLAGS, dir_fd=dfd)


def read_beneath(root: Path, rel: str, max_bytes: int) -> bytes | None:
    """The bytes of the regular file `root/rel`, or None when it is missing, not a regular
    file, reached through a link, or larger than `max_bytes`."""
    _parts(rel)  # not a relative path inside the tree: the caller's error, raised
    try:
        fd = open_beneath(root, rel)
    except OSError:
        return None
    try:
        return read_fd(fd, max_bytes)
    finally:
        os.close(fd)


def read_regular(path: Path, max_bytes: int) -> bytes | None:
    """`read_beneath` for a path whose parent the harness owns (only the last component may
    have been planted)."""
    return read_beneath(path.parent, path.name, max_bytes)


def read_fd(fd: int, max_bytes: int) -> bytes | None:
    """The bytes of the open regular file `fd`, or None when it is not one or is larger than
    `max_bytes`."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        return None
    chunks, total = [], 0
    while True:
        chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:  # grew while being read
            return None
    return b"".join(chunks)


def walk_files(
    root: Path, *, skip_dirs: frozenset[str] = frozenset(), max_entries: int = 1_000_000
) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every non-directory entry under `root`, links not followed.

    Iterative (any depth); stops with UnsafePathError after `max_entries` entries, so a tree
    of millions of files cannot keep the harness busy.
    """
    for rel, fd, entries in walk_dirs(root, skip_dirs=skip_dirs, max_entries=max_entries):
        for name, is_dir in entries:
            if not is_dir:
                path = f"{rel}/{name}" if rel else name
                yield path, os.stat(name, dir_fd=fd, follow_symlinks=False)


def walk_paths(
    root: Path, *, skip_dirs: frozenset[str] = frozenset(), max_entries: int = 1_000_000
) -> Iterator[str]:
    """`walk_files` without the lstat of each entry (a third of the time on pylint's tree)."""
    for rel, _, entries in walk_dirs(root, skip_dirs=skip_dirs, max_entries=max_entries):
        for name, is_dir in entries:
            if not is_dir:
                yield f"{rel}/{name}" if rel else name


# A walk keeps one directory descriptor per level open down to this depth (each directory is
# then opened from its parent's descriptor); deeper ones are reached from `root` again.
_HELD_DEPTH = 64


def walk_dirs(
    root: Path, *, skip_dirs: frozenset[str] = frozenset(), max_entries: int | None = 1_000_000
) -> Iterator[tuple[str, int, list[tuple[str, bool]]]]:
    """(relative path, descriptor, [(name, is a directory)]) of `root` and of every directory
    under it but `skip_dirs`, parents first, links not followed; the descriptor is valid until
    the next item. Each directory is opened from its parent's descriptor and each entry's type
    comes from the directory itself: no path is resolved twice, no entry is stat'ed. Stops with
    UnsafePathError after `max_entries` entries (None: no bound)."""
    seen = 0

    def listing(fd: int) -> list[tuple[str, bool]]:
        nonlocal seen
        with os.scandir(fd) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        seen += len(entries)
        if max_entries is not None and seen > max_entries:
            raise UnsafePathError(errno.EFBIG, f"more than {max_entries} entries in {root}")
        return entries

    top = os.open(root, _DIR_FLAGS)
    frames: list[tuple[str, int, list[str]]] = [("", top, [])]  # (path, fd or -1, subdirs left)
    try:
        entries = listing(top)
        yield "", top, entries
        frames[0] = ("", top, [n for n, d in entries if d and n not in skip_dirs])
        while frames:
            rel, fd, subdirs = frames[-1]
            if not subdirs:
                frames.pop()
                if fd >= 0:
                    os.close(fd)
                continue
            name = subdirs.pop()
            path = f"{rel}/{name}" if rel else name
            try:
                if fd >= 0 and len(frames) < _HELD_DEPTH:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    frames.append((path, child, []))
                    entries = listing(child)
                    yield path, child, entries
                else:
                    frames.append((path, -1, []))
                    with open_dir(root, path.split("/")) as deep:
                        entries = listing(deep)
                        yield path, deep, entries
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    continue  # gone, or replaced by a link or a file meanwhile: not followed
                raise
            frames[-1] = (path, frames[-1][1], [n for n, d in entries if d and n not in skip_dirs])
    finally:
        for _, fd, _ in frames:
            if fd >= 0:
                os.close(fd)


def remove_tree(path: Path) -> str | None:
    """Remove the tree at `path` without recursion and without following links.

    Never raises: returns None when it is gone, else what stopped it (for a log line; the
    caller's verdict must not depend on cleanup).
    """
    path = Path(os.path.abspath(path))
    try:
        parent = os.open(path.parent, _DIR_FLAGS)
    except OSError as e:
        return f"cannot open {path.parent}: {e}"
    try:
        remove_at(parent, path.name)
    except OSError as e:
        return f"cannot remove {path}: {e}"
    finally:
        os.close(parent)
    return None


def _remove_tree_at(parent_fd: int, name: str) -> None:
    """Empty and remove directory `name`, depth first, holding one descriptor per level down to
    _HELD_DEPTH; a directory deeper than that is removed by _flatten_tree_at. Neither the stack
    nor the number of open fds grows with the depth, and no entry is renamed or stat'ed above
    that depth (moving every entry up took half the time of removing pylint's workspace)."""
    frames = [(name, *_open_emptied(parent_fd, name))]  # (name, fd, subdirectories left)
    try:
        while frames:
            dname, fd, subdirs = frames[-1]
            if not subdirs:
                frames.pop()
                os.close(fd)
                os.rmdir(dname, dir_fd=frames[-1][1] if frames else parent_fd)
            elif len(frames) >= _HELD_DEPTH:
                _flatten_tree_at(fd, subdirs.pop())
            else:
                sub = subdirs.pop()
                try:
                    frames.append((sub, *_open_emptied(fd, sub)))
                except PermissionError:  # as an ordinary user: an unreadable directory
                    os.rmdir(sub, dir_fd=fd)  # goes if empty (it cannot be emptied anyway)
    finally:
        for _, fd, _ in frames:
            os.close(fd)


def _open_emptied(parent_fd: int, name: str) -> tuple[int, list[str]]:
    """Open directory `name` (never through a link), unlink everything in it that is not a
    directory; its descriptor and its subdirectories."""
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o700)  # a directory its owner made unwritable
        subdirs = _unlink_files(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd, subdirs


def _unlink_files(fd: int) -> list[str]:
    """Unlink every entry of the open directory `fd` that is not a directory (links included,
    never followed); the names of its subdirectories."""
    subdirs = []
    with os.scandir(fd) as it:
        for entry in it:
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=fd)
    return subdirs


def _flatten_tree_at(parent_fd: int, name: str) -> None:
    """Empty and remove directory `name`: nested directories are moved up into it and emptied
    in turn, so neither the stack nor the number of open fds grows with the depth."""
    top = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    try:
        with contextlib.suppress(OSError):
            os.fchmod(top, 0o700)  # a directory its owner made unwritable
        counter = 0
        while True:
            subdirs = _unlink_files(top)
            if not subdirs:
                break
            for sub in subdirs:
                try:
                    os.rmdir(sub, dir_fd=top)
                    continue
                except OSError as e:
                    if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise
                sfd = os.open(sub, _DIR_FLAGS, dir_fd=top)
                try:
                    with contextlib.suppress(OSError):
                        os.fchmod(sfd, 0o700)
                    with os.scandir(sfd) as it:
                        names = [entry.name for entry in it]
                    for child in names:
                        counter = _move_up(sfd, child, top, counter)
                finally:
                    os.close(sfd)
                os.rmdir(sub, dir_fd=top)
    finally:
        os.close(top)
    os.rmdir(name, dir_fd=parent_fd)


def _move_up(src_fd: int, name: str, dst_fd: int, counter: int) -> int:
    """Move `name` into `dst_fd` under a fresh name; returns the counter used."""
    while True:
        counter += 1
        new = f".swebounty-rm-{counter}"
        try:
            os.stat(new, dir_fd=dst_fd, follow_symlinks=False)
            continue  # taken (the submission may have made such names)
        except FileNotFoundError:
            pass
        os.rename(name, new, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return counter
