"""A run's misses grouped by class (misses.py): every verdict not resolved is in one class."""

from __future__ import annotations

from swebounty.misses import by_class, miss_class
from swebounty.verdicts import TestResult, Verdict


def verdict(iid: str, status: str = "unresolved", reason: str = "", **kw: object) -> Verdict:
    return Verdict(instance_id=iid, status=status, reason=reason, **kw)  # type: ignore[arg-type]


def result(kind: str, status: str) -> TestResult:
    return TestResult(test_id=f"t.py::{status}", expected=kind, status=status)  # type: ignore[arg-type]


def test_every_miss_gets_a_class_and_resolved_ones_none() -> None:
    env = (
        "environment not built: oldpkg has only source distributions whose file names uv "
        "refuses (not PEP 625: .tar.bz2, .tgz, ...) at the cutoff (sdist).\nspec abc: ..."
    )
    verdicts = [
        verdict("ok-1", "resolved"),
        verdict("env-1", "error", env),
        verdict("env-2", "error", env.replace("(sdist)", "(build)")),
        verdict("env-3", "error", env),
        verdict("patch-1", "patch_failed", "the patch did not apply"),
        verdict("tp-1", "error", "the task's test patch does not apply: hunk 2 failed"),
        verdict(
            "f2p-1", tests=[result("FAIL_TO_PASS", "failed"), result("PASS_TO_PASS", "failed")]
        ),
        verdict(
            "p2p-1", tests=[result("FAIL_TO_PASS", "passed"), result("PASS_TO_PASS", "skipped")]
        ),
        verdict("miss-1", tests=[result("FAIL_TO_PASS", "missing")]),
        verdict("defect-1", task_defect="task defect: ..."),
        verdict("crash-1", "error", "the tests died: signal 9", hack_flags=["crashes_tests"]),
        verdict("other-1", "error", "sandbox: bwrap could not start\nmore"),
    ]
    groups = {g["class"]: g for g in by_class(verdicts)}
    assert groups["environment not built (sdist)"]["instances"] == ["env-1", "env-3"]
    assert groups["environment not built (build)"]["count"] == 1
    assert groups["patch does not apply"]["instances"] == ["patch-1"]
    assert groups["test patch does not apply"]["instances"] == ["tp-1"]
    assert groups["FAIL_TO_PASS failed"]["instances"] == ["f2p-1"]
    assert groups["PASS_TO_PASS skipped"]["instances"] == ["p2p-1"]
    assert groups["FAIL_TO_PASS never ran"]["instances"] == ["miss-1"]
    assert groups["task defect"]["instances"] == ["defect-1"]
    assert groups["tests crashed"]["instances"] == ["crash-1"]
    assert groups["error: sandbox"]["instances"] == ["other-1"]
    assert sum(g["count"] for g in groups.values()) == len(verdicts) - 1
    assert next(iter(groups)) == "environment not built (sdist)"  # the largest class first
    assert miss_class(verdict("x", "error", "")) == "error"
