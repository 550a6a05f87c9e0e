"""An interrupted run ends the sandboxes of every job until the job has returned, however late
the job starts one (a loaded machine): the run never waits out a sandbox's whole command.
`swebounty run/eval` (runs._cancel) and `validate` (collect/batch.py) share the one loop
(sandbox._process.kill_until_returned), and their main threads wait for the jobs in slices
(interruptible.py), so that the Ctrl-C reaches that loop at all."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from run_helpers import one_attempt, verdict_of
from swebounty import runs
from swebounty.sandbox import _process
from swebounty.store import Store
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict
from test_interruptible import interrupt_the_waiting_main_thread, python_takes_ctrl_c


def _late_job(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, threading.Event]:
    """A job that starts its sandbox after any grace; the sandbox runs until killed."""
    started, killed = threading.Event(), threading.Event()

    def kill_running() -> int:
        if started.is_set():
            killed.set()
        return int(started.is_set())

    monkeypatch.setattr(_process, "kill_running", kill_running)

    def job() -> None:
        time.sleep(0.6)  # slow to see the stop: its next sandbox starts after the grace
        started.set()
        killed.wait(timeout=10)  # a sandbox runs until something kills it

    return job, killed


def test_cancel_ends_a_sandbox_a_job_starts_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job, killed = _late_job(monkeypatch)
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(job)
    ctx: Any = SimpleNamespace(cancelled=threading.Event())
    begun = time.monotonic()
    runs._cancel(ctx, pool, [future])
    assert killed.is_set(), "the late sandbox was left to run its whole command"
    assert future.done() and ctx.cancelled.is_set()
    assert time.monotonic() - begun < 5


def test_the_loop_warns_once_when_jobs_outlive_the_warning_and_still_waits(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    job, killed = _late_job(monkeypatch)
    pool = ThreadPoolExecutor(max_workers=2)
    futures = [pool.submit(job), pool.submit(lambda: None)]
    with caplog.at_level("WARNING"):
        _process.kill_until_returned(futures, warn_after_s=0.1)
    assert killed.is_set() and all(f.done() for f in futures)
    warnings = [r for r in caplog.records if "still finishing" in r.message]
    assert len(warnings) == 1 and "1 job(s)" in warnings[0].message


def test_a_ctrl_c_the_main_thread_could_not_take_while_it_waited_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CPython raises KeyboardInterrupt in the main thread only: a SIGINT the kernel delivers to
    # another thread (or just before the main thread blocks) only sets a flag. A main thread
    # blocked without a timeout in as_completed took it when the job ended: CI's interrupted
    # run waited 26 s for a sandboxed test, then saved its verdict.
    task, sub, ctx = one_attempt(tmp_path / "runs")
    killed = threading.Event()
    ended: dict[str, bool] = {}

    def kill_running() -> int:
        killed.set()
        return 1

    monkeypatch.setattr(_process, "kill_running", kill_running)

    def sandboxed(task: Task, sub: Submission, ctx: Any, log_dir: Path) -> Verdict:
        interrupt_the_waiting_main_thread()
        ended["by the kill"] = killed.wait(timeout=10)  # a sandbox runs until it is killed
        return verdict_of(task, sub, "resolved", "the tests passed")

    monkeypatch.setattr(runs, "evaluate_safely", sandboxed)
    with python_takes_ctrl_c(), Store.open(tmp_path / "runs.sqlite") as store:
        with pytest.raises(KeyboardInterrupt):
            runs.evaluate_run("r", [(task, sub)], cast(Any, ctx), store)
        assert ended == {"by the kill": True}, "the run waited for the job to end"
        assert store.statuses("r") == {}, "the attempt cut short was saved"
