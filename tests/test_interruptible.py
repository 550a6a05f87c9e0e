"""The main thread's wait for a pool's jobs: every job as it completes, and a Ctrl-C that the
main thread could not take while it waited is raised within a slice, not when a job ends."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from swebounty.interruptible import as_completed


def asleep_in_a_wait(thread: threading.Thread, looks: int = 5) -> bool:
    """Whether `thread` sleeps in the kernel inside threading's wait (a lock, an Event) at
    each of `looks` looks 20 ms apart (between them it may run)."""
    for _ in range(looks):
        frame = sys._current_frames().get(thread.ident or 0)
        code = frame.f_code if frame is not None else None
        if code is None or code.co_name != "wait" or not code.co_filename.endswith("threading.py"):
            return False
        stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] != "S":
            return False
        time.sleep(0.02)
    return True


def interrupt_the_waiting_main_thread() -> None:
    """Once the main thread sleeps in its wait, SIGINT to this thread: CPython's C handler
    then only sets the flag the main thread reads between bytecodes."""
    main = threading.main_thread()
    deadline = time.monotonic() + 10
    while not asleep_in_a_wait(main) and time.monotonic() < deadline:
        time.sleep(0.01)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)


@contextmanager
def python_takes_ctrl_c() -> Iterator[None]:
    """Python's own SIGINT handler meanwhile, in the main thread (where pytest runs a test)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("only the main thread takes a Ctrl-C")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_every_future_once_as_it_completes() -> None:
    gates = [threading.Event() for _ in range(3)]
    following = {2: 1, 1: 0}  # each job's end lets the next one end
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(gate.wait, 10) for gate in gates]
        order = []
        gates[2].set()
        for future in as_completed(futures, poll_s=0.05):
            order.append(futures.index(future))
            if order[-1] in following:
                gates[following[order[-1]]].set()
    assert order == [2, 1, 0]


def test_a_ctrl_c_taken_by_another_thread_ends_the_wait() -> None:
    release = threading.Event()

    def job() -> bool:
        interrupt_the_waiting_main_thread()
        return release.wait(timeout=10)  # a job that runs until something stops it

    with python_takes_ctrl_c(), ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(job)
        try:
            with pytest.raises(KeyboardInterrupt):
                list(as_completed([future]))
            assert not future.done(), "the wait ended with the job, not with the Ctrl-C"
        finally:
            release.set()
