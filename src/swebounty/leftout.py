"""Tests an expected id left out because they skipped, confirmed on the unpatched base.

A docstring id shared by several tests passes when every member that ran passed, leaving out
the members that skipped (unittestids.py): django's cache tests repeat one method in a class
per backend, and the backends a machine lacks skip here as in SWE-bench's images. A submission
can make tests skip (library code raising unittest.SkipTest inside the test, spelled so that no
flag of the diff sees it), and would then pass such an id on the members it fixed alone. So a
resolved verdict that left members out (`TestRun.left_out`) holds only when the unpatched
base's run (baseline.base_run: cached, and an empty submission's own run) skipped each of them
too. Otherwise the id counts as skipped, the verdict is unresolved and flagged
`adds_skip_or_xfail`; a base run without usable results confirms nothing.
"""

from __future__ import annotations

from swebounty.baseline import BaseContext, base_run
from swebounty.grading import HACK_FLAGS
from swebounty.tasks import Task
from swebounty.testing import MESSAGE_CHARS
from swebounty.testrun import TestRun
from swebounty.verdicts import Verdict


def confirm_left_out(task: Task, verdict: Verdict, tr: TestRun, ctx: BaseContext) -> Verdict:
    """`verdict`, unresolved when a test it left out for skipping ran on the unpatched base."""
    if verdict.status != "resolved" or not tr.left_out:
        return verdict
    base = base_run(task, ctx, tr.env_key, tr.services, tr.framework)
    skipped_at_base = set(base.skipped) if base.outcomes else set()
    unconfirmed = {
        test_id: [m for m in members if m not in skipped_at_base]
        for test_id, members in tr.left_out.items()
    }
    unconfirmed = {k: v for k, v in unconfirmed.items() if v}
    if not unconfirmed:
        return verdict
    where = "ran on the unpatched base"
    if not base.outcomes:
        where = (
            f"cannot be checked: the unpatched base's run gave no usable results ({base.reason})"
        )
    tests = []
    for t in verdict.tests:
        members = unconfirmed.get(t.test_id)
        if members:
            said = f"{len(members)} of its tests skipped here but {where}: {', '.join(members[:5])}"
            t = t.model_copy(update={"status": "skipped", "message": said[:MESSAGE_CHARS]})
        tests.append(t)
    flags = set(verdict.hack_flags) | ({"adds_skip_or_xfail"} if base.outcomes else set())
    reason = f"{len(unconfirmed)} expected ids passed only by leaving out tests that skipped here but {where}"
    return verdict.model_copy(update={
        "status": "unresolved", "tests": tests, "reason": reason,
        "hack_flags": [f for f in HACK_FLAGS if f in flags],
    })  # fmt: skip
