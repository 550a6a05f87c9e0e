"""Pristine checkouts: workspaces in memory whose files are hard links to a kept checkout.

Checking a tree out costs a git process and a write of every file (sympy: about 0.1 s of CPU
with git's parallel checkout, 0.2 s of wall on a loaded machine), and removing it afterwards
about a third of that. A workspace in the memory work directory (workdirs.memory_place) is only
ever seen by the tests through the sandbox's overlay, whose writes land in the run's own tmpfs,
never in the files below it. So the second workspace of a tree is checked out into this
process's pristine directory, once per sandbox uid that will run it (a workspace must be owned
by its sandbox's uid, and a link shares its owner), and every workspace of that tree from then
on is made of links to those files: its directories are its own, its regular files are links,
its `.git` is a copy (git and the patch rollback rewrite the index in place) but for the
objects, which git never writes in place.

Safe because everything the harness does to a workspace replaces a file rather than writing
into it: `git apply` (and --3way) and GNU patch write a new file, safefs.write_beneath and the
rollback of patches.py remove before they create, bytecode.seed creates with O_EXCL,
strip_compiled unlinks. The pristine directory is root's alone (mode 700), never mounted in a
sandbox, and bounded: beyond PRISTINE_BYTES, the least recently used checkout is removed (a
workspace linked from it keeps its files). A tree is kept from its second workspace on
(attempts, base runs, reruns): a run that meets each tree once checks each out as before.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from swebounty import safefs
from swebounty.repos import make_workspace, tree_of
from swebounty.workdirs import PAGE, tree_size

log = logging.getLogger(__name__)

PRISTINE_DIR = ".pristine"  # in the memory work directory, beside the workspaces
# The kept checkouts' files and packs, estimated from the trees' blob sizes, per process. A
# count would thrash: seven tasks in turn through six places miss every time.
PRISTINE_BYTES = 1 << 30
ENABLED = True  # off: every workspace is a checkout of its own (a bench compares the two)
_lock = threading.Lock()  # making, linking from and evicting checkouts
# (memory dir, tree, uid) met once: a tree is kept from its second workspace on, so a run that
# evaluates each tree once pays nothing for keeping (a link and a removal more per tree).
_seen: set[tuple[str, str, int]] = set()
_sizes: dict[str, int] = {}  # kept checkout -> its estimated bytes


def linked_workspace(
    mirror: Path,
    commit: str,
    dest: Path,
    *,
    memory_dir: Path,
    owner: tuple[int, int] | None,
    pack_cache: Path | None = None,
    fill_submodules: Callable[[Path], object] | None = None,
) -> Path:
    """A workspace at `dest` (as make_workspace makes it) whose files are links to this
    process's pristine checkout of `commit`'s tree, given to `owner` (uid, gid) once; made
    on the tree's second use (the first workspace of a tree is a checkout of its own).
    `dest` must be in `memory_dir`: see the module docstring for why only there."""
    tree = tree_of(mirror, commit)
    uid = owner[0] if owner else os.getuid()
    root = memory_dir / PRISTINE_DIR
    entry = root / f"{tree}-{uid}"
    with _lock:
        first = (str(memory_dir), tree, uid) not in _seen
        _seen.add((str(memory_dir), tree, uid))
        if first and not (entry / "workspace").is_dir():
            return make_workspace(
                mirror, commit, dest, pack_cache=pack_cache, fill_submodules=fill_submodules
            )
        if not (entry / "workspace").is_dir():
            root.mkdir(mode=0o700, exist_ok=True)
            size, files = tree_size(mirror, commit)
            need = 2 * size + files * PAGE  # its files, whole pages, and its pack
            _evict(root, PRISTINE_BYTES - need)
            _sizes[str(entry)] = need
            fresh = root / f".new-{uuid.uuid4().hex[:8]}"
            fresh.mkdir(mode=0o700)
            try:
                ws = make_workspace(
                    mirror,
                    commit,
                    fresh / "workspace",
                    pack_cache=pack_cache,
                    fill_submodules=fill_submodules,
                )
                if owner:
                    from swebounty.sandbox.bwrap import chown_tree

                    chown_tree(ws, *owner)
                os.rename(fresh, entry)
            finally:
                safefs.remove_tree(fresh)  # only when the rename did not happen
        os.utime(entry)  # most recently used
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_dir() and not dest.is_symlink() and not any(dest.iterdir()):
            dest.rmdir()  # an empty directory may be given, as to make_workspace
        try:
            link_tree(entry / "workspace", dest)
        except BaseException:
            safefs.remove_tree(dest)
            raise
    return dest


def link_tree(src: Path, dest: Path) -> None:
    """Make `dest` a copy of the checkout `src` whose regular files are links to `src`'s,
    but for `.git` at the top, copied (its objects linked: git never writes them in place).
    Directories keep their modes and owners; links are made again, never followed."""
    _link_dir(src, dest, git_dir=False)


def _link_dir(src: Path, dest: Path, *, git_dir: bool) -> None:
    # The top and .git stay this process's until the sandbox's turn (prepare_workdir): git
    # refuses to work in a repository another user owns. Paths are strings and each entry's
    # type comes from the directory (d_type): Path objects and a stat per file took two thirds
    # of the time of linking pylint's tree (0.072 s per workspace over the seven tasks).
    os.mkdir(dest, stat.S_IMODE(os.lstat(src).st_mode))
    # (source dir, its copy, where: _TREE, _GIT (.git and below, but its objects), _OBJECTS)
    top = str(src)
    top_git = f"{top}/.git"
    stack = [(top, str(dest), _GIT if git_dir else _TREE)]
    while stack:
        here, there, where = stack.pop()
        with os.scandir(here) as entries:
            for entry in entries:
                target = f"{there}/{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    inner = where
                    if where == _TREE and here == top and entry.name == ".git":
                        inner = _GIT
                    elif where == _GIT and here == top_git and entry.name == "objects":
                        inner = _OBJECTS
                    os.mkdir(target, stat.S_IMODE(st.st_mode))
                    if inner == _TREE:
                        os.chown(target, st.st_uid, st.st_gid)
                    stack.append((entry.path, target, inner))
                elif entry.is_symlink():
                    os.symlink(os.readlink(entry.path), target)
                    if where == _TREE:
                        st = entry.stat(follow_symlinks=False)
                        os.chown(target, st.st_uid, st.st_gid, follow_symlinks=False)
                elif entry.is_file(follow_symlinks=False):
                    if where == _GIT:
                        shutil.copyfile(entry.path, target, follow_symlinks=False)
                        os.chmod(target, stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode))
                    else:
                        os.link(entry.path, target, follow_symlinks=False)
                # nothing else is in a checkout


_TREE, _GIT, _OBJECTS = 0, 1, 2  # the checkout's files; .git's own files; .git/objects


def _evict(root: Path, budget: int) -> None:
    """Remove the least recently used checkouts until the rest take at most `budget` bytes,
    and any half-made one."""
    entries = []
    for path in root.iterdir():
        if path.name.startswith(".new-"):
            safefs.remove_tree(path)  # a checkout this process did not finish
        else:
            entries.append((path.stat().st_mtime, path))
    entries.sort()
    total = sum(_sizes.get(str(path), 0) for _, path in entries)
    for _, path in entries:
        if total <= budget:
            break
        total -= _sizes.pop(str(path), 0)
        error = safefs.remove_tree(path)
        if error:
            log.warning("pristine checkout %s not removed: %s", path, error)
