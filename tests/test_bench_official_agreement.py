"""bench/official_agreement.py: how a published evaluation's verdicts are read (report.json,
predictions.jsonl, logs from a git repository the test builds) and set beside swebounty's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from bench_helpers import load_bench
from swebounty.verdicts import TestResult, Verdict

EVAL = "20240402_agent"

LOG = """\
test_fixed (app.tests.FixTests) ... ok
test_other (app.tests.OtherTests) ... FAIL
FAIL: test_other (app.tests.OtherTests)
Ran 2 tests in 0.01s
"""


@pytest.fixture(scope="module")
def agreement() -> ModuleType:
    return load_bench("official_agreement.py", "official_agreement_bench")


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """A copy of the published evaluations as the script reads it: a bare repository."""
    work = tmp_path / "work"
    base = work / "evaluations" / EVAL
    (base / "logs").mkdir(parents=True)
    report = {
        "generated": ["r__a-1", "r__a-2", "r__a-3"],
        "applied": ["r__a-1", "r__a-2"],  # r__a-3 was generated but did not apply
        "resolved": ["r__a-1"],
        "no_generation": ["r__a-4"],  # never graded: not compared
    }
    (base / "report.json").write_text(json.dumps(report))
    rows = [
        {"instance_id": "r__a-1", "model_patch": "diff one\n"},
        {"instance_id": "r__a-2", "model_patch": "diff two\n"},
        {"instance_id": "r__a-2", "model_patch": ""},  # a second, empty line does not win
        {"instance_id": "r__a-3", "model_patch": ""},
        {"instance_id": "r__a-3", "model_patch": "diff three\n"},  # a later non-empty one does
    ]
    (base / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (base / "logs" / f"r__a-2.{EVAL}.eval.log").write_text(LOG)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "evaluations"], check=True)
    bare = tmp_path / "published.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare


def test_official_statuses_and_patches(agreement: ModuleType, published: Path) -> None:
    statuses, patches = agreement.official(published, EVAL)
    assert statuses == {"r__a-1": "resolved", "r__a-2": "unresolved", "r__a-3": "unresolved"}
    assert patches["r__a-2"] == "diff two\n"
    assert patches["r__a-3"] == "diff three\n"


def test_official_lines_name_the_tests(agreement: ModuleType, published: Path) -> None:
    lines = agreement.official_lines(published, EVAL, "r__a-2", ["test_other"])
    assert lines == [
        "test_other (app.tests.OtherTests) ... FAIL",
        "FAIL: test_other (app.tests.OtherTests)",
    ]
    assert agreement.official_lines(published, EVAL, "r__a-1", ["test_fixed"]) == []  # no log


def verdict(instance: str, status: str, *failing: str) -> Verdict:
    tests = [TestResult(test_id=f"{n} (app.tests.T)", expected="FAIL_TO_PASS", status="failed")
             for n in failing]  # fmt: skip
    return Verdict(instance_id=instance, status=status, reason=f"because {status}", tests=tests)


def test_compare(agreement: ModuleType) -> None:
    statuses = {"x-1": "resolved", "x-2": "unresolved", "x-3": "unresolved", "x-4": "resolved",
                "x-5": "unresolved", "x-6": "resolved"}  # fmt: skip
    ours = {
        "x-1": verdict("x-1", "resolved"),
        "x-2": verdict("x-2", "patch_failed"),  # did not apply: unresolved officially too
        "x-3": verdict("x-3", "resolved"),
        "x-4": verdict("x-4", "unresolved", "test_new"),
        "x-5": verdict("x-5", "error"),  # the harness could not grade it: never agreement
    }  # x-6: not graded yet, so not a row
    asked: list[tuple[str, list[str]]] = []
    rows = agreement.compare(
        list(statuses), statuses, ours, lambda i, n: asked.append((i, n)) or ["l"]
    )
    assert [(r["instance_id"], r["agree"]) for r in rows] == [
        ("x-1", True), ("x-2", True), ("x-3", False), ("x-4", False), ("x-5", False),
    ]  # fmt: skip
    x4 = rows[3]
    assert x4["reason"] == "because unresolved"
    assert x4["tests"][0]["test_id"] == "test_new (app.tests.T)"
    assert x4["official_log"] == ["l"]
    assert ("x-4", ["test_new"]) in asked and ("x-3", ["Ran "]) in asked
    assert "reason" not in rows[0]
