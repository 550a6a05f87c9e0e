"""The processes a hostile build planted: found by a marker on their command line."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def marked(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (the test's own: it planted them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry.name))
    return found


def survivors(marker: str, grace_s: float = 5.0) -> list[int]:
    """The marked processes still alive after `grace_s` (a sandbox's may still be dying)."""
    deadline = time.monotonic() + grace_s
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    return marked(marker)


def kill_marked(marker: str) -> None:
    """Ends what a build outside the sandbox left (the test failed)."""
    for pid in marked(marker):
        os.kill(pid, signal.SIGKILL)
