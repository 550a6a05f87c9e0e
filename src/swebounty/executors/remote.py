"""The driver's side of a cluster run: jobs out, outcomes in, the store written here alone.

`RemoteExecutor` is what `evaluate_run` (runs.Executor), `run_agent` (attempts.AgentExecutor)
and `validate` (batch.ValidateExecutor) hand their pending work to. Each outcome is handled
the moment it arrives, in this process, exactly as the local pool handles its own: the logs the
worker shipped are written under the runs directory, the verdict (or attempt, or validated
task) is committed, the progress callback runs. A job the cluster lost becomes an infrastructure
error (an `error` verdict, an `infra_error` attempt, an `infra` reject), which a resume redoes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from swebounty.agents import Agent
from swebounty.attempts import AttemptFn, AttemptOptions, verdict_for, write_attempt_logs
from swebounty.collect.validate import Rejected
from swebounty.evalcontext import EvalContext
from swebounty.executors.jobs import Cluster, Job, Lost
from swebounty.executors.worker import Shipped, WorkerSpec, unpack_logs
from swebounty.runs import ProgressFn, log_dir_for, shelve_logs
from swebounty.store import Store
from swebounty.tasks import Attempt, Submission, Task
from swebounty.verdicts import Verdict

log = logging.getLogger(__name__)


def _env_task(task: Task) -> Task | None:
    return None if task.kind == "pick" else task


class RemoteExecutor:
    """Runs a run's evaluations, attempts or validations as jobs on `cluster`."""

    def __init__(self, cluster: Cluster, spec: WorkerSpec) -> None:
        self.cluster = cluster
        self.spec = spec
        self.name = cluster.name

    def describe(self) -> str:
        return self.cluster.describe()

    def close(self) -> None:
        self.cluster.close()

    def __enter__(self) -> RemoteExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------- evaluations

    def evaluate(
        self,
        run_id: str,
        todo: list[tuple[Task, Submission]],
        redone: set[tuple[str, int]],
        ctx: EvalContext,
        store: Store,
        on_verdict: ProgressFn | None,
    ) -> list[Verdict]:
        verdicts: list[Verdict] = []

        def on_result(job: Job, outcome: Shipped | Lost) -> Iterable[Job]:
            task, sub = job.key
            log_dir = log_dir_for(ctx.runs_dir, run_id, task.instance_id, sub.attempt)
            if (task.instance_id, sub.attempt) in redone:
                shelve_logs(log_dir)
            verdict = _verdict(outcome, task, sub, log_dir)
            try:
                store.save_verdict(run_id, verdict)
            except Exception as exc:  # as the local pool: returned, and redone on resume
                log.exception("%s: cannot store the verdict", task.instance_id)
                verdict = verdict.model_copy(
                    update={"status": "error", "reason": f"harness error storing it: {exc!r}"}
                )
            verdicts.append(verdict)
            if on_verdict:
                on_verdict(verdict)
            return ()

        jobs = [Job("evaluate", (t, s), key=(t, s), env_task=_env_task(t)) for t, s in todo]
        self.cluster.run(self.spec, jobs, on_result)
        return verdicts

    # ---------------------------------------------------------------------- agent attempts

    def run_agent(
        self,
        run_id: str,
        todo: list[tuple[Task, int]],
        agent: Agent,
        ctx: EvalContext,
        store: Store,
        opts: AttemptOptions,
        on_attempt: AttemptFn | None,
    ) -> list[tuple[Attempt, Verdict]]:
        done: list[tuple[Attempt, Verdict]] = []

        def graded(task: Task, attempt: Attempt) -> Iterable[Job]:
            """The attempt's evaluation job; a skip or an error is graded here, at once."""
            log_dir = log_dir_for(ctx.runs_dir, run_id, task.instance_id, attempt.attempt)
            if attempt.status == "submitted":
                key = ("evaluate", task, attempt)
                return [Job("evaluate", (task, attempt.submission()), key, _env_task(task))]
            verdict = verdict_for(task, attempt, ctx, log_dir)  # runs nothing
            finish(attempt, verdict.model_copy(update={"executor": self.name}))
            return ()

        def finish(attempt: Attempt, verdict: Verdict) -> None:
            store.save_verdict(run_id, verdict)
            done.append((attempt, verdict))
            if on_attempt:
                on_attempt(attempt, verdict)

        def on_result(job: Job, outcome: Shipped | Lost) -> Iterable[Job]:
            if job.kind == "evaluate":
                _, task, attempt = job.key
                log_dir = log_dir_for(ctx.runs_dir, run_id, task.instance_id, attempt.attempt)
                finish(attempt, _verdict(outcome, task, attempt.submission(), log_dir))
                return ()
            task, number = job.key
            if isinstance(outcome, Lost):
                attempt = Attempt(
                    instance_id=task.instance_id,
                    attempt=number,
                    agent=agent.name,
                    status="infra_error",
                    stop_reason="infrastructure",
                    error=f"the Ray cluster lost the attempt: {outcome.reason}",
                )
            else:
                attempt = outcome.value
            write_attempt_logs(log_dir_for(ctx.runs_dir, run_id, task.instance_id, number), attempt)
            store.save_attempt(run_id, attempt)
            return graded(task, attempt)

        jobs: list[Job] = []
        for task, number in todo:
            stored = store.attempt(run_id, task.instance_id, number)
            if stored is None or stored.status == "infra_error":
                env = _env_task(task) if agent.uses_session else None
                jobs.append(Job("attempt", (task, number, agent, opts), (task, number), env))
            else:  # made before the run was stopped: only its grade is missing
                jobs += graded(task, stored)
        self.cluster.run(self.spec, jobs, on_result)
        return done

    # ---------------------------------------------------------------------- validation

    def validate(
        self,
        todo: list[Task],
        ctx: EvalContext,
        runs: int,
        log_root: Path,
        record: Callable[[Task, Task | Rejected], None],
    ) -> None:
        def on_result(job: Job, outcome: Shipped | Lost) -> Iterable[Job]:
            task: Task = job.key
            if isinstance(outcome, Lost):
                record(task, Rejected("infra", f"the Ray cluster lost it: {outcome.reason}"))
            else:
                unpack_logs(outcome, log_root / task.instance_id)
                record(task, outcome.value)
            return ()

        jobs = [Job("validate", (t, runs), key=t, env_task=_env_task(t)) for t in todo]
        self.cluster.run(self.spec, jobs, on_result)


def _verdict(outcome: Shipped | Lost, task: Task, sub: Submission, log_dir: Path) -> Verdict:
    """The verdict an evaluation job came back with, its logs written under `log_dir`."""
    if isinstance(outcome, Lost):
        return Verdict(
            instance_id=task.instance_id,
            attempt=sub.attempt,
            model_name_or_path=sub.model_name_or_path,
            status="error",
            empty_patch=sub.is_empty,
            reason=f"infrastructure error: the Ray cluster lost the evaluation: {outcome.reason}",
            log_dir=str(log_dir),
            executor="ray",
        )
    verdict: Verdict = outcome.value
    unpack_logs(outcome, log_dir)
    verdict = verdict.model_copy(update={"log_dir": str(log_dir)})
    # The worker wrote verdict.json with its scratch folder as log_dir: this one is the truth.
    (log_dir / "verdict.json").write_text(verdict.model_dump_json(indent=2), encoding="utf-8")
    return verdict
