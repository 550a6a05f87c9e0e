"""Executors: where a run's attempts are computed.

`local` (the default) is this process's thread pool (runs.evaluate_run, attempts.run_agent and
collect.validate run it themselves). `ray` makes each evaluation, agent attempt, validation and
environment build a Ray task on a cluster (`ray_cluster`), with the workers' side in `worker`
and the driver's in `remote`: results stream back to this process, which alone writes the
store. Ray is an optional extra: nothing imports it until a Ray executor is opened, so the CLI's
start-up and a local run never pay for it.

    jobs         the settings (ExecutorConfig), a Job, a Lost job, the Cluster protocol
    worker       what runs on a worker: its evaluation context, the jobs, the logs it ships
    ray_cluster  the Ray cluster: connect or start, probe the nodes, schedule, retry, cancel
    remote       the driver's side: outcomes into the store and the runs directory
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swebounty.executors.jobs import EXECUTORS, ExecutorConfig, ExecutorError

if TYPE_CHECKING:
    from swebounty.evalcontext import EvalContext
    from swebounty.executors.remote import RemoteExecutor

__all__ = ["EXECUTORS", "ExecutorConfig", "ExecutorError", "open_executor"]


def open_executor(
    config: ExecutorConfig, ctx: EvalContext, *, workers: int = 1
) -> RemoteExecutor | None:
    """None for the local executor; else a connected cluster for the run of `ctx` (a local
    Ray cluster of `workers` processes when `config` names no address). Raises MissingExtra
    without Ray, ExecutorError when the cluster cannot take the run."""
    problem = config.problem()
    if problem:
        raise ExecutorError(problem)
    if not config.remote:
        return None
    from swebounty.extras import require

    require("ray", "--executor ray", "ray")
    from swebounty.executors.ray_cluster import RayCluster
    from swebounty.executors.remote import RemoteExecutor
    from swebounty.executors.worker import WorkerSpec

    spec = WorkerSpec.from_context(ctx, memory_bytes=ctx.policy.memory_bytes)
    cluster = RayCluster.connect(
        config, spec, workers=workers, local_memory=ctx.policy.memory_bytes
    )
    return RemoteExecutor(cluster, spec)
