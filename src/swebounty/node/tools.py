"""The harness's own files a sandboxed run reads (reporters, launchers, the e2e driver and
plugin), copied once per version into the cache where the sandbox user can read them: a folder
named by the digest of their texts, made complete beside it and renamed into place, so a run
never sees half of one and concurrent workers never write into each other's."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path


def published(texts: dict[str, str], parent: Path) -> Path:
    """`parent/<digest>` holding each name of `texts` with its text (world-readable)."""
    digest = hashlib.sha256("\0".join(texts.values()).encode()).hexdigest()[:12]
    dest = parent / digest
    if all((dest / name).is_file() for name in texts):
        return dest
    tmp = parent / f".{digest}.{os.getpid()}.{id(texts)}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, text in texts.items():
        (tmp / name).write_text(text, encoding="utf-8")
        (tmp / name).chmod(0o644)
    tmp.chmod(0o755)
    try:
        tmp.rename(dest)
    except OSError:  # another worker got there first
        shutil.rmtree(tmp, ignore_errors=True)
    return dest
