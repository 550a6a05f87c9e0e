"""An interrupted run ends the sandboxes of every job until the job has returned, however late
the job starts one (a loaded machine): the run never waits out a sandbox's whole command."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest

from swebounty import runs


def test_cancel_ends_a_sandbox_a_job_starts_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runs, "_CANCEL_GRACE_S", 0.2)
    started = threading.Event()
    killed = threading.Event()

    def kill_running() -> int:
        if started.is_set():
            killed.set()
        return int(started.is_set())

    monkeypatch.setattr(runs, "kill_running", kill_running)

    def job() -> None:
        time.sleep(0.6)  # slow to see the stop: its next sandbox starts after the grace
        started.set()
        killed.wait(timeout=10)  # a sandbox runs until something kills it

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(job)
    ctx: Any = SimpleNamespace(cancelled=threading.Event())
    runs._cancel(ctx, pool, [future])
    assert killed.is_set(), "the late sandbox was left to run its whole command"
    assert future.done() and ctx.cancelled.is_set()
