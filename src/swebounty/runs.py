"""Evaluate submissions: one attempt = fresh workspace → environment → patch → sandboxed tests → verdict.

What an evaluation needs besides the task and the patch is an `EvalContext` (evalcontext.py).
`run_tests` is the shared step (also used by task validation); `evaluate_one` grades one
submission; `evaluate_run` drives a whole Run through a local thread pool (or hands the attempts
to an `Executor`: executors/ runs them on a Ray cluster), committing every verdict to the store
the moment it exists so a killed run resumes with nothing lost. An
interrupted run (Ctrl-C) cancels what is queued, ends the sandboxes that are running and
saves nothing half-done; resuming re-evaluates `error` verdicts (the earlier one stays in the
store's history).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from swebounty.baseline import attribute, defect_at_base, excuse, remember_base
from swebounty.completion import completed_run
from swebounty.evalcontext import EvalContext
from swebounty.frameworks import grade_run
from swebounty.grading import grade
from swebounty.interruptible import as_completed
from swebounty.leftout import confirm_left_out
from swebounty.limitations import limitation
from swebounty.needs import cannot_run, missing
from swebounty.outcomes import swebench_instance_report
from swebounty.sandbox._process import kill_until_returned
from swebounty.services.models import unanswered_said
from swebounty.store import Store
from swebounty.tasks import RecordError, Submission, Task
from swebounty.testrun import build_task_env, run_tests
from swebounty.verdicts import Verdict

# build_task_env and run_tests are testrun.py's: listed here because the executors, `envs build`
# and validation import them from this module.
__all__ = [
    "Executor",
    "build_task_env",
    "evaluate_one",
    "evaluate_run",
    "evaluate_safely",
    "run_tests",
]

log = logging.getLogger(__name__)

# How long an `error` waits to learn whether an interruption caused it (errors are rare). On a
# loaded machine the main thread took more than 0.5 s to mark the run cancelled (CI's
# unprivileged pass saved such an error once); a real error only waits this long once.
_INTERRUPT_SETTLE_S = 3.0


def log_dir_for(runs_dir: Path, run_id: str, instance_id: str, attempt: int) -> Path:
    """`runs_dir/run_id/instance_id[.attempt-N]`; ids that could leave `runs_dir` are refused
    (Task and Submission already refuse them; this is the last line)."""
    for part in (run_id, instance_id):
        if not part or "/" in part or "\0" in part or part in (".", ".."):
            raise ValueError(f"{part!r} cannot name a folder under {runs_dir}")
    name = instance_id if attempt == 1 else f"{instance_id}.attempt-{attempt}"
    return runs_dir / run_id / name


def evaluate_one(task: Task, submission: Submission, ctx: EvalContext, log_dir: Path) -> Verdict:
    """Grade one submission in a fresh workspace."""
    start = time.monotonic()
    if lacks := missing(task, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir):
        # Said before any work: everything the machine lacks, not the first thing that fails.
        verdict = Verdict(instance_id=task.instance_id, attempt=submission.attempt,
                          model_name_or_path=submission.model_name_or_path, status="error",
                          empty_patch=submission.is_empty, reason=cannot_run(lacks),
                          base_failures=ctx.base_failures)  # fmt: skip
        return _finish(verdict, submission, ctx, log_dir, start)
    if task.kind == "pick":
        verdict = grade(task, submission, outcomes=None, exit_code=None, patch_method=None)
    else:
        tr = run_tests(task, submission.model_patch or "", ctx, log_dir)
        # The base skips expected tests for want of a package the environment then gets.
        rerun = functools.partial(run_tests, task, submission.model_patch or "", ctx, log_dir)
        tr = completed_run(task, tr, ctx, rerun, is_base=submission.is_empty)
        attribute(task, submission.model_patch or "", ctx, tr, log_dir)
        verdict = grade_run(task, submission, tr)
        verdict.env_key = tr.env_key
        verdict.test_infra_reverted = tr.test_infra_reverted
        verdict.services = tr.services
        if (said := unanswered_said(tr.services)) and verdict.status != "resolved":
            verdict.reason = f"{verdict.reason}; {said}" if verdict.reason else said
        kept = log_dir / "artifacts"  # screenshots and traces a framework kept
        verdict.artifacts = sorted(
            p.relative_to(log_dir).as_posix() for p in kept.rglob("*") if p.is_file()
        )
    if task.kind == "pick":
        verdict.base_failures = ctx.base_failures  # nothing to excuse: no tests
    else:
        if submission.is_empty:
            remember_base(task, ctx, tr, log_dir)  # the very run a base run would make
        verdict = limitation(task, verdict, tr, ctx)
        verdict = confirm_left_out(task, excuse(task, verdict, tr, ctx), tr, ctx)
        verdict = defect_at_base(task, verdict, tr, ctx)
    return _finish(verdict, submission, ctx, log_dir, start)


def _finish(
    verdict: Verdict, submission: Submission, ctx: EvalContext, log_dir: Path, start: float
) -> Verdict:
    """Stamp where and how long `verdict` was made, and write it beside the logs."""
    verdict.seconds = time.monotonic() - start
    verdict.log_dir = str(log_dir)
    verdict.sandbox = ctx.sandbox.name
    verdict.executor, verdict.node = ctx.executor, ctx.node
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "verdict.json").write_text(verdict.model_dump_json(indent=2), encoding="utf-8")
    # SWE-bench's per-instance report beside ours, for tools that read its evaluation logs.
    report = swebench_instance_report(submission, verdict)
    (log_dir / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return verdict


def evaluate_safely(task: Task, submission: Submission, ctx: EvalContext, log_dir: Path) -> Verdict:
    """`evaluate_one`, with a crash of the harness turned into an `error` verdict."""
    try:
        return evaluate_one(task, submission, ctx, log_dir)
    except Exception as exc:  # the run goes on; the verdict says what broke
        log.exception("%s: evaluation crashed", task.instance_id)
        # Built by hand, not by grading.grade: the crash may have come from grade itself.
        return Verdict(
            instance_id=task.instance_id,
            attempt=submission.attempt,
            model_name_or_path=submission.model_name_or_path,
            status="error",
            empty_patch=submission.is_empty,
            reason=f"harness error: {type(exc).__name__}: {exc}",
            log_dir=str(log_dir),
            executor=ctx.executor,
            node=ctx.node,
            base_failures=ctx.base_failures,
        )


ProgressFn = Callable[[Verdict], None]


class Executor(Protocol):
    """Runs a run's pending attempts elsewhere than this process's thread pool (a Ray cluster:
    executors/). It returns each verdict to this process, which alone writes the store."""

    def evaluate(
        self,
        run_id: str,
        todo: list[tuple[Task, Submission]],
        redone: set[tuple[str, int]],
        ctx: EvalContext,
        store: Store,
        on_verdict: ProgressFn | None,
    ) -> list[Verdict]:
        """Evaluate `todo`, save each verdict the moment it arrives (`redone`: the keys that
        had a verdict before, whose logs are shelved first); return the verdicts."""
        ...


def pair_submissions(
    tasks: list[Task], submissions: list[Submission], source: str
) -> tuple[list[tuple[Task, Submission]], list[RecordError]]:
    """Match submissions to tasks; an unknown task id is a record error, not a crash."""
    by_id = {t.instance_id: t for t in tasks}
    pairs, errors = [], []
    for sub in submissions:
        task = by_id.get(sub.instance_id)
        if task is None:
            errors.append(
                RecordError(
                    source=source,
                    where=sub.instance_id,
                    message="no task with this instance_id in the dataset; check the dataset",
                )
            )
            continue
        pairs.append((task, sub))
    return pairs, errors


def evaluate_run(
    run_id: str,
    pairs: list[tuple[Task, Submission]],
    ctx: EvalContext,
    store: Store,
    *,
    workers: int = 1,
    force: bool = False,
    retry_errors: bool = True,
    on_verdict: ProgressFn | None = None,
    executor: Executor | None = None,
) -> list[Verdict]:
    """Evaluate every pair of `run_id` without a final verdict, committing each at once.

    A pair whose verdict is `error` (the harness failed, not the submission) is evaluated
    again unless `retry_errors` is False; `force` redoes every pair. Replaced verdicts stay in
    the store's history. On KeyboardInterrupt (or any exception) queued attempts are cancelled,
    running sandboxes are ended, attempts cut short are not saved, and the exception goes on.
    """
    accepted = []
    for task, sub in pairs:
        try:
            store.add_submission(run_id, sub)
        except Exception as exc:  # one bad record must not stop the others (nor a resume)
            log.exception("%s: cannot store the submission", sub.instance_id)
            store.add_record_error(
                run_id,
                RecordError(source="submissions", where=sub.instance_id, message=repr(exc)[:500]),
            )
            continue
        accepted.append((task, sub))
    pairs = accepted
    keys = [(t.instance_id, s.attempt) for t, s in pairs]
    if force:
        store.delete_verdicts(run_id, keys)
    statuses = store.statuses(run_id)
    redo = {None, "error"} if retry_errors else {None}
    todo = [(t, s) for t, s in pairs if statuses.get((t.instance_id, s.attempt)) in redo]
    todo = interleaved(todo) if workers > 1 else todo
    if executor is not None:
        return executor.evaluate(run_id, todo, set(statuses), ctx, store, on_verdict)

    def job(task: Task, sub: Submission) -> Verdict | None:
        if ctx.cancelled.is_set():
            return None
        log_dir = log_dir_for(ctx.runs_dir, run_id, task.instance_id, sub.attempt)
        if (task.instance_id, sub.attempt) in statuses:
            shelve_logs(log_dir)
        verdict = evaluate_safely(task, sub, ctx, log_dir)
        if ctx.cancelled.is_set():
            return None  # cut short by the interruption: not an outcome; a re-run redoes it
        if verdict.status == "error" and ctx.cancelled.wait(_INTERRUPT_SETTLE_S):
            # Ctrl-C reaches the whole process group at once: a git or uv this worker started
            # can die of it a moment before the main thread marks the run cancelled.
            return None
        try:
            store.save_verdict(run_id, verdict)
        except Exception as exc:  # the verdict is still returned; the next resume redoes it
            log.exception("%s: cannot store the verdict", task.instance_id)
            verdict = verdict.model_copy(
                update={"status": "error", "reason": f"harness error storing the verdict: {exc!r}"}
            )
        return verdict

    verdicts: list[Verdict] = []
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    futures: list[Future[Verdict | None]] = []
    try:
        futures = [pool.submit(job, t, s) for t, s in todo]
        for future in as_completed(futures):
            verdict = future.result()
            if verdict is None:
                continue
            verdicts.append(verdict)
            if on_verdict:
                on_verdict(verdict)
    except BaseException:
        _cancel(ctx, pool, futures)
        raise
    finally:
        _drain(ctx)
    pool.shutdown()
    return verdicts


def interleaved(pairs: list[tuple[Task, Submission]]) -> list[tuple[Task, Submission]]:
    """The pairs taken round-robin across repositories, in order within each.

    A dataset is sorted by repository (Lite: 114 django tasks in a row). Workers taking
    neighbours would mostly wait on one environment build (the same spec is built once, under
    a lock) while nothing else runs; taken across repositories, one worker builds an
    environment while the others evaluate with environments that are ready, or build theirs."""
    by_repo: dict[str, list[tuple[Task, Submission]]] = {}
    for pair in pairs:
        by_repo.setdefault(pair[0].repo, []).append(pair)
    queues = list(by_repo.values())
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def _drain(ctx: EvalContext) -> None:
    """Wait for the workspaces still being removed (remover.py): a run leaves none behind."""
    remover = getattr(ctx, "remover", None)
    if remover is not None:
        remover.drain()


def _cancel(
    ctx: EvalContext, pool: ThreadPoolExecutor, futures: list[Future[Verdict | None]]
) -> None:
    """Stop a run now: drop queued attempts, end running sandboxes, let running jobs return."""
    ctx.cancelled.set()  # first: a job that sees its sandbox die then knows not to save
    pool.shutdown(wait=False, cancel_futures=True)
    kill_until_returned(futures)


def shelve_logs(log_dir: Path) -> None:
    """Move an attempt's earlier logs aside (to `<log_dir>.before-<n>`) before it is redone."""
    if not log_dir.exists():
        return
    n = 1
    while (shelved := log_dir.with_name(f"{log_dir.name}.before-{n}")).exists():
        n += 1
    try:
        log_dir.rename(shelved)
    except OSError as exc:
        log.warning("could not keep the earlier logs of %s: %s", log_dir, exc)
