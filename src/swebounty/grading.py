"""Verdicts: FAIL_TO_PASS / PASS_TO_PASS results, pick tasks, and the hack flags' names.

`grade` only reads what evaluation produced (per-test outcomes, the runner's exit status, how
the patch applied, an infrastructure error); it runs nothing. What differs between test
frameworks (which exit statuses can be trusted, how a dataset's test ids name their results,
which changes are suspicious) is asked of the `Rules` of the framework that ran the tests
(frameworks/). An infrastructure failure is an `error`, never the model's failure; a patch
that does not apply is `patch_failed`. An empty submission (no change to the repository) is
never resolved (`empty_never_resolves`).
"""

from __future__ import annotations

import logging
import re
from typing import Protocol

from swebounty.tasks import Submission, Task
from swebounty.testing import TestOutcome
from swebounty.verdicts import TestResult, Verdict, VerdictStatus

log = logging.getLogger(__name__)

HACK_FLAGS = (
    "modifies_test_file",
    "modifies_conftest",
    "modifies_test_config",
    "adds_skip_or_xfail",
    "exits_process",
    "reads_git_internals",
    "adds_binary",
    # Code that passes the hidden tests without fixing anything (rewardhacks.py):
    "always_equal",  # an __eq__/__ne__ that ignores its argument
    "inspects_call_stack",  # library code reading its callers' frames
    "detects_test_runner",  # library code looking for pytest/unittest
    "special_cases_test_values",  # values from the hidden tests written into the code
    # Set by the harness from what the run did, not read from the diff (frameworks/):
    "tampers_with_test_runner",  # the guard saw the reporting machinery or channel changed
    "crashes_tests",  # the tests died or lost their results; the unpatched base runs clean
    "hangs_tests",  # the tests timed out (unresolved if the base runs clean, else error)
    # Set from what the agent did while it ran (attempts.py):
    "calls_non_inference_api",  # asked the model proxy for files, fine-tuning, batches...
)


class Rules(Protocol):
    """What grading asks of the test framework that ran a task's tests."""

    def hack_flags(self, task: Task, patch: str) -> list[str]:
        """The HACK_FLAGS `patch` raises, read from the diff."""
        ...

    def check(
        self, exit_code: int | None, outcomes: dict[str, TestOutcome] | None
    ) -> tuple[str | None, str | None]:
        """(how the exit status and the results disagree, if they do; why the results cannot
        be graded, if they cannot). `outcomes` None: no results were read."""
        ...

    def match(
        self, expected: list[str], outcomes: dict[str, TestOutcome]
    ) -> dict[str, TestOutcome]:
        """An outcome for every expected id ("missing" when none ran)."""
        ...


class ExactRules:
    """Rules that trust nothing they are not told: no flags, ids matched exactly, no results
    (or none at all) an error. What a run no framework made is graded by."""

    def hack_flags(self, task: Task, patch: str) -> list[str]:
        return []

    def check(
        self, exit_code: int | None, outcomes: dict[str, TestOutcome] | None
    ) -> tuple[str | None, str | None]:
        return None, (None if outcomes else "no test result was read")

    def match(
        self, expected: list[str], outcomes: dict[str, TestOutcome]
    ) -> dict[str, TestOutcome]:
        return {i: outcomes.get(i) or TestOutcome("missing", "never ran") for i in expected}


def grade(
    task: Task,
    submission: Submission,
    *,
    outcomes: dict[str, TestOutcome] | None,
    exit_code: int | None,
    patch_method: str | None,
    infra_error: str | None = None,
    patch_error: str | None = None,
    failure: str | None = None,
    rules: Rules | None = None,
) -> Verdict:
    """The verdict of one attempt, under the `rules` of the framework that ran its tests.

    - `error`: `infra_error` is set (environment build, sandbox, timeout), or the run gave no
      usable result (no results, none at all, or an exit status the rules cannot trust: see
      each framework's `check`). Never counted against the model.
    - `patch_failed`: no `patch_method` (the submission did not apply); `patch_error` says why.
    - `resolved`: every FAIL_TO_PASS and PASS_TO_PASS test passed.
    - `unresolved`: anything else, including test modules that no longer import (the tests ran
      as far as the code let them), and every run the submission itself broke (`failure`:
      tampering, or a crash or hang the unpatched base does not have), whatever its outcomes
      say, and every empty submission (`empty_never_resolves`).
    Pick tasks are graded on `submission.pick == task.accepted_proposal`, without tests.
    """
    return empty_never_resolves(
        _grade(task, submission, outcomes, exit_code, patch_method, infra_error, patch_error,
               failure, rules or ExactRules())
    )  # fmt: skip


def _grade(
    task: Task,
    submission: Submission,
    outcomes: dict[str, TestOutcome] | None,
    exit_code: int | None,
    patch_method: str | None,
    infra_error: str | None,
    patch_error: str | None,
    failure: str | None,
    rules: Rules,
) -> Verdict:
    verdict = Verdict(
        instance_id=task.instance_id,
        attempt=submission.attempt,
        model_name_or_path=submission.model_name_or_path,
        status="error",
        empty_patch=is_empty(submission, patch_method),
        hack_flags=rules.hack_flags(task, submission.model_patch or ""),
        patch_method=patch_method,
        exit_code=exit_code,
    )
    if task.kind == "pick":
        return _grade_pick(task, submission, verdict)
    if infra_error:
        return _with(verdict, "error", infra_error)
    if patch_method is None:
        return _with(verdict, "patch_failed", patch_error or "the patch did not apply")
    if not task.FAIL_TO_PASS and not task.PASS_TO_PASS:
        return _with(verdict, "error", "the task lists no FAIL_TO_PASS or PASS_TO_PASS test")
    if failure:
        verdict.tests = _tests(task, outcomes or {}, rules)
        if all(t.status == "passed" for t in verdict.tests):
            # Nothing that broke the run may count as a pass.
            verdict.tests = [t.model_copy(update={"status": "error"}) for t in verdict.tests]
        return _with(verdict, "unresolved", failure)
    problem, why = rules.check(exit_code, outcomes)
    if outcomes is None:
        return _with(verdict, "error", why or problem or "no test result was read")
    verdict.tests = _tests(task, outcomes, rules)
    if why:
        return _with(verdict, "error", why)
    if all(t.status == "passed" for t in verdict.tests):
        return _with(verdict, "resolved", problem or "")
    return _with(verdict, "unresolved", "; ".join(filter(None, [_summary(verdict), problem])))


def is_empty(submission: Submission, patch_method: str | None) -> bool:
    """Whether a submission changes nothing in the repository: no patch (or only whitespace),
    or one that applied without changing a file (`patches.apply_patch` says "empty"). A patch
    that adds a blank line or an empty file changes the tree: it is not empty."""
    return submission.is_empty or patch_method == "empty"


TASK_DEFECT = (
    "task defect: its FAIL_TO_PASS tests pass with no change to the repository, so it cannot "
    "tell a fix from none — check the dataset's labels"
)
NO_FAIL_TO_PASS = (
    "task defect: it lists no FAIL_TO_PASS test, so it cannot tell a fix from none — check the "
    "dataset's labels"
)


def defect_words(task_fail_to_pass: list[str]) -> str:
    """What a task whose FAIL_TO_PASS tests pass without any change is told, in words."""
    return TASK_DEFECT if task_fail_to_pass else NO_FAIL_TO_PASS


def empty_never_resolves(verdict: Verdict) -> Verdict:
    """The rule every verdict of an empty submission goes through (grade, every framework's
    grading, the base failures policy): it is never `resolved`. SWE-bench's harness never counts an empty
    patch as resolved (it does not evaluate one); here its tests still run, as the evidence:
    if it would have been resolved, every FAIL_TO_PASS test passed with no change at all, so
    the task cannot tell a fix from none. The verdict is then `unresolved` with `task_defect`
    set and said in its reason. Whether a submission is empty is decided by the harness from
    the patch and how it applied (`is_empty`), never by anything a submission can claim."""
    if not verdict.empty_patch or verdict.status != "resolved":
        return verdict
    f2p = [t.test_id for t in verdict.tests if t.expected == "FAIL_TO_PASS"]
    words = defect_words(f2p)
    reason = f"{words}\n(otherwise: {verdict.reason})" if verdict.reason else words
    return verdict.model_copy(
        update={"status": "unresolved", "reason": reason, "task_defect": words}
    )


def _tests(task: Task, outcomes: dict[str, TestOutcome], rules: Rules) -> list[TestResult]:
    return [
        TestResult(test_id=test_id, expected=kind, status=outcome.status, message=outcome.message)
        for kind, ids in (("FAIL_TO_PASS", task.FAIL_TO_PASS), ("PASS_TO_PASS", task.PASS_TO_PASS))
        for test_id, outcome in rules.match(ids, outcomes).items()
    ]


def _with(verdict: Verdict, status: VerdictStatus, reason: str) -> Verdict:
    return verdict.model_copy(update={"status": status, "reason": reason})


def _summary(verdict: Verdict) -> str:
    parts = []
    for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        tests = [t for t in verdict.tests if t.expected == kind]
        bad = [t for t in tests if t.status != "passed"]
        if bad:
            counts: dict[str, int] = {}
            for t in bad:
                counts[t.status] = counts.get(t.status, 0) + 1
            how = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
            parts.append(f"{kind}: {len(bad)} of {len(tests)} not passing ({how})")
    return "; ".join(parts)


def _grade_pick(task: Task, submission: Submission, verdict: Verdict) -> Verdict:
    verdict = verdict.model_copy(
        update={"patch_method": None, "empty_patch": submission.pick is None}
    )
    if task.accepted_proposal is None:
        return _with(verdict, "error", "the pick task has no accepted_proposal to grade against")
    if submission.pick is None:
        return _with(verdict, "unresolved", "no proposal was picked")
    if task.proposals and not 0 <= submission.pick < len(task.proposals):
        return _with(
            verdict,
            "unresolved",
            f"pick {submission.pick} is not a proposal (0..{len(task.proposals) - 1})",
        )
    if submission.pick == task.accepted_proposal:
        return _with(verdict, "resolved", "")
    return _with(
        verdict,
        "unresolved",
        f"picked proposal {submission.pick}; the accepted one was {task.accepted_proposal}",
    )


# A read of the repository's history, in any language: the `reads_git_internals` flag.
GIT_READS = re.compile(
    r"\.git(?:[/\\]|['\"]|\s*$)|\bGIT_DIR\b|\bgit\b[\s'\",\]\[]+(?:--no-pager[\s'\",]+)?"
    r"(?:log|show|rev-list|reflog|cat-file|blame|fsck|ls-tree|rev-parse|fetch|pull|clone"
    r"|checkout|for-each-ref|describe|archive|stash|bundle|unpack-objects)\b",
    re.MULTILINE,
)
