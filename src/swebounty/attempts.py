"""Attempts: run an agent on a task k times, store every attempt, grade each one.

`run_attempt` is one agent run on one task, a plain function of picklable inputs (the task, the
attempt number, the agent, the options) plus the evaluation context: the agent gets the task's
public part and, when it works on code, a fresh session (workspace, environment, sandbox) — but
a pick task whose repository cannot be had runs without one, and its attempt says so.
`verdict_for` turns a stored attempt into a verdict with the existing harness: a submitted patch
is evaluated in a *new* workspace, never the agent's. `run_agent` drives a whole run through a
thread pool (or an `AgentExecutor`: executors/ makes each attempt a Ray task); every attempt
and verdict is committed the moment it exists, so a killed run resumes where it stopped:
attempts with a verdict are skipped, stored attempts without one are only evaluated, and
attempts that failed for infrastructure reasons run again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from swebounty.agents import AGENTS, Agent, AgentResult, PublicTask
from swebounty.agents.prices import Price, cost_usd
from swebounty.agents.session import SessionError, open_session
from swebounty.evalcontext import EvalContext
from swebounty.grading import HACK_FLAGS
from swebounty.interruptible import as_completed
from swebounty.needs import cannot_run, missing
from swebounty.repos import RepoError, ensure_mirror
from swebounty.runs import evaluate_one, log_dir_for
from swebounty.sandbox._process import kill_until_returned
from swebounty.store import Store
from swebounty.tasks import Attempt, Task
from swebounty.verdicts import Verdict

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AttemptOptions:
    """How every attempt of a run is made."""

    time_limit_s: float = 1800.0
    hints: bool = False
    prices: dict[str, Price] | None = None


def no_clone(task: Task, ctx: EvalContext) -> str | None:
    """Why a pick task gets no workspace (its repository cannot be had: no clone here and none
    can be made), or None. A pick task can be answered from the issue and the proposals alone;
    a fix task cannot, and its session says what is missing."""
    if task.kind != "pick":
        return None
    try:
        ensure_mirror(task.repo, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir,
                      url=task.repo_url)  # fmt: skip
    except RepoError as exc:
        return f"no clone of {task.repo}: {exc}"
    return None


def run_attempt(
    task: Task, number: int, agent: Agent, ctx: EvalContext, opts: AttemptOptions
) -> Attempt:
    """Run `agent` once on `task`. Never raises for the agent's or the sandbox's failures."""
    without = no_clone(task, ctx) if agent.uses_session else None
    public = PublicTask.from_task(
        task, attempt=number, hints=opts.hints, workspace=agent.uses_session and not without
    )
    started_at = datetime.now(timezone.utc)
    start = time.monotonic()
    lacks = missing(task, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir)
    try:
        if lacks and agent.uses_session and not without:
            result = AgentResult(status="infra_error", stop_reason="infrastructure",
                                 error=cannot_run(lacks))  # fmt: skip
        elif without:
            log.warning("%s: %s; the agent sees the issue and the proposals only", task.instance_id,
                        without)  # fmt: skip
            result = agent.run(public, None)
            result.trajectory.insert(0, {"type": "no_workspace", "reason": without})
        elif agent.uses_session:
            with (
                ctx.lease() as sandbox,
                open_session(
                    task,
                    public.model_dump_json(indent=2),
                    ctx,
                    sandbox,
                    time_limit_s=opts.time_limit_s,
                ) as session,
            ):
                result = agent.run(public, session)
        else:
            result = agent.run(public, None)
    except SessionError as exc:
        result = AgentResult(status="infra_error", stop_reason="infrastructure", error=str(exc))
    except Exception as exc:
        log.exception("%s: agent %s raised", task.instance_id, agent.name)
        # A built-in agent that raises has hit a harness bug; a plugged-in one crashed.
        builtin = AGENTS.get(agent.name, "").startswith(type(agent).__module__ + ":")
        result = AgentResult(
            status="infra_error" if builtin else "agent_error",
            stop_reason="harness_error" if builtin else "crash",
            error=f"{type(exc).__name__}: {exc}",
        )
    cost = result.cost_usd
    if cost is None and opts.prices is not None:
        cost = cost_usd(result.model, result.tokens_in, result.tokens_out, opts.prices)
    return Attempt(
        instance_id=task.instance_id,
        attempt=number,
        agent=agent.name,
        model=result.model,
        status=result.status,
        stop_reason=result.stop_reason,
        error=result.error,
        patch=result.patch if result.status == "submitted" else "",
        pick=result.pick if result.status == "submitted" else None,
        tokens_in=result.tokens_in,
        tokens_out=result.tokens_out,
        tokens_incomplete=result.tokens_incomplete,
        cost_usd=cost,
        seconds=round(time.monotonic() - start, 3),
        verified=result.verified,
        flags=result.flags,
        workspace=public.workspace if agent.uses_session else None,
        started_at=started_at,
        trajectory=result.trajectory,
    )


def verdict_for(task: Task, attempt: Attempt, ctx: EvalContext, log_dir: Path) -> Verdict:
    """Grade an attempt: evaluate a submission, record a skip or an error as what it is. The
    hack flags the agent raised while it ran go on the verdict, whatever its status."""
    verdict = _verdict(task, attempt, ctx, log_dir)
    if attempt.flags:
        flags = {*verdict.hack_flags, *attempt.flags}
        verdict.hack_flags = [f for f in HACK_FLAGS if f in flags]
    return verdict


def _verdict(task: Task, attempt: Attempt, ctx: EvalContext, log_dir: Path) -> Verdict:
    base = {
        "instance_id": task.instance_id,
        "attempt": attempt.attempt,
        "model_name_or_path": attempt.model or attempt.agent,
        "log_dir": str(log_dir),
        "executor": ctx.executor,
        "node": ctx.node,
        "base_failures": ctx.base_failures,
    }
    if attempt.status == "submitted":
        return evaluate_one(task, attempt.submission(), ctx, log_dir)
    if attempt.status == "skipped":
        why = f"the agent skipped ({attempt.stop_reason})" if attempt.stop_reason else "skipped"
        return Verdict(**base, status="unresolved", empty_patch=True, reason=why)
    if attempt.status == "agent_error":
        return Verdict(
            **base, status="agent_error", empty_patch=True, reason=f"agent error: {attempt.error}"
        )
    return Verdict(
        **base, status="error", reason=f"infrastructure error while the agent ran: {attempt.error}"
    )


def write_attempt_logs(log_dir: Path, attempt: Attempt) -> None:
    """`attempt.json` (without the trajectory) and `trajectory.jsonl` beside the eval logs."""
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "attempt.json").write_text(
        attempt.model_dump_json(indent=2, exclude={"trajectory"}), encoding="utf-8"
    )
    lines = "".join(json.dumps(e, default=str) + "\n" for e in attempt.trajectory)
    (log_dir / "trajectory.jsonl").write_text(lines, encoding="utf-8")


AttemptFn = Callable[[Attempt, Verdict], None]


class AgentExecutor(Protocol):
    """Makes and grades attempts elsewhere than this process's thread pool (executors/); the
    attempts and verdicts come back here, and this process alone writes the store."""

    def run_agent(
        self,
        run_id: str,
        todo: list[tuple[Task, int]],
        agent: Agent,
        ctx: EvalContext,
        store: Store,
        opts: AttemptOptions,
        on_attempt: AttemptFn | None,
    ) -> list[tuple[Attempt, Verdict]]: ...


def run_agent(
    run_id: str,
    tasks: Sequence[Task],
    agent: Agent,
    ctx: EvalContext,
    store: Store,
    *,
    attempts: int = 1,
    workers: int = 1,
    force: bool = False,
    opts: AttemptOptions | None = None,
    on_attempt: AttemptFn | None = None,
    executor: AgentExecutor | None = None,
) -> list[tuple[Attempt, Verdict]]:
    """Make and grade `attempts` attempts per task, skipping what the run already has.

    On KeyboardInterrupt (or any exception) queued attempts are cancelled, running sandboxes
    are ended, attempts and verdicts cut short are not saved, and the exception goes on."""
    opts = opts or AttemptOptions()
    keys = [(t, n) for t in tasks for n in range(1, attempts + 1)]
    if force:
        store.delete_attempts(run_id, [(t.instance_id, n) for t, n in keys])
    graded = {(v.instance_id, v.attempt) for v in store.verdicts(run_id) if v.status != "error"}
    todo = [(t, n) for t, n in keys if (t.instance_id, n) not in graded]
    if executor is not None:
        return executor.run_agent(run_id, todo, agent, ctx, store, opts, on_attempt)

    def job(task: Task, number: int) -> tuple[Attempt, Verdict] | None:
        if ctx.cancelled.is_set():
            return None
        log_dir = log_dir_for(ctx.runs_dir, run_id, task.instance_id, number)
        attempt = store.attempt(run_id, task.instance_id, number)
        if attempt is None or attempt.status == "infra_error":
            attempt = run_attempt(task, number, agent, ctx, opts)
            if ctx.cancelled.is_set():
                return None  # its sandbox was killed by the interruption: not an outcome
            write_attempt_logs(log_dir, attempt)
            store.save_attempt(run_id, attempt)
        try:
            verdict = verdict_for(task, attempt, ctx, log_dir)
        except Exception as exc:  # the run goes on; the verdict says what broke
            log.exception("%s: evaluation crashed", task.instance_id)
            verdict = Verdict(
                instance_id=task.instance_id,
                attempt=number,
                model_name_or_path=attempt.model or attempt.agent,
                status="error",
                reason=f"harness error: {type(exc).__name__}: {exc}",
                log_dir=str(log_dir),
                executor=ctx.executor,
                node=ctx.node,
            )
        if ctx.cancelled.is_set():
            return None  # the attempt is saved; a re-run grades it again
        store.save_verdict(run_id, verdict)
        return attempt, verdict

    done: list[tuple[Attempt, Verdict]] = []
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    futures: list[Future[tuple[Attempt, Verdict] | None]] = []
    try:
        futures = [pool.submit(job, t, n) for t, n in todo]
        for future in as_completed(futures):  # in slices: a Ctrl-C is taken at once
            pair = future.result()
            if pair is None:
                continue
            done.append(pair)
            if on_attempt:
                on_attempt(*pair)
    except BaseException:
        # As runs._cancel: the flag first, so a job that sees its sandbox die does not save.
        ctx.cancelled.set()
        pool.shutdown(wait=False, cancel_futures=True)
        kill_until_returned(futures)
        raise
    pool.shutdown()
    return done
