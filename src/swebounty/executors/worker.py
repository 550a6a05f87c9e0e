"""What a cluster worker runs: one job (an evaluation, an agent attempt, a validation, an
environment build) with an evaluation context of its own, and the logs it ships back.

A worker process is a harness process like the CLI: it builds one `EvalContext` per run (per
`WorkerSpec`) and keeps it for every job the run sends it, so it leases one sandbox uid and has
its own limits, as each slot of a local pool does. Caches are the node's own: environments and
mirrors live under the spec's cache path on this node's disk, built once per node (their
builders take file locks, so two workers of a node never build the same thing at once).

A worker never writes the runs directory: a job writes its logs to a scratch folder of its own,
and returns them (regular files only, bounded) with its result. The driver alone writes the
store and the logs, so a worker killed mid-job leaves nothing half-written behind, and the
job's retry cannot produce a second verdict. What a killed worker leaves on the node (its work
directory) is removed by the next worker that starts there.

Nothing here imports Ray: the Ray layer (ray_cluster.py) calls these functions on the workers.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from swebounty import __version__, safefs
from swebounty.agents import Agent
from swebounty.attempts import AttemptOptions, run_attempt
from swebounty.collect.validate import validate_or_reject
from swebounty.demo import build_demo, demo_name
from swebounty.evalcontext import EvalContext
from swebounty.runs import evaluate_safely
from swebounty.tasks import Submission, Task
from swebounty.testlimit import DEFAULT_TEST_LIMIT_S
from swebounty.verdicts import BaseFailures

log = logging.getLogger(__name__)

# What one job may ship back: the logs of an evaluation are small (output is capped by the
# sandbox), but a web task keeps screenshots and traces.
MAX_LOG_BYTES = 256 << 20


class WorkerSpec(BaseModel):
    """How a worker builds its evaluation context: the driver's settings, as data."""

    model_config = ConfigDict(frozen=True)

    version: str = __version__
    cache_dir: str  # the same path on every node, on each node's own disk (or shared)
    repos_dir: str | None = None  # clones on shared storage; None: mirrors cloned per node
    demo: bool = False  # the bundled demos: each node builds their repositories itself
    sandbox: str = "bwrap"
    timeout_s: float = 1800.0
    test_limit_s: float | None = DEFAULT_TEST_LIMIT_S
    python_dirs: tuple[str, ...] = ()
    sources_dir: str | None = None  # envs/sources.py: the same path on every node
    offline: bool = False
    keep_test_infra: bool = False
    base_failures: BaseFailures = "network"
    memory_bytes: int = 4 << 30  # the sandbox's limit: what the Ray task declares

    @classmethod
    def from_context(cls, ctx: EvalContext, *, memory_bytes: int) -> WorkerSpec:
        """The spec of the driver's context `ctx` (its repos dir is the demo's when it lies in
        the cache's demo folder: then each node builds the demo instead)."""
        demo_dir = ctx.cache_dir / "demo"
        demo = ctx.repos_dir is not None and ctx.repos_dir == demo_dir
        return cls(
            cache_dir=str(ctx.cache_dir),
            repos_dir=None if demo or ctx.repos_dir is None else str(ctx.repos_dir),
            demo=demo,
            sandbox=ctx.sandbox.name,
            timeout_s=ctx.policy.timeout_s,
            test_limit_s=ctx.policy.test_limit_s,
            python_dirs=tuple(str(p) for p in ctx.envs.python_dirs),
            sources_dir=str(ctx.envs.sources_dir) if ctx.envs.sources_dir else None,
            offline=ctx.envs.offline,
            keep_test_infra=ctx.keep_test_infra,
            base_failures=ctx.base_failures,
            memory_bytes=memory_bytes,
        )


@dataclass
class Shipped:
    """A job's result as it travels back to the driver, with the logs it wrote."""

    value: Any
    node: str  # host/node: what verdicts record
    node_id: str = ""  # the Ray node's id, to send later jobs to the same node
    logs: dict[str, bytes] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # log files too large to ship
    seconds: float = 0.0


class WorkerMismatch(RuntimeError):
    """This node runs another swebounty than the driver: its verdicts would not compare."""


_contexts: dict[WorkerSpec, EvalContext] = {}
_demos: set[tuple[str, str]] = set()
_guard = threading.Lock()


def node_id() -> str:
    """This Ray node's id ("" outside a Ray worker)."""
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # not on a Ray worker
        return ""


def node_label() -> str:
    """This host's name and, on a Ray worker, the first 8 hex digits of its Ray node id."""
    host, node = socket.gethostname(), node_id()
    return f"{host}/{node[:8]}" if node else host


def _shipped(value: Any, ctx: EvalContext, start: float, logs: Path | None = None) -> Shipped:
    files, dropped = pack_logs(logs) if logs is not None else ({}, [])
    return Shipped(value, ctx.node, node_id(), files, dropped, time.monotonic() - start)


def worker_context(spec: WorkerSpec) -> EvalContext:
    """This process's evaluation context for `spec`, made on first use and kept."""
    if spec.version != __version__:
        raise WorkerMismatch(
            f"node {node_label()} runs swebounty {__version__}, the driver {spec.version}: "
            "install the same wheel on every node"
        )
    with _guard:
        ctx = _contexts.get(spec)
        if ctx is None:
            cache = Path(spec.cache_dir)
            ctx = EvalContext.create(
                cache_dir=cache,
                runs_dir=cache,  # never written here: the logs travel to the driver
                repos_dir=cache / "demo" if spec.demo else _path(spec.repos_dir),
                sandbox=spec.sandbox,
                workers=1,
                timeout_s=spec.timeout_s,
                test_limit_s=spec.test_limit_s,
                python_dirs=[Path(p) for p in spec.python_dirs],
                sources_dir=_path(spec.sources_dir),
                offline=spec.offline,
                keep_test_infra=spec.keep_test_infra,
                base_failures=spec.base_failures,
                memory_bytes=spec.memory_bytes,
                work_kind="ray",
            )
            ctx.executor, ctx.node = "ray", node_label()
            _contexts[spec] = ctx
        return ctx


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _with_demo(spec: WorkerSpec, ctx: EvalContext, task: Task) -> None:
    """Build the demo repository a demo task needs on this node (once per process)."""
    name = demo_name(task.repo) if spec.demo else None
    if name is None or ctx.repos_dir is None:
        return
    with _guard:
        if (str(ctx.repos_dir), name) not in _demos:
            build_demo(ctx.repos_dir, name)
            _demos.add((str(ctx.repos_dir), name))


@contextlib.contextmanager
def _scratch_logs(ctx: EvalContext) -> Iterator[Path]:
    path = ctx.work_dir / f"logs-{uuid.uuid4().hex[:12]}"
    path.mkdir()
    try:
        yield path
    finally:
        safefs.remove_tree(path)


def pack_logs(root: Path, limit: int = MAX_LOG_BYTES) -> tuple[dict[str, bytes], list[str]]:
    """The regular files under `root` (links and special files are not followed), at most
    `limit` bytes in all: (files by relative path, files left out)."""
    files: dict[str, bytes] = {}
    dropped: list[str] = []
    total = 0
    for rel, info in sorted(safefs.walk_files(root, max_entries=100_000)):
        if not stat.S_ISREG(info.st_mode):
            continue
        data = safefs.read_beneath(root, rel, max(0, limit - total))
        if data is None:
            dropped.append(rel)
            continue
        files[rel] = data
        total += len(data)
    return files, dropped


def unpack_logs(shipped: Shipped, dest: Path) -> None:
    """Write shipped logs under `dest` (never through a link), noting what was left out."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel, data in shipped.logs.items():
        safefs.write_beneath(dest, rel, data)
    if shipped.dropped:
        note = "too large to ship from the worker, left out:\n" + "\n".join(shipped.dropped)
        safefs.write_beneath(dest, "logs-left-out.txt", note.encode() + b"\n")


# ------------------------------------------------------------------------------------ jobs


def evaluate_job(spec: WorkerSpec, task: Task, submission: Submission) -> Shipped:
    """Grade one submission in a fresh workspace on this node."""
    start = time.monotonic()
    ctx = worker_context(spec)
    with _scratch_logs(ctx) as log_dir:
        _with_demo(spec, ctx, task)
        return _shipped(evaluate_safely(task, submission, ctx, log_dir), ctx, start, log_dir)


def attempt_job(
    spec: WorkerSpec, task: Task, number: int, agent: Agent, opts: AttemptOptions
) -> Shipped:
    """Run the agent once on `task` on this node (run_attempt never raises for its failures)."""
    start = time.monotonic()
    ctx = worker_context(spec)
    _with_demo(spec, ctx, task)
    return _shipped(run_attempt(task, number, agent, ctx, opts), ctx, start)


def validate_job(spec: WorkerSpec, task: Task, runs: int) -> Shipped:
    """Validate one candidate on this node: the task with its tests, or its Rejected."""
    start = time.monotonic()
    ctx = worker_context(spec)
    with _scratch_logs(ctx) as log_dir:
        _with_demo(spec, ctx, task)
        return _shipped(validate_or_reject(task, ctx, log_dir, runs), ctx, start, log_dir)


def build_job(spec: WorkerSpec, task: Task) -> Shipped:
    """Build (or find) the environment `task` needs in this node's cache: its value is the
    environment's key, or why it failed (the evaluations report that themselves)."""
    from swebounty.frameworks import resolve

    start = time.monotonic()
    ctx = worker_context(spec)
    try:
        _with_demo(spec, ctx, task)
        task, framework = resolve(task, ctx)
        key = framework.runtime(task, ctx)[0].key
    except Exception as exc:  # the evaluations meet the same failure and grade it
        log.info("%s: building its environment failed: %s", task.instance_id, exc)
        key = f"failed: {type(exc).__name__}: {exc}"
    return _shipped(key, ctx, start)


def probe_job(spec: WorkerSpec) -> dict[str, Any]:
    """What this node offers a run: its swebounty, a working sandbox, its interpreters."""
    from swebounty.envs.interpreters import discover
    from swebounty.sandbox import bwrap_available

    facts: dict[str, Any] = {"node": node_label(), "version": __version__, "problems": []}
    if spec.version != __version__:
        facts["problems"].append(
            f"runs swebounty {__version__}, the driver {spec.version}: install the same wheel"
        )
    if spec.sandbox == "bwrap":
        ok, why = bwrap_available()
        if not ok:
            facts["problems"].append(f"{why} (or run with --unsafe)")
    if spec.repos_dir and not Path(spec.repos_dir).is_dir():
        facts["problems"].append(
            f"has no {spec.repos_dir}: mount the clones there, or leave --repos-dir out to "
            "clone per node"
        )
    try:
        Path(spec.cache_dir).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=spec.cache_dir):
            pass
    except OSError as exc:
        facts["problems"].append(f"cannot write the cache {spec.cache_dir}: {exc}")
    cache_file = Path(spec.cache_dir) / "envs" / "interpreters.json"  # as EnvManager keeps it
    found = discover([Path(p) for p in spec.python_dirs], cache_file=cache_file)
    facts["interpreters"] = [f"{i.minor[0]}.{i.minor[1]}" for i in found]
    return facts
