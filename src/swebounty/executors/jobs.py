"""The vocabulary shared by the driver and a cluster: an executor's settings, a job, a lost job.

A Job is one unit of work sent to a worker (an evaluation, an agent attempt, a validation),
with the task whose environment it needs, so the cluster can build that environment first, in
its own task, on the node that will run the job. Its outcome comes back as the worker's
`Shipped` result, or as `Lost` when the cluster could not finish it (its worker died more
times than the retries allow, its node was lost, the run was cancelled).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from swebounty.executors.worker import Shipped, WorkerSpec
    from swebounty.tasks import Task

EXECUTORS = ("local", "ray")
# Per task on an existing cluster (a local cluster splits this machine's memory instead).
DEFAULT_TASK_MEMORY_GB = 4.0

JobKind = Literal["evaluate", "attempt", "validate"]


class ExecutorError(RuntimeError):
    """The executor cannot run this run (Ray missing, no node fits a task, a node unfit);
    the message says what to do."""


class ExecutorConfig(BaseModel):
    """Where a run's attempts are computed: this process's pool, or a Ray cluster."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = Field(
        None, description="an existing Ray cluster (host:port, auto, ray://host:10001)"
    )
    task_cpus: float = Field(1.0, gt=0, description="CPUs each Ray task declares")
    task_memory_gb: float | None = Field(
        None,
        gt=0,
        description="GiB each Ray task declares, also its sandbox's memory limit (default: "
        "this machine's share per worker on a local cluster, 4 on an existing one)",
    )
    max_retries: int = Field(3, ge=0, description="times a task whose worker died is retried")

    @property
    def remote(self) -> bool:
        return self.kind != "local"

    def problem(self) -> str | None:
        """Why these settings cannot work together, or None."""
        if self.kind == "local" and self.address is not None:
            return "--address names a Ray cluster: add --executor ray"
        return None


@dataclass
class Job:
    """One unit of work for a worker: `kind`'s function applied to `args` (after the spec)."""

    kind: JobKind
    args: tuple[Any, ...]
    key: Any  # the driver's own handle on the job
    env_task: Task | None = None  # build this task's environment on the node first


@dataclass
class Lost:
    """A job the cluster could not finish: an infrastructure failure, retried on resume."""

    reason: str


OnResult = Callable[[Job, "Shipped | Lost"], Iterable[Job]]


class Cluster(Protocol):
    """Runs jobs on workers and streams each outcome back to `on_result`, in this process,
    which may answer with follow-up jobs (an agent's attempt, then its evaluation)."""

    name: str

    def run(self, spec: WorkerSpec, jobs: Iterable[Job], on_result: OnResult) -> None: ...

    def describe(self) -> str: ...

    def close(self) -> None: ...
