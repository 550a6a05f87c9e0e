"""The environment baseline (baseline.py): the unpatched base's run, and the base failures
policy that excuses PASS_TO_PASS tests failing there (network by default, strict, all).

These tests drive `excuse` and `base_run` with a stand-in for the test run (no sandbox): what
is excused under each policy, when the base runs at all, what it is given, what is cached, and
what scores and reports say. test_offline_grading.py grades small repos it builds through the
real evaluation path and sandbox.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from swebounty import baseline
from swebounty.baseline import (
    BaseRun,
    base_digest,
    base_run,
    excuse,
    policy_change,
    run_policy,
    status_under,
)
from swebounty.services.models import ServiceUse
from swebounty.tasks import Task
from swebounty.testing import TestOutcome
from swebounty.testrun import TestRun
from swebounty.verdicts import BaseFailures, TestResult, Verdict

F2P = ["tests/test_a.py::test_fixed"]
P2P = ["tests/test_a.py::test_other", "tests/test_a.py::test_network"]


def _task(**extra: Any) -> Task:
    return Task(instance_id="o__p-1", repo="o/p", base_commit="a" * 40, test_patch="t",
                FAIL_TO_PASS=F2P, PASS_TO_PASS=P2P, **extra)  # fmt: skip


def _ctx(tmp_path: Path, policy: BaseFailures = "all") -> Any:
    return SimpleNamespace(cache_dir=tmp_path, keep_test_infra=False, base_runs={},
                           base_failures=policy)  # fmt: skip


def _verdict(statuses: dict[str, str]) -> Verdict:
    tests = [
        TestResult(test_id=i, expected=kind, status=statuses.get(i, "passed"))  # type: ignore[arg-type]
        for kind, ids in (("FAIL_TO_PASS", F2P), ("PASS_TO_PASS", P2P))
        for i in ids
    ]
    bad = any(t.status != "passed" for t in tests)
    return Verdict(instance_id="o__p-1", status="unresolved" if bad else "resolved", tests=tests,
                   reason="PASS_TO_PASS: 1 of 2 not passing (1 failed)" if bad else "")  # fmt: skip


class FakeRuns:
    """Stands in for `testrun.run_tests`: records what it was asked, returns a canned run."""

    def __init__(self, outcomes: dict[str, str], env_key: str = "env-1", **fields: Any) -> None:
        self.calls: list[str] = []
        self.outcomes, self.env_key, self.fields = outcomes, env_key, fields
        self.messages = {P2P[1]: "Error: getaddrinfo EAI_AGAIN postman-echo.com"}

    def __call__(self, task: Task, patch: str, ctx: Any, log_dir: Path) -> TestRun:
        self.calls.append(patch)
        outcomes = {
            i: TestOutcome(s, self.messages.get(i, f"{s} at base"))  # type: ignore[arg-type]
            for i, s in self.outcomes.items()
        }
        return TestRun(outcomes=outcomes, exit_code=1, patch_method="empty",
                       env_key=self.env_key, framework="pytest", **self.fields)  # fmt: skip


NETWORK_FAILS = {F2P[0]: "failed", P2P[0]: "passed", P2P[1]: "failed"}


def test_a_pass_to_pass_test_failing_at_base_is_excused_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns(NETWORK_FAILS)
    monkeypatch.setattr(baseline, "run_tests", runs)
    task, ctx = _task(), _ctx(tmp_path)
    verdict = excuse(task, _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"), ctx)
    assert verdict.status == "resolved" and verdict.base_failures == "all"
    assert [(e.test_id, e.status, e.base_status) for e in verdict.excused_tests] == [
        (P2P[1], "failed", "failed")
    ]
    assert "EAI_AGAIN postman-echo.com" in verdict.excused_tests[0].base_message
    assert "EAI_AGAIN" in verdict.excused_tests[0].network
    assert "1 PASS_TO_PASS test(s) excused" in verdict.reason
    assert runs.calls == [""], "the base run gets nothing of the submission"
    # The base's outcomes are kept on disk, under a name that covers the environment.
    record = tmp_path / "base-runs" / base_digest(task, ctx, "env-1") / "base.json"
    assert json.loads(record.read_text())["outcomes"][P2P[1]][0] == "failed"
    assert base_digest(task, ctx, "env-2") != base_digest(task, ctx, "env-1")
    # Test services beside the tests name the run too; none keeps the digest of before them.
    httpbin = ServiceUse(name="httpbin", version="0.10.2", env_key="svc-1")
    assert base_digest(task, ctx, "env-1", []) == base_digest(task, ctx, "env-1")
    with_service = base_digest(task, ctx, "env-1", [httpbin])
    assert with_service != base_digest(task, ctx, "env-1")
    newer = httpbin.model_copy(update={"version": "0.10.3", "env_key": "svc-2"})
    assert base_digest(task, ctx, "env-1", [newer]) != with_service
    # and the hosts they stand in for: base runs made without stand-ins are not reused
    hosts = httpbin.model_copy(update={"hosts": ["httpbin.org"], "host_ports": ["80 http"]})
    assert base_digest(task, ctx, "env-1", [hosts]) not in (
        with_service,
        base_digest(task, ctx, "env-1"),
    )
    more = hosts.model_copy(update={"hosts": ["httpbin.org", "www.google.co.uk"]})
    assert base_digest(task, ctx, "env-1", [more]) != base_digest(task, ctx, "env-1", [hosts])
    # Another process (a fresh context) reads it instead of running the tests again.
    again = excuse(task, _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"), _ctx(tmp_path))
    assert again.status == "resolved" and runs.calls == [""]
    # A run by another framework (an override pinning sympy's runner where pytest ran before,
    # same environment) never reads the other runner's base run: it makes its own.
    assert base_digest(task, ctx, "env-1", framework="sympy") != base_digest(task, ctx, "env-1")
    pinned = TestRun(env_key="env-1", framework="sympy")
    excuse(task, _verdict({P2P[1]: "failed"}), pinned, _ctx(tmp_path))
    assert runs.calls == ["", ""]


def test_fail_to_pass_tests_are_never_excused_and_need_no_base_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns(NETWORK_FAILS)
    monkeypatch.setattr(baseline, "run_tests", runs)
    verdict = excuse(_task(), _verdict({F2P[0]: "failed", P2P[1]: "failed"}),
                     TestRun(env_key="env-1"), _ctx(tmp_path))  # fmt: skip
    assert verdict.status == "unresolved" and not verdict.excused_tests
    assert verdict.base_failures == "all", "the verdict still says which policy graded it"
    assert runs.calls == [], "no base run when no excuse could change the verdict"
    passed = excuse(_task(), _verdict({}), TestRun(env_key="env-1"), _ctx(tmp_path))
    assert passed.status == "resolved" and not passed.excused_tests and runs.calls == []


def test_a_test_that_passes_at_base_still_counts_against_the_submission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(baseline, "run_tests", FakeRuns(NETWORK_FAILS))
    verdict = excuse(_task(), _verdict({P2P[0]: "failed", P2P[1]: "failed"}),
                     TestRun(env_key="env-1"), _ctx(tmp_path))  # fmt: skip
    assert verdict.status == "unresolved"
    assert [e.test_id for e in verdict.excused_tests] == [P2P[1]]  # listed, not enough
    assert "excused" in verdict.reason


@pytest.mark.parametrize(
    ("fields", "env_key", "why"),
    [
        ({"error": "tests timed out after 10 s", "timed_out": True}, "env-1", "no usable results"),
        ({"failure": "the tests' reporting was tampered with"}, "env-1", "no usable results"),
        ({}, "env-rebuilt", "ran in environment env-rebuilt"),
    ],
)
def test_a_base_run_that_errored_or_ran_elsewhere_excuses_nothing_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any], env_key: str, why: str
) -> None:
    monkeypatch.setattr(baseline, "run_tests", FakeRuns(NETWORK_FAILS, env_key, **fields))
    verdict = excuse(_task(), _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"),
                     _ctx(tmp_path))  # fmt: skip
    assert verdict.status == "unresolved" and not verdict.excused_tests
    assert "no PASS_TO_PASS test excused" in verdict.reason and why in verdict.reason
    if env_key != "env-1":  # a base run in another environment is not cached as this one's
        assert not list((tmp_path / "base-runs").glob("*/base.json"))


def test_a_run_the_submission_broke_is_never_excused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns(NETWORK_FAILS)
    monkeypatch.setattr(baseline, "run_tests", runs)
    broken = TestRun(env_key="env-1", failure="the tests' reporting was tampered with")
    verdict = excuse(_task(), _verdict({P2P[1]: "failed"}), broken, _ctx(tmp_path))
    assert verdict.status == "unresolved" and runs.calls == []


def test_base_run_records_every_expected_id_as_a_submission_would_be_graded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the second P2P test ran at base (the first is "missing": it never ran there).
    monkeypatch.setattr(baseline, "run_tests", FakeRuns({F2P[0]: "failed", P2P[1]: "skipped"}))
    found = base_run(_task(), _ctx(tmp_path), "env-1")
    assert found.clean and found.env_key == "env-1"
    assert {i: s for i, (s, _) in found.outcomes.items()} == {
        F2P[0]: "failed",
        P2P[0]: "missing",
        P2P[1]: "skipped",
    }
    assert BaseRun.from_json(found.to_json().encode()) == found


def test_scores_the_table_and_the_report_say_what_was_excused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from swebounty.report import render_table, write_report
    from swebounty.scoring import score_run
    from swebounty.tasks import Submission

    monkeypatch.setattr(baseline, "run_tests", FakeRuns(NETWORK_FAILS))
    task, sub = _task(), Submission(instance_id="o__p-1", model_patch="diff")
    graded = excuse(task, _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"), _ctx(tmp_path))
    score = score_run([task], [sub], [graded], run_id="excused", estimate=None)
    assert score.excused is not None and score.excused.resolved_with_excuse == 1
    assert score.excused.instance_ids == ["o__p-1"] and score.excused.other_verdicts == 0
    plain = score_run([task], [sub], [_verdict({})], run_id="strict", estimate=None)
    assert plain.excused is None
    console = Console(width=300, record=True)
    console.print(render_table([score, plain], width=300))
    assert "base failures all: 1 resolved" in console.export_text()
    info = {"run_id": "excused", "dataset": "d"}
    html = write_report([(score, info, [task], [graded], [sub])], tmp_path / "r.html").read_text()
    assert "excused base failures" in html and "excused tests" in html
    assert "EAI_AGAIN postman-echo.com" in html  # the base run's own evidence


# ---------------------------------------------------------------------------- the policies

# P2P[1] fails at base for want of the network (EAI_AGAIN), P2P[0] with a plain assertion.
BOTH_FAIL = {F2P[0]: "failed", P2P[0]: "failed", P2P[1]: "failed"}


def test_network_policy_excuses_only_what_failed_at_base_for_want_of_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(baseline, "run_tests", FakeRuns(BOTH_FAIL))
    ctx = _ctx(tmp_path, "network")
    dns_only = excuse(_task(), _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"), ctx)
    assert dns_only.status == "resolved" and dns_only.base_failures == "network"
    [excused] = dns_only.excused_tests
    assert excused.test_id == P2P[1] and "EAI_AGAIN postman-echo.com" in excused.network
    assert "for want of the network" in dns_only.reason
    # The assertion failing at base too is held, and the verdict says what `all` would do.
    both = excuse(_task(), _verdict({P2P[0]: "failed", P2P[1]: "failed"}),
                  TestRun(env_key="env-1"), ctx)  # fmt: skip
    assert both.status == "unresolved"
    assert [e.test_id for e in both.excused_tests] == [P2P[1]]
    assert "not for want of the network" in both.reason and "--base-failures all" in both.reason
    plain = excuse(_task(), _verdict({P2P[0]: "failed"}), TestRun(env_key="env-1"), ctx)
    assert plain.status == "unresolved" and not plain.excused_tests
    # The same verdict under `all`: both excused, one of them for want of the network.
    wide = excuse(_task(), _verdict({P2P[0]: "failed", P2P[1]: "failed"}),
                  TestRun(env_key="env-1"), _ctx(tmp_path, "all"))  # fmt: skip
    assert wide.status == "resolved" and len(wide.excused_tests) == 2
    assert "1 of them for want of the network" in wide.reason
    assert [status_under(wide, p) for p in ("strict", "network", "all")] == [
        "unresolved", "unresolved", "resolved"
    ]  # fmt: skip
    assert [status_under(dns_only, p) for p in ("strict", "network")] == [
        "unresolved", "resolved"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="says nothing of all"):
        status_under(dns_only, "all")


def test_strict_excuses_nothing_and_runs_no_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns(BOTH_FAIL)
    monkeypatch.setattr(baseline, "run_tests", runs)
    verdict = excuse(_task(), _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"),
                     _ctx(tmp_path, "strict"))  # fmt: skip
    assert verdict.status == "unresolved" and not verdict.excused_tests
    assert verdict.base_failures == "strict" and runs.calls == []
    assert status_under(verdict, "strict") == "unresolved"


def test_network_evidence_can_come_from_the_test_s_section_of_pytest_s_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest's one-line message says only what was asserted; the download's failure is in the
    # test's report section (as sphinx's test_latex_images: python.org's logo).
    runs = FakeRuns(BOTH_FAIL)
    runs.messages = {P2P[1]: "AssertionError: assert 'logo.png' in result"}
    monkeypatch.setattr(baseline, "run_tests", runs)
    output = tmp_path / "base-runs" / base_digest(_task(), _ctx(tmp_path), "env-1") / "logs"
    output.mkdir(parents=True)
    (output / "test_output.txt").write_text(
        "_____ test_network _____\nWARNING: Could not fetch remote image: https://www.python"
        ".org/logo.png [Temporary failure in name resolution]\nE   AssertionError\n"
        "_____ test_other _____\nE   AssertionError: the connection was closed\n"
    )
    found = base_run(_task(), _ctx(tmp_path), "env-1")
    assert "Temporary failure in name resolution" in found.network[P2P[1]]
    assert P2P[0] not in found.network and F2P[0] not in found.network


def test_a_run_s_policy_is_recorded_and_never_mixed() -> None:
    assert run_policy({"base_failures": "network"}) == "network"
    assert run_policy({"excuse_base_failures": True}) == "all"  # runs made before the names
    assert run_policy({"kind": "gold"}) == "strict"
    assert run_policy({"base_failures": "bogus"}) == "strict"
    run = {"run_id": "r", "config": {"base_failures": "network"}}
    assert policy_change(run, True, "network") is None
    assert policy_change(run, False, "strict") is None  # nothing graded yet
    assert policy_change(None, False, "all") is None
    problem = policy_change(run, True, "strict")
    assert (
        problem and "mix two grading policies" in problem and "--base-failures network" in problem
    )


def test_verdicts_stored_under_the_old_flag_read_as_graded_under_all(tmp_path: Path) -> None:
    from swebounty.store.schema import MIGRATIONS

    db = sqlite3.connect(tmp_path / "runs.sqlite")
    for step in MIGRATIONS[:3]:
        step(db)
    old = {"instance_id": "o__p-1", "status": "resolved", "excuse_base_failures": True}
    cells = ("r", "o__p-1", 1, "resolved", 0, "", "[]", None, None, None, 0.0, None)
    db.execute("INSERT INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
               (*cells, json.dumps(old), "now"))  # fmt: skip
    db.execute("INSERT INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
               (*cells[:2], 2, *cells[3:], json.dumps({**old, "excuse_base_failures": False}),
                "now"))  # fmt: skip
    for step in MIGRATIONS[3:]:
        step(db)
    rows = [Verdict.model_validate_json(r[0]) for r in db.execute("SELECT verdict FROM verdicts")]
    assert [v.base_failures for v in rows] == ["all", "strict"]
