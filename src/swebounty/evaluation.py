"""An evaluation from Python or the CLI: dataset + submissions -> a stored, resumable Run.

`evaluate(...)` is the one call (it returns the verdicts); `open_evaluation(...)` is the same in
steps, for callers that show progress (the `eval` command). Every input is checked before
anything runs (the dataset and submissions are loaded by evalinputs.py), and each problem is one
`EvalInputError` line naming the input at fault: an unsafe run id, a missing `repos_dir`,
`workers` below 1, a dataset without a task, an unknown task id. Bad records (a malformed line,
a prediction for a task the dataset lacks) are not fatal: they are stored with the run, named by
the file they came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from swebounty import home
from swebounty.baseline import DEFAULT_POLICY
from swebounty.evalcontext import EvalContext
from swebounty.evalinputs import (
    DEMO,
    EvalInputError,
    Submissions,
    load_dataset,
    load_submissions,
    run_conflict,
    run_datasets,
)
from swebounty.runs import ProgressFn, evaluate_run
from swebounty.store import Store, check_run_id
from swebounty.summary import run_report, write_run_report
from swebounty.tasks import RecordError, Submission, Task
from swebounty.testlimit import DEFAULT_TEST_LIMIT_S
from swebounty.verdicts import BaseFailures, Verdict

if TYPE_CHECKING:
    from swebounty.executors import ExecutorConfig
    from swebounty.executors.remote import RemoteExecutor

UNKNOWN_TASK = "no task with this instance_id in the dataset"


def default_run_id(label: str, kind: str) -> str:
    """`<dataset stem>-<kind>`, made a safe name."""
    if label.startswith("hf://"):  # hf://owner/name:split -> name-split
        repo_id, _, split = label.removeprefix("hf://").partition(":")
        stem = f"{repo_id.split('/')[-1]}-{split}"
    elif label.startswith(DEMO):
        stem = label
    else:
        stem = Path(label).stem
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{stem}-{kind}").strip("-._")
    return safe[:128] or f"run-{kind}"


@dataclass
class Evaluation:
    """A checked, opened evaluation: its tasks, the submissions paired with them, the run."""

    run_id: str
    dataset: str
    tasks: list[Task]
    pairs: list[tuple[Task, Submission]]
    record_errors: list[RecordError]
    ctx: EvalContext
    store: Store
    unsafe: bool
    workers: int = 1
    unknown_ids: list[str] = field(default_factory=list)
    # Every task of the dataset (`tasks` may be a chosen few): report.json covers the run.
    dataset_tasks: list[Task] = field(default_factory=list)
    executor: RemoteExecutor | None = None  # None: this process's thread pool

    def pending(self, *, force: bool = False, retry_errors: bool = True) -> int:
        """How many attempts a `run` with these options would evaluate."""
        if force:
            return len(self.pairs)
        statuses = self.store.statuses(self.run_id)
        redo = {None, "error"} if retry_errors else {None}
        return sum(statuses.get((t.instance_id, s.attempt)) in redo for t, s in self.pairs)

    def run(
        self,
        *,
        force: bool = False,
        retry_errors: bool = True,
        on_verdict: ProgressFn | None = None,
    ) -> list[Verdict]:
        """Evaluate what is pending; the verdicts produced now. Ctrl-C stops it cleanly (the
        KeyboardInterrupt goes on after queued attempts are cancelled and sandboxes ended)."""
        return evaluate_run(
            self.run_id,
            self.pairs,
            self.ctx,
            self.store,
            workers=self.workers,
            force=force,
            retry_errors=retry_errors,
            on_verdict=on_verdict,
            executor=self.executor,
        )

    def verdicts(self) -> list[Verdict]:
        """Every verdict the run holds for this evaluation's tasks."""
        ids = {t.instance_id for t in self.tasks}
        return [v for v in self.store.verdicts(self.run_id) if v.instance_id in ids]

    @property
    def report_path(self) -> Path:
        return self.ctx.runs_dir / self.run_id / "report.json"

    def write_report(self) -> dict[str, Any]:
        """Write the run's report.json (SWE-bench's summary fields and ours); return it."""
        tasks = self.dataset_tasks or self.tasks
        ids = {t.instance_id for t in tasks}  # not only the chosen few: -i redoes one task
        report = run_report(
            self.run_id,
            tasks,
            self.store.submissions(self.run_id),
            [v for v in self.store.verdicts(self.run_id) if v.instance_id in ids],
            self.store.record_errors(self.run_id),
            sandbox=self.ctx.sandbox.name,
            unsafe=self.unsafe,
            unknown_instance_ids=self.unknown_ids,
        )
        write_run_report(self.report_path, report)
        return report

    def close(self) -> None:
        if self.executor is not None:
            self.executor.close()
        self.ctx.close()
        self.store.close()

    def __enter__(self) -> Evaluation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_evaluation(
    dataset: str | Path,
    submissions: Submissions = "gold",
    *,
    run_id: str | None = None,
    split: str = "test",
    instance_ids: Iterable[str] | None = None,
    home_dir: Path | None = None,
    runs_dir: Path | None = None,
    cache_dir: Path | None = None,
    repos_dir: Path | None = None,
    workers: int = 1,
    timeout_s: float = 1800.0,
    test_limit_s: float | None = DEFAULT_TEST_LIMIT_S,
    unsafe: bool = False,
    python_dirs: Sequence[Path] = (),
    keep_test_infra: bool = False,
    base_failures: BaseFailures = DEFAULT_POLICY,
    executor: ExecutorConfig | str = "local",
    add_to_run: bool = False,
    sources_dir: Path | None = None,
) -> Evaluation:
    """Check every input, load the dataset and submissions, open the run in the store.

    `keep_test_infra` grades with the submission's test infrastructure (conftest.py, pytest
    configuration, plugins) instead of the base commit's; it stays flagged.
    `base_failures` says which PASS_TO_PASS tests that fail on the unpatched base too, in the
    same environment, are excused (baseline.py): `network` (those that failed for want of the
    network), `strict` (none) or `all`; the run's config records it, and a run that holds
    verdicts graded under another policy is refused (its scores would mix). `executor`:
    "local" (a thread pool of `workers`), "ray" (a local Ray cluster of `workers` processes) or
    an ExecutorConfig (an existing cluster's address, each task's CPUs and memory).
    A run is one dataset: an existing run that holds another dataset's tasks is refused,
    unless `add_to_run` adds this dataset's tasks to it.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise EvalInputError(f"workers must be 1 or more, not {workers!r}")
    config = _executor_config(executor)
    if timeout_s <= 0:
        raise EvalInputError(f"the timeout must be positive, not {timeout_s}")
    if run_id is not None:
        try:
            check_run_id(run_id)
        except ValueError as exc:
            raise EvalInputError(str(exc)) from None
    if repos_dir is not None and not Path(repos_dir).expanduser().is_dir():
        raise EvalInputError(
            f"repos dir {repos_dir} does not exist: give the folder holding your clones "
            "(named owner__name or owner/name)"
        )
    cache = home.cache_dir(home_dir, cache_dir)
    runs = home.runs_dir(home_dir, runs_dir)
    try:
        tasks, errors, demo_repos, label = load_dataset(str(dataset), cache, split=split)
    except (FileNotFoundError, ValueError, ImportError) as exc:
        raise EvalInputError(str(exc)) from exc
    if not tasks:
        why = ""
        if errors:
            first = errors[0]
            why = f"; {len(errors)} unreadable record(s), first {first.where}: {first.message}"
        raise EvalInputError(f"dataset {dataset} holds no task{why}")
    dataset_tasks = tasks
    wanted = set(instance_ids or ())
    if wanted:
        unknown = wanted - {t.instance_id for t in tasks}
        if unknown:
            raise EvalInputError(f"no task named {', '.join(sorted(unknown))} in {dataset}")
        tasks = [t for t in tasks if t.instance_id in wanted]

    subs, sub_errors, by_file, kind = load_submissions(tasks, submissions)
    errors += sub_errors
    if wanted:
        subs = [s for s in subs if s.instance_id in wanted]
    known = {t.instance_id: t for t in tasks}
    unknown_ids: list[str] = []
    for source, loaded in by_file:
        for sub in loaded:
            if sub.instance_id not in known and (not wanted or sub.instance_id in wanted):
                unknown_ids.append(sub.instance_id)
                errors.append(
                    RecordError(
                        source=source,
                        where=sub.instance_id,
                        message=f"{UNKNOWN_TASK} {dataset}; check the instance_id",
                    )
                )
    pairs = [(known[s.instance_id], s) for s in subs if s.instance_id in known]
    run_id = run_id if run_id is not None else default_run_id(label, kind)

    try:
        ctx = EvalContext.create(
            cache_dir=cache,
            runs_dir=runs,
            repos_dir=repos_dir or demo_repos,
            sandbox="unsafe" if unsafe else "bwrap",
            workers=workers,
            timeout_s=timeout_s,
            test_limit_s=test_limit_s,
            python_dirs=python_dirs,
            keep_test_infra=keep_test_infra,
            base_failures=base_failures,
            sources_dir=sources_dir,
        )
    except RuntimeError as exc:
        raise EvalInputError(str(exc)) from exc
    store = Store.open(ctx.runs_dir / "runs.sqlite")
    problem = run_conflict(store, run_id, label, base_failures, add=add_to_run)
    if problem:
        store.close()
        ctx.close()
        raise EvalInputError(problem)
    try:
        remote = _open_executor(config, ctx, workers)
    except EvalInputError:
        store.close()
        raise
    before = store.run(run_id)
    datasets = run_datasets(before) if before and store.submissions(run_id) else [label]
    store.ensure_run(
        run_id,
        dataset=datasets[0],
        config={
            "added_datasets": [*datasets[1:], *([] if label in datasets else [label])],
            "kind": kind,
            "repos_dir": str(ctx.repos_dir or ""),
            "timeout": timeout_s,
            "test_limit": test_limit_s,
            "keep_test_infra": keep_test_infra,
            "base_failures": base_failures,
            "executor": config.model_dump(exclude_defaults=True) | {"kind": config.kind},
        },
        sandbox=ctx.sandbox.name,
        unsafe=unsafe,
    )
    for err in errors:
        store.add_record_error(run_id, err)
    return Evaluation(
        run_id=run_id,
        dataset=label,
        tasks=tasks,
        pairs=pairs,
        record_errors=errors,
        ctx=ctx,
        store=store,
        unsafe=unsafe,
        workers=workers,
        unknown_ids=sorted(set(unknown_ids)),
        dataset_tasks=dataset_tasks,
        executor=remote,
    )


def _executor_config(executor: ExecutorConfig | str) -> ExecutorConfig:
    from swebounty.executors import EXECUTORS, ExecutorConfig

    if isinstance(executor, ExecutorConfig):
        config = executor
    elif executor in EXECUTORS:
        config = ExecutorConfig(kind=executor)
    else:
        raise EvalInputError(f"executor {executor!r}: choose {' or '.join(EXECUTORS)}")
    problem = config.problem()
    if problem:
        raise EvalInputError(problem)
    return config


def _open_executor(config: ExecutorConfig, ctx: EvalContext, workers: int) -> RemoteExecutor | None:
    """The cluster of a Ray run (its start-up takes seconds); the context is closed if not."""
    if not config.remote:
        return None
    from swebounty.executors import ExecutorError, open_executor

    try:
        return open_executor(config, ctx, workers=workers)
    except (ExecutorError, ImportError) as exc:
        ctx.close()
        raise EvalInputError(str(exc)) from exc


def evaluate(
    dataset: str | Path,
    submissions: Submissions = "gold",
    *,
    run_id: str | None = None,
    force: bool = False,
    retry_errors: bool = True,
    on_verdict: ProgressFn | None = None,
    split: str = "test",
    instance_ids: Iterable[str] | None = None,
    home_dir: Path | None = None,
    runs_dir: Path | None = None,
    cache_dir: Path | None = None,
    repos_dir: Path | None = None,
    workers: int = 1,
    timeout_s: float = 1800.0,
    test_limit_s: float | None = DEFAULT_TEST_LIMIT_S,
    unsafe: bool = False,
    python_dirs: Sequence[Path] = (),
    base_failures: BaseFailures = DEFAULT_POLICY,
    executor: ExecutorConfig | str = "local",
    add_to_run: bool = False,
    sources_dir: Path | None = None,
) -> list[Verdict]:
    """Evaluate `submissions` on `dataset` and return the run's verdicts for its tasks.

    `dataset`: a SWE-bench file (.json/.jsonl/.parquet), "demo", or a Hugging Face dataset
    name read from the local cache. `submissions`: "gold", "empty", predictions file(s), or
    `Submission` objects. Resumable like the CLI: a finished attempt is not redone (an `error`
    is, unless `retry_errors=False`; `force=True` redoes all). Runs and caches live under
    `home_dir` ($SWEBOUNTY_HOME) unless `runs_dir` / `cache_dir` say otherwise. Writes the
    run's report.json. Raises EvalInputError for an input that cannot work. `executor="ray"`
    runs it on a local Ray cluster (an `ExecutorConfig` names an existing one).
    `base_failures`: which PASS_TO_PASS tests failing on the unpatched base too are excused:
    "network" (the default: those that failed there for want of the network), "strict" (none:
    verdicts as SWE-bench's) or "all" (see baseline.py). A run is one dataset: `add_to_run`
    adds this dataset's tasks to an existing run of another.
    """
    with open_evaluation(
        dataset,
        submissions,
        run_id=run_id,
        split=split,
        instance_ids=instance_ids,
        home_dir=home_dir,
        runs_dir=runs_dir,
        cache_dir=cache_dir,
        repos_dir=repos_dir,
        workers=workers,
        timeout_s=timeout_s,
        test_limit_s=test_limit_s,
        unsafe=unsafe,
        python_dirs=python_dirs,
        base_failures=base_failures,
        executor=executor,
        add_to_run=add_to_run,
        sources_dir=sources_dir,
    ) as ev:
        try:
            ev.run(force=force, retry_errors=retry_errors, on_verdict=on_verdict)
        finally:
            ev.write_report()
        return ev.verdicts()
