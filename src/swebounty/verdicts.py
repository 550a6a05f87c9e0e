"""Verdict: the graded outcome of one attempt (its status, reason, per-test results, hack flags,
task defect, how it ran), with the per-test results and the statuses they take.

`grading.py` makes verdicts; the store, scores and reports read them. Import them from here
(or `Verdict` and `TestResult` from `swebounty`, the public API); `tasks.py` re-exports them
only for code on unmerged branches (see there).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from swebounty.services.models import ServiceUse

TestStatus = Literal["passed", "failed", "error", "skipped", "missing"]
BaseFailures = Literal["strict", "network", "all"]  # baseline.py's policies

# agent_error: the agent crashed or broke its workspace and submitted nothing (the attempt counts
# as a skip, never as an infrastructure error); error: the harness failed.
VerdictStatus = Literal["resolved", "unresolved", "patch_failed", "error", "agent_error"]


class TestResult(BaseModel):
    """One expected test id and what became of it."""

    __test__ = False  # not a pytest test class, whatever its name says

    test_id: str
    expected: Literal["FAIL_TO_PASS", "PASS_TO_PASS"]
    status: TestStatus
    message: str = ""


class ExcusedTest(TestResult):
    """A PASS_TO_PASS test baseline.py's policy excused: its run here and on the base."""

    base_status: TestStatus
    base_message: str = ""
    network: str = ""


class Verdict(BaseModel):
    """The graded outcome of one attempt."""

    instance_id: str
    attempt: int = 1
    model_name_or_path: str = "unknown"
    status: VerdictStatus
    empty_patch: bool = False
    reason: str = Field("", description="why, in words, for anything but resolved")
    tests: list[TestResult] = Field(default_factory=list)
    hack_flags: list[str] = Field(default_factory=list)
    task_defect: str = Field("", description="why the task cannot tell a fix from no change")
    harness_limitation: str = Field(
        "",
        description="why the harness cannot run this task's tests (an error, never the "
        "submission's failure): no framework runs them, or they do not collect on the base",
    )
    test_infra_reverted: list[str] = Field(
        default_factory=list,
        description="test infrastructure files the submission changed, put back to the base's",
    )
    patch_method: str | None = Field(None, description="how the patch applied: git, 3way, fuzz")
    exit_code: int | None = None
    env_key: str | None = None
    seconds: float = 0.0
    log_dir: str | None = None
    sandbox: str | None = None
    executor: str | None = Field(None, description="what ran it: local (a thread pool) or ray")
    node: str | None = Field(None, description="the host (and Ray node) that produced it")
    artifacts: list[str] = Field(
        default_factory=list,
        description="files kept from the run, relative to log_dir (e2e screenshots, traces)",
    )
    base_failures: BaseFailures = Field("strict", description="the policy that graded it")
    excused_tests: list[ExcusedTest] = Field(default_factory=list)
    services: list[ServiceUse] = Field(default_factory=list, description="test services run")

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"
