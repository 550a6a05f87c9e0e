"""An interrupted run on the Ray executor stops at once: the driver's main thread waits for the
jobs in slices (`ray.wait` with a timeout), so a Ctrl-C it could not take while blocked still
reaches it, and the jobs in flight are cancelled. Ray itself is faked: what is tested is the
driver's loop (executors/ray_cluster.py), not the cluster."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from test_interruptible import interrupt_the_waiting_main_thread, python_takes_ctrl_c

ray = pytest.importorskip("ray")
from swebounty.executors import ray_cluster  # noqa: E402
from swebounty.executors.jobs import Job  # noqa: E402


class _Ref:
    """A job running in a thread, as a worker runs it, until it ends or is cancelled."""

    def __init__(self) -> None:
        self.done, self.cancelled = threading.Event(), threading.Event()
        self.ended_by_the_cancel = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        interrupt_the_waiting_main_thread()
        self.ended_by_the_cancel = self.cancelled.wait(timeout=10)  # runs until cancelled
        self.done.set()


class _Remote:
    def __init__(self, refs: list[_Ref]) -> None:
        self.refs = refs

    def options(self, **_: Any) -> _Remote:
        return self

    def remote(self, *_: Any) -> _Ref:
        self.refs.append(_Ref())
        return self.refs[-1]


def _wait(refs: list[_Ref], num_returns: int = 1, timeout: float | None = None) -> Any:
    [ref] = refs
    return ([ref], []) if ref.done.wait(timeout) else ([], [ref])


def _cancel(ref: _Ref, force: bool = False) -> None:
    ref.cancelled.set()


def test_a_ctrl_c_the_main_thread_could_not_take_while_it_waited_cancels_the_ray_jobs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refs: list[_Ref] = []
    fake = SimpleNamespace(put=lambda x: x, wait=_wait, cancel=_cancel, get=lambda r: None,
                           exceptions=ray.exceptions)  # fmt: skip
    monkeypatch.setattr(ray_cluster, "ray", fake)
    cluster = object.__new__(ray_cluster.RayCluster)
    cluster.config = SimpleNamespace(max_retries=0, task_cpus=1)  # type: ignore[assignment]
    cluster.task_memory, cluster.slots = 1, 1
    cluster._remote = {"evaluate": _Remote(refs)}
    spec = SimpleNamespace(model_copy=lambda update: spec)
    results: list[Any] = []

    def on_result(job: Job, outcome: Any) -> list[Job]:
        results.append(outcome)
        return []

    with python_takes_ctrl_c(), pytest.raises(KeyboardInterrupt):
        cluster.run(spec, [Job(kind="evaluate", args=(), key=1)], on_result)  # type: ignore[arg-type]
    [ref] = refs
    ref.done.wait(timeout=10)
    assert ref.ended_by_the_cancel, "the driver waited for the job to end"
    assert results == [], "the job cut short was taken as a result"
