"""Removing an evaluation's workspace off the critical path, in a thread of its own.

Deleting a checkout of thousands of files (safefs.remove_tree) took 0.02-0.03 s per task on the
seven real tasks of bench/overhead_real.py, with workspaces in memory, and nothing needs it
done before the verdict: the next evaluation makes its workspace under a fresh name. So the
evaluation hands its trees to its context's `Remover` and goes on; one thread per context
removes them in the order given, with the same link-safe, non-recursive remove_tree.

Bounded: at most MAX_PENDING trees wait at any time (their space in memory or on the disk is
not free until they are gone, and workdirs.fits counts free space); beyond that the caller
removes its own, as before. `drain` waits for every tree handed over: the run calls it when it
ends or is interrupted, and EvalContext.close before it removes the work directories. Only
paths the harness made and named are ever handed over (the evaluation's scratch directory and
its workspace in memory), and a failure is logged, never raised: cleanup cannot cost a verdict.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from pathlib import Path

from swebounty import safefs

log = logging.getLogger(__name__)

MAX_PENDING = 4  # trees waiting to be removed; more and the caller removes its own


class Remover:
    """One background thread removing the trees handed to it (`remove`), bounded, joinable."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self.max_pending = max_pending
        self._pending: deque[tuple[Path, str]] = deque()  # (tree, whose: for the log)
        self._busy = 0  # trees taken by the thread and not yet removed
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def remove(self, paths: list[Path], whose: str = "") -> str | None:
        """Remove `paths` (trees the harness made) later, or now if too many are waiting or
        the remover is closed: then returns what stopped the removal, like remove_tree."""
        with self._cond:
            waiting = len(self._pending) + self._busy
            if not self._closed and (not waiting or waiting + len(paths) <= self.max_pending):
                if self._thread is None and not self._start():
                    return self._now(paths)
                self._pending.extend((p, whose) for p in paths)
                self._cond.notify_all()
                return None
        return self._now(paths)

    def _start(self) -> bool:
        thread = threading.Thread(target=self._work, name="swebounty-remover", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: the caller removes its own
            return False
        self._thread = thread
        return True

    @staticmethod
    def _now(paths: list[Path]) -> str | None:
        problems = [problem for p in paths if (problem := safefs.remove_tree(p))]
        return "; ".join(problems) or None

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every tree handed over is removed; False if `timeout` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending and not self._busy, timeout)

    def close(self) -> None:
        """Remove synchronously from now on (the work directories are going), and drain."""
        with self._cond:
            self._closed = True
            if threading.current_thread() is self._thread:
                return  # a finalizer the garbage collector ran in this thread: it cannot wait
        self.drain()

    def _work(self) -> None:
        # Ends when nothing is left (a process makes many contexts: tests, validation), and
        # `remove` starts another the next time.
        while True:
            with self._cond:
                if not self._pending:
                    self._thread = None
                    self._cond.notify_all()
                    return
                path, whose = self._pending.popleft()
                self._busy += 1
            try:
                problem = safefs.remove_tree(path)  # never raises
                if problem:
                    log.warning("%s: cleanup: %s", whose or path.name, problem)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()


def remove_trees(remover: Remover | None, trees: list[Path], whose: str) -> str | None:
    """Remove an evaluation's trees: later by `remover` (its context's), else now; what
    stopped a removal made now (it is logged either way)."""
    if remover is not None:
        problem = remover.remove(trees, whose)
    else:
        problem = "; ".join(p for tree in trees if (p := safefs.remove_tree(tree))) or None
    if problem:
        log.warning("%s: cleanup: %s", whose, problem)
    return problem
