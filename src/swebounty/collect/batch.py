"""Validate a file of candidates: every one not decided yet, in parallel, resumably.

One candidate's validation is validate.py's; here: the order (one repository after another in
turn), the output and rejects files (sink.py: a killed run loses nothing and decides nothing
twice), the gates that judge a validated task as a whole (gates.py), each reject's failure
class (funnel.py) and what the run cost (costs.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from swebounty.collect.costs import RunMeter, env_usage, ready_envs
from swebounty.collect.funnel import failure_class
from swebounty.collect.gates import Gates, too_many_f2p
from swebounty.collect.prefetch import Prefetch, Warm, warm_environment
from swebounty.collect.sink import Sink
from swebounty.collect.validate import Rejected, Runner, validate_or_reject
from swebounty.interruptible import as_completed
from swebounty.sandbox._process import kill_until_returned
from swebounty.tasks import Task

if TYPE_CHECKING:
    from swebounty.evalcontext import EvalContext


class ValidateExecutor(Protocol):
    """Validates candidates elsewhere than this process's thread pool (executors/: Ray); each
    result comes back to `record`, in this process."""

    def validate(
        self,
        todo: list[Task],
        ctx: EvalContext,
        runs: int,
        log_root: Path,
        record: Callable[[Task, Task | Rejected], None],
    ) -> None: ...


@dataclass
class ValidateSummary:
    candidates: int = 0
    valid: int = 0
    resumed: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    costs: dict[str, Any] = field(default_factory=dict)  # this run's: costs.RunMeter, env_usage

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "valid": self.valid,
            "resumed": self.resumed,
            "rejected": self.rejected,
            "seconds": round(self.seconds, 1),
            "costs": self.costs,
        }


def interleave(tasks: list[Task]) -> list[Task]:
    """One candidate of each repository in turn: a run stopped early (or a slow repository)
    still leaves results spread over every repository."""
    by_repo: dict[str, list[Task]] = {}
    for t in tasks:
        by_repo.setdefault(t.repo, []).append(t)
    queues = list(by_repo.values())
    out: list[Task] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out += [q[i] for q in queues if i < len(q)]
    return out


def _local(
    todo: list[Task],
    ctx: EvalContext,
    runs: int,
    log_root: Path,
    runner: Runner | None,
    record: Callable[[Task, Task | Rejected], None],
    workers: int,
    prefetch: int,
    warm: Warm | None,
) -> None:
    """`todo` on a thread pool of this process. Interrupted (Ctrl-C), it stops: no queued
    candidate starts, the running ones' sandboxes are ended and nothing more is recorded, so
    what they were doing is redone by the next run. The environments being prefetched are
    ended too (their sandboxed steps killed), and their threads waited for (prefetch.py)."""
    # A test's stand-in context may have no `cancelled`: the prefetch still needs one.
    cancelled: threading.Event = getattr(ctx, "cancelled", None) or threading.Event()
    ahead: Prefetch | None = None
    if prefetch > 0 and todo:
        ahead = Prefetch(todo, warm or warm_environment(ctx), threads=prefetch,
                         ahead=2 * max(1, workers), cancelled=cancelled)  # fmt: skip

    def one(t: Task) -> Task | Rejected:
        if ahead is not None:
            ahead.started(t)
        return validate_or_reject(t, ctx, log_root / t.instance_id, runs, runner)

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    futures = {pool.submit(one, t): t for t in todo}
    try:
        for future in as_completed(futures):
            record(futures[future], future.result())
    except BaseException:
        cancelled.set()  # first: no new sandbox starts (EvalContext.lease), no new build
        pool.shutdown(wait=False, cancel_futures=True)
        kill_until_returned(futures)
        if ahead is not None:
            ahead.close()  # cancelled: ends the builds under way, waits for their threads
        raise
    pool.shutdown()
    if ahead is not None:
        ahead.close()  # every candidate has begun: nothing is left to build


def validate(
    candidates: list[Task],
    output: Path,
    ctx: EvalContext,
    *,
    rejects: Path | None = None,
    log_root: Path | None = None,
    runs: int = 3,
    workers: int = 1,
    retry_errors: bool = False,
    runner: Runner | None = None,
    on_done: Callable[[str, str], None] | None = None,
    fresh: bool = False,
    executor: ValidateExecutor | None = None,
    gates: Gates | None = None,
    prefetch: int = 0,
    warm: Warm | None = None,
    limit: int | None = None,
) -> ValidateSummary:
    """Validate every candidate not already decided in `output`/`rejects` (resumable), in
    parallel across `workers` (or on `executor`'s cluster), one repository after another in
    turn. `on_done(instance_id, outcome)` reports each one. Each reject record says its failure
    class (funnel.py) and what it cost; a valid task's `validation` says the same.

    `prefetch` threads build the environments of the candidates next in line meanwhile
    (prefetch.py; `warm` is what they do with one, by default build its environment); local
    workers only. `limit`: only the first N candidates in that turn order are validated (the
    same N chooses the same ones again); the outputs still keep every candidate's record."""
    gates = gates or Gates()
    rejects = rejects or output.with_name(output.stem + ".rejects.jsonl")
    log_root = log_root or ctx.runs_dir / "validate"
    sink = Sink(
        output,
        rejects,
        forget=(lambda r: r.get("stage") == "infra") if retry_errors else None,
        fresh=fresh,
        only={t.instance_id for t in candidates},
    )
    chosen = interleave(candidates)[:limit] if limit is not None else candidates
    summary = ValidateSummary(candidates=len(chosen))
    todo = interleave([t for t in chosen if t.instance_id not in sink.known])
    summary.resumed = len(chosen) - len(todo)
    start = time.monotonic()
    meter = RunMeter()
    cache_dir: Path | None = getattr(ctx, "cache_dir", None)  # a test's stand-in may have none
    envs_before = ready_envs(cache_dir) if cache_dir else set()
    env_keys: list[str | None] = []

    def record(task: Task, result: Task | Rejected) -> None:
        if not isinstance(result, Rejected) and (why := too_many_f2p(result, gates)):
            facts = (result.model_extra or {}).get("validation") or {}
            result = Rejected("too_many_f2p", why, facts)
        if isinstance(result, Rejected):
            env_keys.append(result.facts.get("env_key"))
            sink.reject(
                {
                    "instance_id": task.instance_id,
                    "repo": task.repo,
                    "stage": result.stage,
                    "class": failure_class(result.stage, result.reason),
                    "reason": result.reason,
                    "log_dir": str(log_root / task.instance_id),
                    **result.facts,
                }
            )
            summary.rejected[result.stage] = summary.rejected.get(result.stage, 0) + 1
            outcome = f"rejected: {result.reason}"
        else:
            env_keys.append(((result.model_extra or {}).get("validation") or {}).get("env_key"))
            sink.add(result)
            summary.valid += 1
            outcome = f"valid: {len(result.FAIL_TO_PASS)} F2P, {len(result.PASS_TO_PASS)} P2P"
        if on_done is not None:
            on_done(task.instance_id, outcome)

    try:
        if executor is not None:
            executor.validate(todo, ctx, runs, log_root, record)
        else:
            _local(todo, ctx, runs, log_root, runner, record, workers, prefetch, warm)
        sink.finish()
    finally:
        summary.seconds = time.monotonic() - start
        summary.costs = dict[str, Any](meter.read())
        if cache_dir is not None:
            summary.costs["environments"] = env_usage(env_keys, envs_before, cache_dir)
    return summary
