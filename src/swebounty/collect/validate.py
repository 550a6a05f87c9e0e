"""Validate candidates: run the hidden tests before and after the reference patch, several times.

FAIL_TO_PASS: failed or errored (or could not even be collected) in every run before, passed in
every run after. PASS_TO_PASS: passed in every run before and after. A test whose status differs
between runs of the same phase is flaky: recorded in `flaky_tests`, never graded.

Two before-runs without per-test results are still read, as SWE-bench does:
- test modules of the patch that fail to import before the fix (they import a name the fix
  adds) while the after-run runs them: their tests that pass after are FAIL_TO_PASS;
- a test process killed by a signal (a segfault the fix removes) while the after-runs are clean.
Then every before-run is made per test module of the patch (`per_file`), so one broken module
does not hide the others' results; a module that fails to import or crashes on its own counts
all its tests as failing before.

A candidate is rejected (with its reason in the rejects file) when its test patch has no test
module the harness runs, when the before-run collects no test for another reason (a module
outside the test patch fails to import, or the patch's modules fail to import after the fix as
well), when the reference patch does not apply, when no test goes from failing to passing, or
when the harness reports an infrastructure error (stage "infra", retried by `retry_errors`).
Two runs come first (one before, one after): if they show no FAIL_TO_PASS, further runs cannot
create one, so the candidate is rejected without them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from swebounty.collect.per_file import crashed, patch_for_file, same_file
from swebounty.collect.sink import Sink
from swebounty.tasks import Task

if TYPE_CHECKING:
    from swebounty.evalcontext import EvalContext

log = logging.getLogger(__name__)

FAILING = ("failed", "error", "missing")


class _Outcome(Protocol):
    status: str


class _TestRun(Protocol):
    outcomes: dict[str, Any]
    exit_code: int | None
    error: str | None
    patch_error: str | None


Runner = Callable[[Task, str, "EvalContext", Path], _TestRun]


class Rejected(Exception):
    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason

    def __reduce__(self) -> tuple[type[Rejected], tuple[str, str]]:
        # Pickled as (stage, reason): a Ray worker returns it to the driver.
        return Rejected, (self.stage, self.reason)


@dataclass
class Classified:
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    flaky: list[str]


def statuses(run: _TestRun) -> dict[str, str]:
    return {tid: str(getattr(o, "status", o)) for tid, o in run.outcomes.items()}


def classify(before: Sequence[dict[str, str]], after: Sequence[dict[str, str]]) -> Classified:
    """F2P, P2P and flaky test ids from per-run statuses (a test absent from a run is
    "missing" there)."""
    ids = sorted({t for run in [*before, *after] for t in run})
    f2p, p2p, flaky = [], [], []
    for tid in ids:
        b = [run.get(tid, "missing") for run in before]
        a = [run.get(tid, "missing") for run in after]
        if len(set(b)) > 1 or len(set(a)) > 1:
            flaky.append(tid)
        elif all(s == "passed" for s in a):
            if all(s in FAILING for s in b):
                f2p.append(tid)
            elif all(s == "passed" for s in b):
                p2p.append(tid)
    return Classified(f2p, p2p, flaky)


def _collected(run: dict[str, str]) -> bool:
    # A module that fails to import is reported under its file path, without "::".
    return any("::" in tid for tid in run)


def _broken_modules(run: dict[str, str]) -> list[str]:
    return sorted(tid for tid, status in run.items() if "::" not in tid and status == "error")


def _check(run: _TestRun, phase: str) -> dict[str, str]:
    if run.patch_error:
        raise Rejected("patch", f"the reference patch does not apply: {run.patch_error}")
    if run.error:
        raise Rejected("infra", f"{phase}-run failed: {run.error}")
    return statuses(run)


def _per_file_reason(probe: _TestRun, files: list[str]) -> str | None:
    """Why the before state must be run per test module ("import" or "crash"), None when the
    whole before-run is usable; Rejected when it is hopeless."""
    if probe.patch_error:
        _check(probe, "before")
    if probe.error:
        if crashed(probe.exit_code, probe.error):
            return "crash"
        _check(probe, "before")
    run = statuses(probe)
    if _collected(run):
        return None
    broken = _broken_modules(run)
    outside = [m for m in broken if not any(same_file(m, f) for f in files)]
    if broken and not outside:
        return "import"
    errors = ", ".join(sorted(run)[:3]) or "no test result"
    raise Rejected("collect", f"the before-run collects no test ({errors})")


def _check_import_fixed(probe: _TestRun, after: dict[str, str]) -> None:
    """The test modules that did not import before must run after the fix: else the environment
    (not the missing name) is what breaks them."""
    broken = _broken_modules(statuses(probe))
    ran = {tid.split("::", 1)[0] for tid in after if "::" in tid}
    if not any(same_file(m, f) for m in broken for f in ran):
        raise Rejected(
            "collect",
            f"the test modules fail to import before and after the reference patch "
            f"({', '.join(broken[:3])})",
        )


def _file_state(run: _TestRun, file: str) -> dict[str, str]:
    """Statuses of one module's before-run; a crash counts every test of the module as failing
    (the file-level key stands for them, as for an import error)."""
    if crashed(run.exit_code, run.error):
        log.info("%s crashes before the fix: %s", file, run.error)
        return {file: "error"}
    return _check(run, f"before ({file})")


def _before(
    task: Task,
    ctx: EvalContext,
    log_dir: Path,
    runner: Runner,
    files: list[str],
    *,
    i: int,
    per_file: bool,
    probe: _TestRun | None,
) -> dict[str, str]:
    """The before state of run `i`: one run of all modules, or one run per module. `probe` is
    the first whole run, reused where it is the same run."""
    if not per_file:
        run = probe or runner(task, "", ctx, log_dir / f"before-{i}")
        return _check(run, "before")
    if len(files) == 1:
        run = probe or runner(task, "", ctx, log_dir / f"before-{i}")
        return _file_state(run, files[0])
    state: dict[str, str] = {}
    for file in files:
        alone = task.model_copy(update={"test_patch": patch_for_file(task.test_patch, file, files)})
        slug = file.replace("/", "_")
        state.update(_file_state(runner(alone, "", ctx, log_dir / f"before-{i}-{slug}"), file))
    return state


def validate_one(
    task: Task,
    ctx: EvalContext,
    log_dir: Path,
    *,
    runs: int = 3,
    runner: Runner | None = None,
) -> Task:
    """The task with FAIL_TO_PASS, PASS_TO_PASS, flaky_tests and validation set, or Rejected."""
    if runner is None:
        from swebounty.runs import run_tests

        runner = run_tests
    if task.ecosystem == "node":
        from swebounty.node.evaluate import js_test_files as test_files
    else:
        from swebounty.testing import test_files

    files = test_files(task.test_patch)
    if not files:
        # Nothing the harness would run: say so now rather than as six failed runs.
        raise Rejected("tests", "the test patch changes no test module the harness can run")
    start = time.monotonic()
    probe = runner(task, "", ctx, log_dir / "before-1")
    reason = _per_file_reason(probe, files)
    before: list[dict[str, str]] = []
    after: list[dict[str, str]] = []
    for i in range(1, runs + 1):
        # Run 1's whole before-run is the probe; per-module reruns wait for a clean after-run.
        a: dict[str, str] | None = None
        if i == 1:
            a = _check(runner(task, task.patch, ctx, log_dir / "after-1"), "after")
            if reason == "import":
                _check_import_fixed(probe, a)
        b = _before(
            task,
            ctx,
            log_dir,
            runner,
            files,
            i=i,
            per_file=reason is not None,
            probe=probe if i == 1 else None,
        )
        if a is None:
            a = _check(runner(task, task.patch, ctx, log_dir / f"after-{i}"), "after")
        before.append(b)
        after.append(a)
        result = classify(before, after)
        if not result.fail_to_pass:
            why = "flaky" if result.flaky and i > 1 else "no test fails before and passes after"
            raise Rejected("no_f2p", f"no FAIL_TO_PASS after {i} run(s) each ({why})")
    validation: dict[str, Any] = {"runs": runs, "seconds": round(time.monotonic() - start, 1)}
    if reason is not None:
        validation["before_per_file"] = reason
    return task.model_copy(
        update={
            "FAIL_TO_PASS": result.fail_to_pass,
            "PASS_TO_PASS": result.pass_to_pass,
            "flaky_tests": result.flaky,
            "validation": validation,
        }
    )


def validate_or_reject(
    task: Task, ctx: EvalContext, log_dir: Path, runs: int = 3, runner: Runner | None = None
) -> Task | Rejected:
    """`validate_one`, with its rejection (or a crash of the harness) as the result."""
    try:
        return validate_one(task, ctx, log_dir, runs=runs, runner=runner)
    except Rejected as rej:
        return rej
    except Exception as exc:  # one broken candidate must not stop the others
        log.exception("%s: validation crashed", task.instance_id)
        return Rejected("infra", f"harness error: {type(exc).__name__}: {exc}")


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

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "valid": self.valid,
            "resumed": self.resumed,
            "rejected": self.rejected,
            "seconds": round(self.seconds, 1),
        }


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
) -> ValidateSummary:
    """Validate every candidate not already decided in `output`/`rejects` (resumable), in
    parallel across `workers` (or on `executor`'s cluster). `on_done(instance_id, outcome)`
    reports each one."""
    rejects = rejects or output.with_name(output.stem + ".rejects.jsonl")
    log_root = log_root or ctx.runs_dir / "validate"
    sink = Sink(
        output,
        rejects,
        forget=(lambda r: r.get("stage") == "infra") if retry_errors else None,
        fresh=fresh,
        only={t.instance_id for t in candidates},
    )
    summary = ValidateSummary(candidates=len(candidates))
    todo = [t for t in candidates if t.instance_id not in sink.known]
    summary.resumed = len(candidates) - len(todo)
    start = time.monotonic()

    def record(task: Task, result: Task | Rejected) -> None:
        if isinstance(result, Rejected):
            sink.reject(
                {
                    "instance_id": task.instance_id,
                    "repo": task.repo,
                    "stage": result.stage,
                    "reason": result.reason,
                    "log_dir": str(log_root / task.instance_id),
                }
            )
            summary.rejected[result.stage] = summary.rejected.get(result.stage, 0) + 1
            outcome = f"rejected: {result.reason}"
        else:
            sink.add(result)
            summary.valid += 1
            outcome = f"valid: {len(result.FAIL_TO_PASS)} F2P, {len(result.PASS_TO_PASS)} P2P"
        if on_done is not None:
            on_done(task.instance_id, outcome)

    if executor is not None:
        executor.validate(todo, ctx, runs, log_root, record)
    else:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = {
                pool.submit(validate_or_reject, t, ctx, log_root / t.instance_id, runs, runner): t
                for t in todo
            }
            for future in as_completed(futures):
                record(futures[future], future.result())
    sink.finish()
    summary.seconds = time.monotonic() - start
    return summary
