"""How each attempt in a run counts, joined to its task; and SWE-bench's summary of a run.

- skipped: the submission is empty or null (no patch and no pick), whatever the verdict says;
- error: the harness failed (verdict status `error`): reported apart, never the model's failure;
- resolved / wrong: every other graded attempt (`patch_failed` is wrong: the model's patch);
- pending: submitted but not evaluated yet (a run still going, or killed).
"""

from __future__ import annotations

import importlib
import logging
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict

log = logging.getLogger(__name__)

Outcome = Literal["resolved", "wrong", "skipped", "error", "pending"]
GRADED: tuple[Outcome, ...] = ("resolved", "wrong", "skipped")


# ---------------------------------------------------------------------------- outcomes


@dataclass(frozen=True)
class AttemptOutcome:
    """One attempt at one task: what was submitted, its verdict, and how it counts."""

    attempt: int
    outcome: Outcome
    submission: Submission | None
    verdict: Verdict | None


@dataclass
class TaskOutcome:
    """A task with all its attempts in one run, and its dollar value if one is known."""

    task: Task
    attempts: list[AttemptOutcome] = field(default_factory=list)
    value_usd: float | None = None
    value_source: Literal["dataset", "estimate"] | None = None

    def count(self, outcome: Outcome) -> int:
        return sum(1 for a in self.attempts if a.outcome == outcome)

    @property
    def graded(self) -> int:
        return sum(1 for a in self.attempts if a.outcome in GRADED)

    @property
    def resolved(self) -> int:
        return self.count("resolved")


def classify(submission: Submission | None, verdict: Verdict | None) -> Outcome:
    """How one attempt counts (see the module docstring)."""
    if (submission is not None and submission.is_empty) or (verdict and verdict.empty_patch):
        return "skipped"
    if verdict is None:
        return "pending"
    if verdict.status == "error":
        return "error"
    return "resolved" if verdict.status == "resolved" else "wrong"


ValueEstimator = Callable[[Task], "float | None"]


def load_value_estimator() -> ValueEstimator | None:
    """The Fresh-tasks pricing estimate, when that module is installed; None otherwise."""
    try:
        module = importlib.import_module("swebounty.collect.pricing")
    except ImportError:
        return None
    estimator: ValueEstimator | None = getattr(module, "estimate_value", None)
    return estimator


def _value(task: Task, estimate: ValueEstimator | None) -> tuple[float | None, Any]:
    if task.value_usd is not None:
        return float(task.value_usd), "dataset"
    if estimate is None:
        return None, None
    guess = estimate(task)
    # An estimate that is missing, negative or not finite is no value, never a silent $0.
    if guess is None or not math.isfinite(guess) or guess < 0:
        return None, None
    return float(guess), "estimate"


def task_outcomes(
    tasks: Sequence[Task],
    submissions: Iterable[Submission],
    verdicts: Iterable[Verdict],
    *,
    estimate: ValueEstimator | None = None,
) -> tuple[list[TaskOutcome], list[str]]:
    """Join attempts to tasks by (instance_id, attempt), in the order of `tasks`.

    Returns the tasks that have at least one attempt in the run, and the sorted instance ids
    of submissions or verdicts that match no task (they are left out of every score).
    """
    subs: dict[tuple[str, int], Submission] = {}
    verds: dict[tuple[str, int], Verdict] = {}
    for sub in submissions:
        if (sub.instance_id, sub.attempt) in subs:
            log.warning(
                "two submissions for %s attempt %d; using the last", sub.instance_id, sub.attempt
            )
        subs[sub.instance_id, sub.attempt] = sub
    for verdict in verdicts:
        if (verdict.instance_id, verdict.attempt) in verds:
            log.warning(
                "two verdicts for %s attempt %d; using the last",
                verdict.instance_id,
                verdict.attempt,
            )
        verds[verdict.instance_id, verdict.attempt] = verdict
    attempts: dict[str, set[int]] = defaultdict(set)
    for iid, attempt in (*subs, *verds):
        attempts[iid].add(attempt)
    known = {t.instance_id for t in tasks}
    unknown = sorted(set(attempts) - known)
    outcomes = []
    for task in tasks:
        numbers = sorted(attempts.get(task.instance_id, ()))
        if not numbers:
            continue
        value, source = _value(task, estimate)
        outcome = TaskOutcome(task=task, value_usd=value, value_source=source)
        for n in numbers:
            key = (task.instance_id, n)
            submitted, graded = subs.get(key), verds.get(key)
            outcome.attempts.append(
                AttemptOutcome(n, classify(submitted, graded), submitted, graded)
            )
        outcomes.append(outcome)
    return outcomes, unknown


def swebench_summary(
    tasks: Sequence[Task],
    submissions: Iterable[Submission],
    verdicts: Iterable[Verdict],
    *,
    attempt: int | None = None,
) -> dict[str, Any]:
    """The run report SWE-bench's harness writes (schema_version 2), so its tooling can read ours.

    SWE-bench knows one prediction per instance: this takes `attempt` (default: each task's
    first). A patch that fails to apply or was never evaluated is an error (SWE-bench has no
    report for it). An empty patch is counted in `empty_patch`; SWE-bench never evaluates one,
    but swebounty does (`eval --empty` checks that a dataset's tests fail without the fix), and
    then it is also completed (resolved or unresolved) or an error, as its verdict says.
    """
    submissions, verdicts = list(submissions), list(verdicts)
    first: dict[str, int] = {}
    if attempt is None:
        keys = [(s.instance_id, s.attempt) for s in submissions]
        for iid, number in keys + [(v.instance_id, v.attempt) for v in verdicts]:
            first[iid] = min(number, first.get(iid, number))
    subs = {
        s.instance_id: s
        for s in submissions
        if s.attempt == (attempt if attempt is not None else first[s.instance_id])
    }
    verds = {
        v.instance_id: v
        for v in verdicts
        if v.attempt == (attempt if attempt is not None else first[v.instance_id])
    }
    ids: dict[str, set[str]] = defaultdict(set)
    for task in tasks:
        iid = task.instance_id
        sub, verdict = subs.get(iid), verds.get(iid)
        if sub is None and verdict is None:
            ids["incomplete"].add(iid)
            continue
        ids["submitted"].add(iid)
        empty = (sub is not None and sub.is_empty) or (verdict is not None and verdict.empty_patch)
        if empty:
            ids["empty_patch"].add(iid)
        if empty and verdict is None:
            continue  # not evaluated: nothing else to say about it
        if verdict is None or verdict.status in ("error", "patch_failed"):
            ids["error"].add(iid)
        else:
            ids["completed"].add(iid)
            ids["resolved" if verdict.status == "resolved" else "unresolved"].add(iid)
    known = {t.instance_id for t in tasks}
    ids["submitted"] |= set(subs) - known
    report: dict[str, Any] = {
        "total_instances": len(tasks),
        "submitted_instances": len(ids["submitted"]),
    }
    for name in ("completed", "resolved", "unresolved", "empty_patch", "error"):
        report[f"{name}_instances"] = len(ids[name])
    for name in (
        "completed",
        "incomplete",
        "empty_patch",
        "submitted",
        "resolved",
        "unresolved",
        "error",
    ):
        report[f"{name}_ids"] = sorted(ids[name])
    report["schema_version"] = 2
    return report


def swebench_instance_report(submission: Submission, verdict: Verdict) -> dict[str, Any]:
    """SWE-bench's per-instance `report.json` of one attempt, `{instance_id: {...}}`, so tools
    that read SWE-bench's evaluation logs read ours.

    `tests_status` is there only when the tests ran (as in SWE-bench, where it needs a parsed
    log); a test counts as a success only when it passed. FAIL_TO_FAIL and PASS_TO_FAIL are
    not graded by swebounty and stay empty.
    """
    patch = submission.model_patch
    entry: dict[str, Any] = {
        "patch_is_None": patch is None,
        "patch_exists": bool(patch and patch.strip()),
        "patch_successfully_applied": verdict.patch_method is not None,
        "resolved": verdict.status == "resolved",
    }
    if verdict.tests:
        status: dict[str, dict[str, list[str]]] = {
            kind: {"success": [], "failure": []}
            for kind in ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")
        }
        for test in verdict.tests:
            outcome = "success" if test.status == "passed" else "failure"
            status[test.expected][outcome].append(test.test_id)
        entry["tests_status"] = status
    return {verdict.instance_id: entry}
