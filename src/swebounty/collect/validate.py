"""Validate candidates: run the hidden tests before and after the reference patch, several times.

FAIL_TO_PASS: failed or errored (or could not even be collected) in every run before, passed in
every run after. PASS_TO_PASS: passed in every run before and after. A test whose outcome (passed,
failing in any of those ways, skipped) differs between runs of the same phase is flaky, and so is
every case of a parametrized test with a flaky case: recorded in `flaky_tests`, never graded.

Three before-runs without per-test results are still read, as SWE-bench does:
- test modules of the patch that fail to import before the fix (they import a name the fix
  adds) while the after-run runs them: their tests that pass after are FAIL_TO_PASS;
- a conftest.py of the tests that fails to import before the fix (the test patch makes it, or
  a helper it imports, import a name the fix adds: pint-2264), so that pytest stops before
  collecting anything (exit code 4, read as every test file failing to collect), while the
  after-run collects and runs them: every test the after-run ran in the patch's test files
  fails before, and those that pass after are FAIL_TO_PASS (then the gates decide, as for any
  candidate: too many FAIL_TO_PASS, stability). The reason is `validation.before_not_loaded`.
  When the after-run cannot import a conftest.py either, the environment lacks what it
  imports: rejected as an infrastructure error;
- a test process killed by a signal (a segfault the fix removes) while the after-runs are clean.
A test stopped at the per-test time limit (pytest_guard/timelimit.py: it hung, a deadlock the
fix removes) is a failing test like any other, and its run goes on; `validation.time_limited`
names such tests per phase.
Then every before-run of the first two kinds is made per test module of the patch (`per_file`),
so one broken module does not hide the others' results; a module that fails to import or
crashes on its own counts all its tests as failing before. A conftest.py stops every module
alike: those before-runs stay whole. Any other before-run without results (a timeout, a crash
of the harness or the sandbox, a usage error) is an infrastructure error.

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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from swebounty.collect.costs import Meter
from swebounty.collect.gates import network_failures
from swebounty.collect.per_file import crashed, patch_for_file, same_file
from swebounty.tasks import Task
from swebounty.testing import not_loaded
from swebounty.testlimit import stopped

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
    """Why a candidate is not a task; `facts` says what validating it cost (costs.py)."""

    def __init__(self, stage: str, reason: str, facts: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason
        self.facts: dict[str, Any] = dict(facts or {})

    def __reduce__(self) -> tuple[type[Rejected], tuple[str, str, dict[str, Any]]]:
        # Pickled as (stage, reason, facts): a Ray worker returns it to the driver.
        return Rejected, (self.stage, self.reason, self.facts)


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
        b = [_kind(run.get(tid, "missing")) for run in before]
        a = [_kind(run.get(tid, "missing")) for run in after]
        if len(set(b)) > 1 or len(set(a)) > 1:
            flaky.append(tid)
        elif all(s == "passed" for s in a):
            if all(s == "failing" for s in b):
                f2p.append(tid)
            elif all(s == "passed" for s in b):
                p2p.append(tid)
    # A parametrized test is one function run with several arguments: when one case changes
    # outcome between runs, its siblings are as likely to, and a few runs only catch some
    # (uvicorn's test_limit_max_requests_jitter[h11] flipped in one validation, [httptools] in
    # another). Every case of a function with a flaky case is flaky, so labels repeat.
    shaky = {_function(t) for t in flaky} - {None}
    if shaky:
        flaky += [t for t in [*f2p, *p2p] if _function(t) in shaky]
        f2p = [t for t in f2p if _function(t) not in shaky]
        p2p = [t for t in p2p if _function(t) not in shaky]
    return Classified(f2p, p2p, sorted(flaky))


def _function(tid: str) -> str | None:
    """The test function of a parametrized pytest id (`file::name[args]` -> `file::name`)."""
    head, sep, tail = tid.rpartition("::")
    if not sep or not tail.endswith("]") or "[" not in tail:
        return None
    return f"{head}::{tail[: tail.index('[')]}"


def _kind(status: str) -> str:
    # Failed, errored and not collected are one outcome: a test that fails on the base in one
    # run and errors at setup in another (another test's thread raising into it: tqdm) fails
    # in every run, which is what FAIL_TO_PASS asks; calling it flaky made two validations of
    # one candidate disagree on its labels.
    return "failing" if status in FAILING else status


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
    # The reporting was judged tampered with: by the reference patch or the base itself, so
    # its results say nothing (and a guard mistake must show as such, not as "no test").
    failure = getattr(run, "failure", None)
    if failure:
        raise Rejected("infra", f"{phase}-run unusable: {failure}")
    return statuses(run)


def _per_file_reason(probe: _TestRun, files: list[str]) -> str | None:
    """Why the before state must be run per test module ("import" or "crash"), None when the
    whole before-run is usable; Rejected when it is hopeless."""
    if probe.patch_error or getattr(probe, "failure", None):
        _check(probe, "before")
    if probe.error:
        if crashed(probe.exit_code, probe.error):
            return "crash"
        if probe.exit_code == 5 and not probe.outcomes:
            # pytest found no test in the files it was handed: data files no conftest.py
            # collects (an expected output, not its input), a property of the candidate.
            shown = ", ".join(files[:3])
            raise Rejected(
                "collect", f"the test patch's files hold no test pytest collects ({shown})"
            )
        _check(probe, "before")
    run = statuses(probe)
    if _collected(run):
        return None
    if _unloaded(probe):
        # Every module fails alike (pytest stops before collecting): whole reruns say it all.
        return "conftest"
    broken = _broken_modules(run)
    outside = [m for m in broken if not any(same_file(m, f) for f in files)]
    if broken and not outside:
        return "import"
    errors = ", ".join(sorted(run)[:3]) or "no test result"
    raise Rejected("collect", f"the before-run collects no test ({errors})")


def _unloaded(run: _TestRun) -> str | None:
    """Why pytest could not even start collecting the run's tests (a conftest.py of theirs did
    not import: frameworks/pytest.py reads that as every test file failing to collect, exit
    code 4), or None."""
    if run.error or not not_loaded(run.exit_code, run.outcomes):
        return None
    return next(iter(getattr(run, "uncollected", {}).values()), "a conftest.py did not import")


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
    facts: dict[str, Any] | None = None,
) -> Task:
    """The task with FAIL_TO_PASS, PASS_TO_PASS, flaky_tests and validation set, or Rejected.
    `facts` gets the environment key as soon as a run names it (kept for a rejection too)."""
    if runner is None:
        from swebounty.runs import run_tests

        runner = run_tests
    from swebounty.frameworks import FrameworkError, resolve
    from swebounty.repos import RepoError

    try:
        files = resolve(task, ctx)[1].test_files(task)
    except (FrameworkError, RepoError) as exc:
        raise Rejected("tests", f"no test framework can run its tests: {exc}") from exc
    if not files:
        # Nothing the harness would run: say so now rather than as six failed runs.
        raise Rejected("tests", "the test patch changes no test module the harness can run")
    start = time.monotonic()
    facts = {} if facts is None else facts
    network: dict[str, str] = {}
    limited: dict[str, set[str]] = {}  # "before"/"after" -> tests stopped at the time limit
    runner = _noting_stopped(runner, limited)

    def after_run(i: int) -> dict[str, str]:
        run = runner(task, task.patch, ctx, log_dir / f"after-{i}")
        facts.setdefault("env_key", getattr(run, "env_key", None))
        network.update(network_failures(run.outcomes))
        if unloaded := _unloaded(run):
            # The fix did not make the tests load: the environment lacks what a conftest.py
            # imports (or it imports what neither the base nor the fix has).
            raise Rejected(
                "infra",
                f"after-run failed: pytest could not import a conftest.py even with the "
                f"reference patch ({unloaded}); check that the environment has what it imports",
            )
        return _check(run, "after")

    probe = runner(task, "", ctx, log_dir / "before-1")
    facts["env_key"] = getattr(probe, "env_key", None)
    reason = _per_file_reason(probe, files)
    before: list[dict[str, str]] = []
    after: list[dict[str, str]] = []
    for i in range(1, runs + 1):
        # Run 1's whole before-run is the probe; per-module reruns wait for a clean after-run.
        a: dict[str, str] | None = None
        if i == 1:
            a = after_run(1)
            if reason in ("import", "conftest"):
                _check_import_fixed(probe, a)
        b = _before(
            task,
            ctx,
            log_dir,
            runner,
            files,
            i=i,
            per_file=reason in ("import", "crash"),
            probe=probe if i == 1 else None,
        )
        if a is None:
            a = after_run(i)
        before.append(b)
        after.append(a)
        result = classify(before, after)
        if not result.fail_to_pass:
            if network:
                tid, evidence = next(iter(sorted(network.items())))
                raise Rejected(
                    "network",
                    f"{len(network)} test(s) fail for want of the network, offline grading "
                    f"cannot use them ({tid}: {evidence})",
                )
            why = "flaky" if result.flaky and i > 1 else "no test fails before and passes after"
            raise Rejected("no_f2p", f"no FAIL_TO_PASS after {i} run(s) each ({why})")
    validation: dict[str, Any] = {"runs": runs, "seconds": round(time.monotonic() - start, 1)}
    if reason == "conftest":
        validation["before_not_loaded"] = _unloaded(probe)
    elif reason is not None:
        validation["before_per_file"] = reason
    if network:
        validation["network_tests"] = sorted(network)
    if limited:
        validation["time_limited"] = {phase: sorted(ids) for phase, ids in limited.items()}
        # The limit they were cut at: what a later validation must use to agree.
        validation["test_limit_s"] = getattr(getattr(ctx, "policy", None), "test_limit_s", None)
    return task.model_copy(
        update={
            "FAIL_TO_PASS": result.fail_to_pass,
            "PASS_TO_PASS": result.pass_to_pass,
            "flaky_tests": result.flaky,
            "validation": validation,
        }
    )


def _noting_stopped(runner: Runner, limited: dict[str, set[str]]) -> Runner:
    """`runner`, noting in `limited` the tests each phase's runs stopped at the per-test time
    limit: failing tests like any other (a hang the fix removes is FAIL_TO_PASS), named in the
    task's `validation` so a reader sees which ones hung."""

    def run(task: Task, patch: str, ctx: EvalContext, log_dir: Path) -> _TestRun:
        result = runner(task, patch, ctx, log_dir)
        ids = stopped(result.outcomes)
        if ids:
            limited.setdefault("after" if patch else "before", set()).update(ids)
        return result

    return run


def validate_or_reject(
    task: Task, ctx: EvalContext, log_dir: Path, runs: int = 3, runner: Runner | None = None
) -> Task | Rejected:
    """`validate_one`, with its rejection (or a crash of the harness) as the result; either
    carries what it cost (`validation` of a task, `facts` of a rejection)."""
    meter = Meter()
    facts: dict[str, Any] = {}
    try:
        task = validate_one(task, ctx, log_dir, runs=runs, runner=runner, facts=facts)
    except Rejected as rej:
        rej.facts.update(facts, **meter.read())
        return rej
    except Exception as exc:  # one broken candidate must not stop the others
        log.exception("%s: validation crashed", task.instance_id)
        return Rejected("infra", f"harness error: {type(exc).__name__}: {exc}", meter.read())
    validation = {**((task.model_extra or {}).get("validation") or {}), **facts, **meter.read()}
    return task.model_copy(update={"validation": validation})
