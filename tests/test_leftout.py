"""leftout.py: a verdict resolved by leaving out tests that skipped holds only when the unpatched
base skipped them too (the base run stands in: no test runs here)."""

from __future__ import annotations

from typing import Any

import pytest

from swebounty import leftout
from swebounty.baseline import BaseRun
from swebounty.frameworks.base import TestRun
from swebounty.tasks import Task
from swebounty.verdicts import TestResult, Verdict

DOC = "Zero timeout."
MEMBERS = ["cache.tests.File.test_zero", "cache.tests.PyLibMC.test_zero"]


def _graded() -> tuple[Task, Verdict, TestRun]:
    task = Task(instance_id="o__p-1", repo="o/p", base_commit="HEAD", FAIL_TO_PASS=[DOC])
    ok = TestResult(test_id=DOC, expected="FAIL_TO_PASS", status="passed", message="3 tests")
    verdict = Verdict(instance_id=task.instance_id, status="resolved", tests=[ok])
    return task, verdict, TestRun(left_out={DOC: MEMBERS}, env_key="env")


def _confirm(monkeypatch: pytest.MonkeyPatch, base: BaseRun) -> Verdict:
    task, verdict, tr = _graded()
    asked: list[Any] = []
    monkeypatch.setattr(leftout, "base_run", lambda *args: asked.append(args) or base)
    found = leftout.confirm_left_out(task, verdict, tr, ctx=None)  # type: ignore[arg-type]
    assert asked, "the base run was not asked"
    return found


def test_members_the_base_skipped_too_stay_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    base = BaseRun(clean=True, outcomes={DOC: ("failed", "")}, skipped=[*MEMBERS, "x.Y.z"])
    assert _confirm(monkeypatch, base).status == "resolved"


def test_a_member_that_ran_on_the_base_makes_the_id_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = BaseRun(clean=True, outcomes={DOC: ("failed", "")}, skipped=MEMBERS[1:])
    found = _confirm(monkeypatch, base)
    assert found.status == "unresolved" and "adds_skip_or_xfail" in found.hack_flags
    assert found.tests[0].status == "skipped"
    assert "1 of its tests skipped here but ran on the unpatched base" in found.tests[0].message
    assert MEMBERS[0] in found.tests[0].message


def test_a_base_without_results_confirms_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    found = _confirm(monkeypatch, BaseRun(clean=False, reason="it crashed"))
    assert found.status == "unresolved" and "it crashed" in found.reason
    assert "adds_skip_or_xfail" not in found.hack_flags


def test_nothing_is_run_for_a_verdict_that_left_nothing_out() -> None:
    task, verdict, _ = _graded()
    assert leftout.confirm_left_out(task, verdict, TestRun(), ctx=None) is verdict  # type: ignore[arg-type]
