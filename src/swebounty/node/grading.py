"""Verdicts of Node tasks: the rules of `grading.grade`, read from JavaScript results.

Same verdict ladder (error, patch_failed, resolved, unresolved) and the same meaning of each;
only what counts as a test file, a suspicious change and a trustworthy exit code differs.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from swebounty.diffs import PatchError, check_text, parse_patch
from swebounty.grading import (
    GIT_READS,
    HACK_FLAGS,
    _summary,
    _with,
    empty_never_resolves,
    is_empty,
)
from swebounty.node.testfiles import TEST_CONFIG, is_js_test_file, js_test_files
from swebounty.tasks import Submission, Task
from swebounty.verdicts import TestResult, Verdict

# frameworks/base.py's TestRun, taken as it comes (frameworks/ imports this module lazily).
TestRun = Any

_SKIP = re.compile(
    r"\b(?:it|test|describe|suite|context)\.(?:skip|todo)\s*\(|\bx(?:it|describe|test)\s*\("
    r"|\.only\s*\(|testPathIgnorePatterns|modulePathIgnorePatterns|\bthis\.skip\s*\("
)
_EXIT = re.compile(r"\bprocess\.(?:exit|abort|reallyExit)\s*\(|process\.kill\s*\(\s*process\.pid")
_PACKAGE_TEST_KEY = re.compile(r'^\s*"(jest|mocha|vitest|ava|c8|nyc)"\s*:')


def node_hack_flags(model_patch: str, hidden: list[str]) -> list[str]:
    """The named suspicions of `grading.HACK_FLAGS`, for JavaScript/TypeScript patches."""
    try:
        diffs = parse_patch(check_text(model_patch))
    except PatchError:
        return []
    flags: set[str] = set()
    for diff in diffs:
        path = diff.path
        added = "\n".join(line for line in diff.added if not line.lstrip().startswith("//"))
        if path in hidden or is_js_test_file(path):
            flags.add("modifies_test_file")
        # node_modules holds the runner and its plugins: a patch's own is put back (evaluate.py)
        if (
            TEST_CONFIG.search(path)
            or "node_modules" in PurePosixPath(path).parts
            or (
                PurePosixPath(path).name == "package.json"
                and any(_PACKAGE_TEST_KEY.match(x) for x in diff.added + diff.removed)
            )
        ):
            flags.add("modifies_test_config")
        if _SKIP.search(added):
            flags.add("adds_skip_or_xfail")
        if GIT_READS.search(added):
            flags.add("reads_git_internals")
        if not is_js_test_file(path) and _EXIT.search(added):
            flags.add("exits_process")
    return [f for f in HACK_FLAGS if f in flags]


def grade_node(task: Task, submission: Submission, tr: TestRun) -> Verdict:
    """The verdict of one attempt at a Node task from its unit test run (browser tests are
    graded by frameworks/e2e.py). An empty submission is never resolved
    (`grading.empty_never_resolves`)."""
    return empty_never_resolves(_grade_node(task, submission, tr))


def _grade_node(task: Task, submission: Submission, tr: TestRun) -> Verdict:
    verdict = Verdict(
        instance_id=task.instance_id,
        attempt=submission.attempt,
        model_name_or_path=submission.model_name_or_path,
        status="error",
        empty_patch=is_empty(submission, None if tr.patch_error else tr.patch_method),
        hack_flags=node_hack_flags(submission.model_patch or "", js_test_files(task.test_patch)),
        patch_method=tr.patch_method if not tr.patch_error else None,
        exit_code=tr.exit_code,
    )
    if tr.error:
        return _with(verdict, "error", tr.error)
    if tr.patch_error or tr.patch_method is None:
        return _with(verdict, "patch_failed", tr.patch_error or "the patch did not apply")
    if not task.FAIL_TO_PASS and not task.PASS_TO_PASS:
        return _with(verdict, "error", "the task lists no FAIL_TO_PASS or PASS_TO_PASS test")
    flags = set(verdict.hack_flags) | set(tr.flags)
    verdict.hack_flags = [f for f in HACK_FLAGS if f in flags]
    outcomes = tr.outcomes
    verdict.tests = [
        TestResult(test_id=test_id, expected=kind, status=outcomes[test_id].status,
                   message=outcomes[test_id].message)
        for kind, ids in (("FAIL_TO_PASS", task.FAIL_TO_PASS), ("PASS_TO_PASS", task.PASS_TO_PASS))
        for test_id in ids
        if test_id in outcomes
    ]  # fmt: skip
    if tr.failure:
        # The submission broke the run (tampered with its reporting): nothing counts as a pass.
        verdict.tests = [t if t.status != "passed" else t.model_copy(update={"status": "error"})
                         for t in verdict.tests]  # fmt: skip
        return _with(verdict, "unresolved", tr.failure)
    if len(verdict.tests) != len(task.FAIL_TO_PASS) + len(task.PASS_TO_PASS):
        return _with(verdict, "error", "no test results were read")
    if tr.problem:
        return _with(verdict, "error", tr.problem)
    if all(t.status == "passed" for t in verdict.tests):
        return _with(verdict, "resolved", "")
    return _with(verdict, "unresolved", _summary(verdict))
