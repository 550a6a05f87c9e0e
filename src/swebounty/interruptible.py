"""Waiting in the main thread for a pool's jobs without holding back Ctrl-C.

CPython raises KeyboardInterrupt in the main thread only, between bytecodes. When the kernel
delivers SIGINT to another thread, or just before the main thread blocks, the C handler only
sets a flag. A main thread blocked with no timeout (`concurrent.futures.as_completed`,
`Future.result`) sees that flag only when its wait ends, which is when a job finishes. CI saw
exactly that: an interrupted run went on until a sandboxed test finished 25 s later, and it
saved that job's verdict as if nothing had happened (no job could see `cancelled`, and nothing
killed the sandbox). Waiting in bounded slices brings the main thread back to the interpreter,
which then raises the KeyboardInterrupt.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import TypeVar

T = TypeVar("T")

# How long a Ctrl-C may wait for the main thread's wait to end. Waking four times a second
# costs nothing.
POLL_S = 0.25


def as_completed(futures: Iterable[Future[T]], poll_s: float = POLL_S) -> Iterator[Future[T]]:
    """Each of `futures` as it completes, like concurrent.futures.as_completed, but a pending
    KeyboardInterrupt is raised within `poll_s` instead of when the next job finishes."""
    pending = list(futures)
    while pending:
        done = wait(pending, timeout=poll_s, return_when=FIRST_COMPLETED).done
        yield from (f for f in pending if f in done)  # in the order given, not a set's
        pending = [f for f in pending if f not in done]


def raise_if_stopped(stop: threading.Event | None) -> None:
    """For a long job in a worker thread, between its steps: once the interrupted main thread
    has set `stop`, raise KeyboardInterrupt, so the job ends within one step instead of running
    to its end while the main thread waits for it. Raised as the interruption it is, so no
    handler of ordinary errors records it as the job's failure."""
    if stop is not None and stop.is_set():
        raise KeyboardInterrupt("stopped: the run was interrupted")
