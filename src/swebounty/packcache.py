"""The pack cache: the pack of a tree's objects, kept for the next workspace of that tree.

A workspace's objects are packed from the mirror for each evaluation (repos.make_workspace);
for a large tree whose blobs the mirror holds as deltas against other commits' objects, that
is most of the checkout's time (sympy: 0.8 s of 1.3 on a tmpfs). Attempts, base runs and
validation reruns of one task all start from the same tree, so the first workspace's fresh
pack is copied here, before anything has touched the workspace, and later ones copy it back.

Safe because: the cache is a directory of the harness's own that no sandbox mounts; entries
are named by the tree id git computed, and filled only from a pack git just wrote from the
mirror; they are copied, never linked, into workspaces, so nothing a patch or a test does to a
workspace's files (or their owner) reaches them. Entries appear whole (a directory renamed
into place) and the least recently used go beyond PACK_CACHE_BYTES.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

PACK_CACHE_BYTES = 1 << 30


def copy_into(entry: Path, packs: Path) -> bool:
    """Copy the pack files cached in `entry` into `packs`; False when there are none (or
    they were evicted meanwhile: then nothing is left half-copied). Copied, never linked:
    nothing done to a workspace can reach the cache."""
    try:
        names = [n for n in os.listdir(entry) if n.startswith("pack-")]
        if not any(n.endswith(".pack") for n in names) or not any(
            n.endswith(".idx") for n in names
        ):
            return False
        for name in names:
            shutil.copyfile(entry / name, packs / name, follow_symlinks=False)
            os.chmod(packs / name, 0o444)
        os.utime(entry)  # recently used: evicted last
    except OSError:
        for name in os.listdir(packs):
            os.unlink(packs / name)
        return False
    return True


def keep(packs: Path, pack_cache: Path, tree: str) -> None:
    """Keep a copy of a workspace's fresh pack (nothing has touched the workspace yet) for
    the next workspace of `tree`; drop the least recently used entries beyond
    PACK_CACHE_BYTES. Never raises: the cache only saves time."""
    try:
        pack_cache.mkdir(mode=0o700, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=pack_cache))
        for name in os.listdir(packs):
            shutil.copyfile(packs / name, tmp / name, follow_symlinks=False)
        try:
            tmp.rename(pack_cache / tree)
        except OSError:  # another worker cached the same tree first
            shutil.rmtree(tmp, ignore_errors=True)
        entries = []
        for entry in os.scandir(pack_cache):
            if not entry.name.startswith("."):
                size = sum(f.stat().st_size for f in os.scandir(entry.path))
                entries.append((entry.stat().st_mtime, size, entry.path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= PACK_CACHE_BYTES:
                break
            shutil.rmtree(path, ignore_errors=True)
            total -= size
    except OSError as exc:
        log.warning("pack cache %s: %s", pack_cache, exc)
