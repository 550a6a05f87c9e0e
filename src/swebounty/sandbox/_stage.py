"""Stage directories: where the launcher of a run as root binds what its sandbox needs.

Each run makes one on the host (`tempfile.mkdtemp`, named with `STAGE_PREFIX` and its maker's
tag) and the launcher mounts a tmpfs over it in a mount namespace of its own, so from the host
a live run's stage looks empty however long it runs. A harness killed mid-run leaves its stage
behind; the next harness removes it once its maker has died — never by emptiness or age alone.
"""

from __future__ import annotations

import functools
import logging
import tempfile
import time
from pathlib import Path

from swebounty.sandbox._cgroups import maker_died

log = logging.getLogger(__name__)

STAGE_PREFIX = "swebounty-stage-"
# A stage dir that names no maker this harness can see (made by an older swebounty, or in
# another pid namespace) is removed only when older than this: a day, beyond any run's timeout.
_UNOWNED_AGE_S = 86400.0


@functools.lru_cache(maxsize=1)
def sweep_once() -> None:
    """`sweep_stage_dirs` of the temp dir, once per process."""
    sweep_stage_dirs(Path(tempfile.gettempdir()))


def sweep_stage_dirs(parent: Path) -> int:
    """Remove the empty stage dirs in `parent` whose harness has died; returns how many."""
    removed, now = 0, time.time()
    for path in parent.glob(f"{STAGE_PREFIX}*"):
        died = maker_died(path.name[len(STAGE_PREFIX) :])
        try:
            if died is False or (died is None and now - path.lstat().st_mtime < _UNOWNED_AGE_S):
                continue
            path.rmdir()  # only an empty directory, never a link's target
        except OSError:
            continue
        removed += 1
        log.info("removed %s, left by a dead harness", path)
    return removed
