"""The Ray executor: every job of a run is a Ray task; results stream back to the driver.

Connecting (`RayCluster.connect`): without an address, a local cluster of `workers` worker
processes is started for the run (and stopped after it); with one (`host:port`, `auto`,
`ray://host:10001`), the run joins that cluster as a driver; a process already connected to Ray
(a notebook, a test session) keeps its connection. Every alive node is then probed with a
zero-CPU task pinned to it: the same swebounty as the driver, a working sandbox, the clones and
a writable cache. A node that cannot take part stops the run before anything runs, with what to
fix on it.

Scheduling: a job is a Ray task that declares its CPUs and memory (`--task-cpus`,
`--task-memory`; the memory is also its sandbox's limit). Before the first job that needs a
task's environment, that environment is built by a task of its own; the jobs that need it then
prefer the node that built it (soft node affinity that spills to another node when that one is
busy; there the job builds the environment itself, once per node: the cache's builders hold
file locks). At most two jobs per slot are queued at once, so results flow from the start.

Failures: Ray retries a task whose worker died (killed, OOM-killed, its node lost) up to
`max_retries` times, on any node; a result reaches the driver once whatever the retries, and
only the driver writes the store, so a retry never makes a second verdict. A job Ray gives up
on comes back `Lost`. Ctrl-C (any exception in the driver) cancels every queued and running
task; running ones by killing their workers, whose sandboxes die with them.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from swebounty.executors import worker
from swebounty.executors.jobs import (
    DEFAULT_TASK_MEMORY_GB,
    ExecutorConfig,
    ExecutorError,
    Job,
    Lost,
    OnResult,
)
from swebounty.executors.worker import Shipped, WorkerSpec
from swebounty.interruptible import POLL_S
from swebounty.tasks import Task

log = logging.getLogger(__name__)

GIB = 1 << 30
_PROBE_TIMEOUT_S = 300.0  # a fresh node discovers its interpreters on the first probe
_OBJECT_STORE_BYTES = 512 << 20  # a local cluster only passes logs through it
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "evaluate": worker.evaluate_job,
    "attempt": worker.attempt_job,
    "validate": worker.validate_job,
    "build": worker.build_job,
}


class RayCluster:
    """A connection to a Ray cluster that runs jobs (executors.jobs.Cluster)."""

    name = "ray"

    def __init__(
        self,
        config: ExecutorConfig,
        *,
        task_memory: int,
        started: bool,
        connected: bool,
        nodes: list[dict[str, Any]],
    ) -> None:
        self.config = config
        self.task_memory = task_memory
        self.started = started  # a local cluster of ours: stopped by close()
        self.connected = connected  # our connection to a cluster: dropped by close()
        self.nodes = nodes
        resources = ray.cluster_resources()
        self.cpus = float(resources.get("CPU", 0))
        self.slots = max(1, int(self.cpus // config.task_cpus))
        self._remote = {kind: ray.remote(fn) for kind, fn in _FUNCTIONS.items()}

    @classmethod
    def connect(
        cls, config: ExecutorConfig, spec: WorkerSpec, *, workers: int, local_memory: int
    ) -> RayCluster:
        """Start a local cluster (no address) or join one; then check every node.

        `local_memory`: what each task declares on a local cluster of `workers` processes
        (the machine's share per worker, as the local executor gives each worker)."""
        if config.task_memory_gb is not None:
            task_memory = int(config.task_memory_gb * GIB)
        elif config.address is None:
            task_memory = local_memory
        else:
            task_memory = int(DEFAULT_TASK_MEMORY_GB * GIB)
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,  # workers log to the session's log files on their node
            "logging_level": logging.WARNING,
        }
        started = connected = False
        if ray.is_initialized():
            log.info("using this process's Ray connection; --address is not used")
        elif config.address is None:
            start_local(
                lambda: ray.init(
                    address="local",
                    num_cpus=max(1, math.ceil(workers * config.task_cpus)),
                    _memory=workers * task_memory,
                    object_store_memory=_OBJECT_STORE_BYTES,
                    **options,
                ),
                ray.shutdown,
            )
            started = connected = True
        else:
            try:
                ray.init(address=config.address, **options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ExecutorError(
                    f"cannot join the Ray cluster at {config.address}: {exc} (is `ray start "
                    "--head` running there, and is this the address it printed?)"
                ) from exc
            connected = True
        try:
            spec = spec.model_copy(update={"memory_bytes": task_memory})
            nodes = _probe_nodes(ray.remote(worker.probe_job), spec)
            _check_fit(nodes, config.task_cpus, task_memory)
        except BaseException:
            if connected:
                ray.shutdown()
            raise
        return cls(
            config, task_memory=task_memory, started=started, connected=connected, nodes=nodes
        )

    def describe(self) -> str:
        where = "a local Ray cluster" if self.started else "the Ray cluster"
        if self.config.address and not self.started:
            where += f" at {self.config.address}"
        names = ", ".join(str(n["node"]) for n in self.nodes)
        return (
            f"{where}: {len(self.nodes)} node(s) ({names}), {self.cpus:g} CPUs, {self.slots} "
            f"task(s) at once, each {self.config.task_cpus:g} CPU and "
            f"{self.task_memory / GIB:.1f} GiB"
        )

    def close(self) -> None:
        """Stop our local cluster, or leave the one we joined (its tasks of ours end)."""
        if self.connected and ray.is_initialized():
            ray.shutdown()
        self.connected = self.started = False

    # ------------------------------------------------------------------------------ jobs

    def _options(self, node_id: str | None, label: str) -> dict[str, Any]:
        options: dict[str, Any] = {
            "num_cpus": self.config.task_cpus,
            "memory": self.task_memory,
            "max_retries": self.config.max_retries,
            "retry_exceptions": False,  # a job's own failures are results, never raised
            "name": label,
        }
        if node_id:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                node_id, soft=True, _spill_on_unavailable=True
            )
        return options

    def run(self, spec: WorkerSpec, jobs: Iterable[Job], on_result: OnResult) -> None:
        """Run `jobs` (and the follow-ups `on_result` returns) until none is left."""
        spec = spec.model_copy(update={"memory_bytes": self.task_memory})
        spec_ref = ray.put(spec)
        queue = deque(jobs)
        inflight: dict[Any, tuple[str, Any]] = {}  # ref -> ("job", Job) | ("build", group)
        built: dict[str, str | None] = {}  # environment group -> the node that built it
        parked: dict[str, list[Job]] = {}  # jobs waiting for their group's build
        window = 2 * self.slots

        def submit(job: Job, node_id: str | None) -> None:
            label = f"{job.kind} {_name(job)}"
            ref = (
                self._remote[job.kind]
                .options(**self._options(node_id, label))
                .remote(spec_ref, *job.args)
            )
            inflight[ref] = ("job", job)

        def start(job: Job) -> None:
            group = _group(job.env_task) if job.env_task is not None else None
            if group is None or group in built:
                submit(job, built.get(group) if group else None)
            elif group in parked:
                parked[group].append(job)
            else:
                parked[group] = [job]
                assert job.env_task is not None
                label = f"build {job.env_task.instance_id}"
                ref = (
                    self._remote["build"]
                    .options(**self._options(None, label))
                    .remote(spec_ref, job.env_task)
                )
                inflight[ref] = ("build", group)

        try:
            while queue or inflight:
                while queue and len(inflight) + sum(map(len, parked.values())) < window:
                    start(queue.popleft())
                # In slices (interruptible.POLL_S): a Ctrl-C is taken at once, not when a job
                # ends; the jobs still in flight are then cancelled (force: their workers die).
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    what, item = inflight.pop(ref)
                    outcome = self._outcome(ref)
                    if what == "build":
                        built[item] = outcome.node_id if isinstance(outcome, Shipped) else None
                        for job in parked.pop(item):
                            submit(job, built[item])
                    else:
                        queue.extendleft(reversed(list(on_result(item, outcome))))
        except BaseException:
            _cancel(list(inflight))
            raise

    def _outcome(self, ref: Any) -> Shipped | Lost:
        """The job's result, or why Ray could not produce it."""
        tries = self.config.max_retries + 1
        try:
            value = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return Lost("cancelled")
        except ray.exceptions.RayTaskError as exc:  # the job raised: a harness bug
            cause = exc.cause if exc.cause is not None else exc
            return Lost(f"the job failed on its worker: {type(cause).__name__}: {cause}")
        except ray.exceptions.RayError as exc:  # its worker or node died, every try
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return Lost(f"{type(exc).__name__} after {tries} tries: {first}"[:1000])
        if not isinstance(value, Shipped):
            return Lost(f"the worker returned {type(value).__name__}, not a result")
        return value


def _name(job: Job) -> str:
    task = job.args[0] if job.args else None
    return task.instance_id if isinstance(task, Task) else str(job.key)[:80]


def _group(task: Task) -> str | None:
    """Tasks that share a build: the same repository, base commit and declared environment.
    Pick tasks run no code and need none."""
    if task.kind == "pick":
        return None
    declared = task.env_spec.model_dump_json() if task.env_spec else ""
    text = f"{task.repo}\0{task.base_commit}\0{task.ecosystem}\0{declared}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _cancel(refs: list[Any]) -> None:
    for ref in refs:
        with contextlib.suppress(Exception):  # already finished, or its worker already gone
            ray.cancel(ref, force=True)


def _probe_nodes(probe: Any, spec: WorkerSpec) -> list[dict[str, Any]]:
    """Probe every alive node; ExecutorError naming each node that cannot take part."""
    alive = [n for n in ray.nodes() if n.get("Alive")]
    refs = [
        probe.options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
        ).remote(spec)
        for n in alive
    ]
    try:
        facts = ray.get(refs, timeout=_PROBE_TIMEOUT_S)
    except ray.exceptions.GetTimeoutError as exc:
        raise ExecutorError(
            f"the Ray nodes did not answer a probe within {_PROBE_TIMEOUT_S:.0f} s"
        ) from exc
    except ray.exceptions.RayError as exc:
        raise ExecutorError(f"a Ray node cannot run swebounty: {exc}") from exc
    for node, fact in zip(alive, facts, strict=True):
        fact["cpus"] = float(node.get("Resources", {}).get("CPU", 0))
        fact["memory"] = float(node.get("Resources", {}).get("memory", 0))
    bad = [f"{f['node']}: {'; '.join(f['problems'])}" for f in facts if f["problems"]]
    if bad:
        raise ExecutorError("Ray node(s) not ready for this run: " + " | ".join(bad))
    return list(facts)


def _check_fit(nodes: list[dict[str, Any]], cpus: float, memory: int) -> None:
    """A task no node can hold would wait forever: say so now."""
    if not any(n["cpus"] >= cpus and n["memory"] >= memory for n in nodes):
        biggest = max(nodes, key=lambda n: (n["memory"], n["cpus"]), default=None)
        have = (
            f"the largest node offers {biggest['cpus']:g} CPUs and "
            f"{biggest['memory'] / GIB:.1f} GiB to tasks"
            if biggest
            else "the cluster has no node"
        )
        raise ExecutorError(
            f"no Ray node can hold a task of {cpus:g} CPU(s) and {memory / GIB:.1f} GiB: "
            f"{have}; lower --task-cpus / --task-memory"
        )


# Ray gives a new local node's raylet a fixed 30 s to register (ray/_private/node.py); on a
# loaded machine (two cores at load 10 here) that is not enough, and the run failed to start.
_STARTUP_TIMEOUT = "timed out during startup"


def start_local(start: Callable[[], object], stop: Callable[[], object], attempts: int = 3) -> None:
    """`start` a local Ray node, again (after `stop`, which ends what the try left running)
    when only Ray's startup wait ran out."""
    for attempt in range(1, attempts + 1):
        try:
            start()
            return
        except Exception as exc:
            if _STARTUP_TIMEOUT not in str(exc) or attempt == attempts:
                raise
            log.warning("Ray's local node was slow to start (%s); starting it again", exc)
            stop()
