"""Build the environments of the candidates next in line while the workers run tests.

Measured on issue 28's candidates (docs/results/fresh-2026.md): a candidate's tests are CPU-bound
(a pytest run uses about as much CPU as its wall time allows), but building its environment is
mostly waiting (the index, downloads, the disk: 3-6 CPU-seconds in 15-21 s of wall time), and
nearly every candidate has an environment spec of its own (its base commit's day is in it). So
a few threads build ahead of the workers: the waits overlap the tests instead of adding to them,
and the number of test runs at once stays the workers'.

A prefetched environment is the one the candidate's own runs would build: the same call
(`Framework.runtime`), the same content-addressed cache with its locks, so a worker reaching a
candidate whose environment is still being built waits for that build rather than making a
second one. A failure is left for the candidate's own runs to meet and report (a failed build is
remembered by the cache, so they meet it at once). The threads stay at most `ahead` candidates
in front of the workers, so a stopped run has built at most that many environments for nothing.

Closing waits for the builds under way in slices, so the main thread still takes a Ctrl-C; once
the run is interrupted the builds are ended, not waited for: their sandboxed steps are killed
(they run in sessions of their own, which a terminal's Ctrl-C does not reach), and the steps
run on the host (git, uv) die of the terminal's Ctrl-C themselves. The threads are waited for
until they return even then: a daemon thread cut off by the interpreter's exit in the middle
of a step would leave its git or uv running with no one to wait for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from swebounty.interruptible import POLL_S
from swebounty.sandbox._process import kill_running
from swebounty.tasks import Task

if TYPE_CHECKING:
    from swebounty.evalcontext import EvalContext

log = logging.getLogger(__name__)

Warm = Callable[[Task], object]


def warm_environment(ctx: EvalContext) -> Warm:
    """What prefetching does for one candidate: build (or find) its environment."""

    def warm(task: Task) -> object:
        from swebounty.frameworks import resolve

        task, framework = resolve(task, ctx)
        return framework.runtime(task, ctx)

    return warm


class Prefetch:
    """`threads` threads calling `warm` on `todo` in order, never more than `ahead` candidates
    past the ones the workers have started (`started`). `close` stops them."""

    def __init__(
        self,
        todo: Sequence[Task],
        warm: Warm,
        *,
        threads: int = 1,
        ahead: int = 4,
        cancelled: threading.Event | None = None,
    ) -> None:
        self.todo = list(todo)
        self.warm = warm
        self.ahead = max(1, ahead)
        self.cancelled = cancelled or threading.Event()
        self.began = 0  # candidates the workers have started
        self.next = 0  # the next candidate to warm
        self.warmed: list[str] = []  # instance ids, in the order their warming began
        self.cond = threading.Condition()
        self.stopped = False
        self.alive = max(0, threads)  # threads not returned yet (under cond)
        self.threads = [
            threading.Thread(target=self._loop, name=f"prefetch-{i}", daemon=True)
            for i in range(max(0, threads))
        ]
        for t in self.threads:
            t.start()

    def started(self, task: Task) -> None:
        """A worker has begun `task` (candidates begin in `todo`'s order)."""
        with self.cond:
            self.began += 1
            self.cond.notify_all()

    def _take(self) -> Task | None:
        with self.cond:
            while True:
                if self.stopped or self.cancelled.is_set():
                    return None
                # A candidate a worker has already begun builds its own environment.
                self.next = max(self.next, self.began)
                if self.next >= len(self.todo):
                    return None
                if self.next < self.began + self.ahead:
                    task = self.todo[self.next]
                    self.next += 1
                    self.warmed.append(task.instance_id)
                    return task
                self.cond.wait(timeout=1.0)

    def _loop(self) -> None:
        try:
            while (task := self._take()) is not None:
                try:
                    self.warm(task)
                except KeyboardInterrupt:  # a git of the build died of the terminal's Ctrl-C:
                    with self.cond:  # the main thread has it too; no traceback, no build more
                        self.stopped = True
                except Exception as exc:  # the candidate's own runs meet it and say so
                    log.info("prefetching %s's environment failed: %s", task.instance_id, exc)
        finally:
            with self.cond:
                self.alive -= 1
                self.cond.notify_all()

    def close(self, *, wait: bool = True, warn_after_s: float = 10.0) -> None:
        """Stop taking candidates; with `wait`, until the builds under way end (a build is left
        whole), unless the run is (or gets) interrupted: then they are ended (module doc).
        Interrupted during the wait, this raises the KeyboardInterrupt once the threads have
        returned; a second Ctrl-C leaves at once."""
        with self.cond:
            self.stopped = True
            self.cond.notify_all()
        if not wait:
            return
        try:
            with self.cond:
                while self.alive and not self.cancelled.is_set():
                    self.cond.wait(POLL_S)  # in slices: a Ctrl-C is taken within POLL_S
        except BaseException:
            self.cancelled.set()
            self._end_builds(warn_after_s)
            raise
        if self.cancelled.is_set():
            self._end_builds(warn_after_s)

    def _end_builds(self, warn_after_s: float) -> None:
        """Kill the builds' sandboxed steps until every thread has returned (again each round:
        a thread may start another step meanwhile), as sandbox._process.kill_until_returned
        does for a pool's jobs."""
        deadline, warned = time.monotonic() + warn_after_s, False
        while True:
            kill_running()
            with self.cond:
                if not self.alive:
                    return
                self.cond.wait(0.2)
            if not warned and time.monotonic() > deadline:
                log.warning("%d environment build(s) still running after the interruption, in "
                            "a step on the host (git, uv): Ctrl-C again to leave them", self.alive)  # fmt: skip
                warned = True
