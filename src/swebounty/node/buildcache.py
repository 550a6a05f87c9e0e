"""Build outputs kept per tree: a build step's files, reused when the same tree is built again.

A workspace's tree after the patches is a function of the base commit, the submission's patch
and the test patch; with the environment and the steps, that is the key. What the steps
created or changed in the workspace (not `.git`, not `node_modules`) is kept under the cache,
regular files only and within a size bound; the next evaluation of the same key (a rerun, a
resumed run, the unpatched base run beside an empty submission) copies them in instead of
building again. A build that writes outside the workspace keeps nothing of that here: its
steps run again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import stat
from pathlib import Path

from swebounty import safefs

log = logging.getLogger(__name__)

MAX_KEPT_BYTES = 256 << 20
_SKIP = frozenset({".git", "node_modules"})
Listing = dict[str, tuple[int, int]]


def build_key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def listing(workspace: Path) -> Listing:
    """Every regular file of the workspace (but .git and node_modules): size and mtime."""
    found: Listing = {}
    for rel, info in safefs.walk_files(workspace, skip_dirs=_SKIP):
        if stat.S_ISREG(info.st_mode):
            found[rel] = (info.st_size, info.st_mtime_ns)
    return found


def keep(cache: Path, key: str, workspace: Path, before: Listing) -> int:
    """Keep what the build made (files new or changed since `before`); returns how many."""
    after = listing(workspace)
    made = sorted(rel for rel, sig in after.items() if before.get(rel) != sig)
    if not made or sum(after[rel][0] for rel in made) > MAX_KEPT_BYTES:
        return 0
    dest = cache / key
    tmp = cache / f".{key}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "files").mkdir(parents=True)
    kept = []
    for rel in made:
        data = safefs.read_beneath(workspace, rel, MAX_KEPT_BYTES)  # never through a link
        if data is not None:
            safefs.write_beneath(tmp / "files", rel, data)
            kept.append(rel)
    (tmp / "files.json").write_text(json.dumps(kept), encoding="utf-8")
    try:
        tmp.rename(dest)
    except OSError:  # kept by another worker meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    return len(kept)


def restore(cache: Path, key: str, workspace: Path) -> int | None:
    """Copy a kept build into the workspace: how many files, or None when none is kept."""
    where = cache / key
    try:
        names = json.loads((where / "files.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for rel in names:
        data = safefs.read_beneath(where / "files", rel, MAX_KEPT_BYTES)
        if data is None:
            return None  # a damaged entry: build again (what was copied is overwritten)
        safefs.write_beneath(workspace, rel, data)
    return len(names)
