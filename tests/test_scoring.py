"""Every metric of a run (scoring.py, outcomes.py) against values computed by hand; the
estimators it uses are tested in test_passk.py."""

from __future__ import annotations

import math
import sys
import types
from datetime import date, datetime, timedelta, timezone

import pytest

from swebounty.outcomes import classify, load_value_estimator
from swebounty.scores import RunScore
from swebounty.scoring import score_run, swebench_summary
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict

PATCH = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def task(iid: str, repo: str = "o/r", **kw: object) -> Task:
    return Task(instance_id=iid, repo=repo, base_commit="0" * 40, **kw)


def sub(iid: str, attempt: int = 1, patch: str | None = PATCH, **kw: object) -> Submission:
    return Submission(instance_id=iid, attempt=attempt, model_patch=patch, **kw)


def verdict(iid: str, status: str, attempt: int = 1, **kw: object) -> Verdict:
    return Verdict(instance_id=iid, attempt=attempt, status=status, **kw)


# ---------------------------------------------------------------------------- outcomes


def test_classify_each_kind_of_attempt() -> None:
    assert classify(sub("t"), verdict("t", "resolved")) == "resolved"
    assert classify(sub("t"), verdict("t", "unresolved")) == "wrong"
    assert classify(sub("t"), verdict("t", "patch_failed")) == "wrong"
    assert classify(sub("t"), verdict("t", "error")) == "error"
    assert classify(sub("t"), None) == "pending"
    # An empty or null patch is a skip whatever the harness said about it.
    assert classify(sub("t", patch=""), verdict("t", "error")) == "skipped"
    assert classify(sub("t", patch=None), None) == "skipped"
    assert classify(None, verdict("t", "unresolved", empty_patch=True)) == "skipped"
    assert classify(sub("t", patch=None, pick=2), verdict("t", "resolved")) == "resolved"


# ---------------------------------------------------------------------------- one run


@pytest.fixture
def mixed() -> tuple[list[Task], list[Submission], list[Verdict]]:
    tasks = [
        task("t1", "a/x", value_usd=100, created_at=datetime(2024, 1, 10)),
        task("t2", "a/x", value_usd=300, created_at=datetime(2024, 2, 5, tzinfo=timezone.utc)),
        task("t3", "b/y", created_at=datetime(2024, 2, 20)),  # no value
        task("t4", "b/y", value_usd=50),  # no date
        task("t5", "b/y", value_usd=200, kind="pick", created_at=datetime(2024, 3, 1)),
        task("t6", "b/y", value_usd=999),  # not in the run
    ]
    subs = [sub("t1"), sub("t2"), sub("t3", patch=""), sub("t4"), sub("t5", patch=None, pick=1)]
    verdicts = [
        verdict("t1", "resolved", seconds=2.0),
        verdict("t2", "unresolved", seconds=3.0),
        verdict("t3", "unresolved", empty_patch=True),
        verdict("t4", "error", reason="venv build failed"),
        verdict("t5", "resolved"),
    ]
    return tasks, subs, verdicts


def test_score_run_by_hand(mixed: tuple[list[Task], list[Submission], list[Verdict]]) -> None:
    tasks, subs, verdicts = mixed
    score = score_run(tasks, subs, verdicts, estimate=None, run_id="r")
    o = score.overall
    assert (o.tasks, o.graded_tasks, o.attempts) == (5, 4, 4)
    assert (o.resolved, o.wrong, o.skipped, o.errors, o.pending) == (2, 1, 1, 1, 0)
    assert o.resolve_rate is not None and o.resolve_rate.value == 0.5
    assert o.resolve_rate.low is not None and o.resolve_rate.high is not None
    assert 0.0 <= o.resolve_rate.low <= 0.5 <= o.resolve_rate.high <= 1.0
    assert o.kprize is not None and o.kprize.value == pytest.approx((2 - 1 - 1 / 10000) / 4)
    # t4 is an infrastructure error: its $50 is neither available nor lost.
    assert o.dollars.available_usd == 600 and o.dollars.earned_usd == 300
    assert o.dollars.share is not None and o.dollars.share.value == 0.5
    assert (o.dollars.tasks_valued, o.dollars.tasks_estimated, o.dollars.tasks_unvalued) == (
        3,
        0,
        1,
    )
    assert score.dataset_tasks == 6 and score.tasks_not_in_run == 1
    assert score.fix is not None and score.fix.resolve_rate is not None
    assert score.fix.resolve_rate.value == pytest.approx(1 / 3)
    assert score.pick is not None and score.pick.resolve_rate is not None
    assert score.pick.resolve_rate.value == 1.0 and score.pick.dollars.earned_usd == 200
    assert score.cost.eval_seconds == 5.0 and score.cost.total_usd is None
    assert score.verification is None and score.by_cutoff is None


def test_breakdowns_by_repo_month_and_cutoff(
    mixed: tuple[list[Task], list[Submission], list[Verdict]],
) -> None:
    tasks, subs, verdicts = mixed
    score = score_run(tasks, subs, verdicts, estimate=None, model_cutoff=date(2024, 2, 10))

    def rate(group: object) -> float | None:
        resolve = getattr(group, "resolve_rate", None)
        return None if resolve is None else resolve.value

    assert {k: rate(g) for k, g in score.by_repo.items()} == {"a/x": 0.5, "b/y": 0.5}
    assert {k: rate(g) for k, g in score.by_month.items()} == {
        "2024-01": 1.0,
        "2024-02": 0.0,
        "2024-03": 1.0,
        "unknown": None,  # t4 only errored: nothing graded
    }
    assert score.by_month["unknown"].errors == 1
    assert score.by_cutoff is not None
    assert {k: rate(g) for k, g in score.by_cutoff.items()} == {
        "after": 0.5,
        "before": 0.5,
        "unknown": None,
    }
    assert score.by_cutoff["before"].graded_tasks == 2  # t1, t2 (aware and naive dates mix)
    assert score.model_cutoff == date(2024, 2, 10)
    moved = score_run(tasks, subs, verdicts, estimate=None, model_cutoff=date(2024, 1, 1))
    assert moved.by_cutoff is not None and set(moved.by_cutoff) == {"after", "unknown"}


def test_attempts_give_pass_at_k_curves_and_expected_dollars() -> None:
    tasks = [task("t1", value_usd=90), task("t2", value_usd=30)]
    statuses = {"t1": ["resolved", "unresolved", "resolved"], "t2": ["unresolved"] * 3}
    subs = [sub(t, a) for t in statuses for a in (1, 2, 3)]
    verdicts = [verdict(t, s, a) for t, ss in statuses.items() for a, s in enumerate(ss, 1)]
    score = score_run(tasks, subs, verdicts, estimate=None)
    curve = [(p.k, p.tasks, p.pass_at_k.value, p.pass_hat_k.value) for p in score.pass_at_k]
    assert curve == [
        (1, 2, pytest.approx(1 / 3), pytest.approx(1 / 3)),
        (2, 2, pytest.approx(0.5), pytest.approx(1 / 6)),
        (3, 2, pytest.approx(0.5), pytest.approx(0.0)),
    ]
    o = score.overall
    assert o.resolve_rate is not None and o.resolve_rate.value == pytest.approx(1 / 3)
    assert o.kprize is not None and o.kprize.value == pytest.approx(-2 / 6)
    assert o.dollars.earned_usd == pytest.approx(60)  # 90 x 2/3
    assert o.dollars.earned_any_usd == 90 and o.tasks_resolved == 1


def test_pass_at_k_with_unequal_attempts_uses_tasks_that_have_k() -> None:
    tasks = [task("a"), task("b")]
    subs = [sub("a", 1), sub("b", 1), sub("b", 2)]
    verdicts = [verdict("a", "resolved"), verdict("b", "unresolved"), verdict("b", "resolved", 2)]
    score = score_run(tasks, subs, verdicts, estimate=None)
    assert [(p.k, p.tasks) for p in score.pass_at_k] == [(1, 2), (2, 1)]
    assert score.pass_at_k[0].pass_at_k.value == pytest.approx(0.75)
    assert score.pass_at_k[1].pass_at_k.value == 1.0


def test_cost_tokens_time_and_dollars_per_dollar() -> None:
    tasks = [task("t1", value_usd=100), task("t2", value_usd=50)]
    subs = [
        sub("t1", 1, cost_usd=2.0, tokens_in=1000, tokens_out=100, seconds=30.0),
        sub("t1", 2, cost_usd=4.0, tokens_in=3000, tokens_out=300, seconds=50.0),
        sub("t2", 1, cost_usd=1.0, tokens_in=500, seconds=10.0),
    ]
    verdicts = [verdict("t1", "resolved"), verdict("t1", "unresolved", 2), verdict("t2", "error")]
    cost = score_run(tasks, subs, verdicts, estimate=None).cost
    assert (cost.attempts, cost.attempts_with_cost) == (3, 3)
    assert cost.total_usd == 7.0 and cost.per_attempt_usd == pytest.approx(7 / 3)
    # One attempt at each task costs 3 (t1's mean) + 1 (t2) and earns 100 x 1/2.
    assert cost.one_pass_usd == pytest.approx(4.0)
    assert cost.earned_per_usd == pytest.approx(50 / 4)
    assert (cost.tokens_in, cost.tokens_out, cost.agent_seconds) == (4500, 400, 90.0)

    partial = score_run(tasks, [*subs[:2], sub("t2")], verdicts, estimate=None).cost
    assert partial.attempts_with_cost == 2 and partial.total_usd == 6.0
    assert partial.earned_per_usd is None  # a ratio over partly known costs would flatter

    # An attempt whose count is a lower bound is never summed as if it were complete.
    lower = sub("t2", 1, cost_usd=0.5, tokens_in=10, tokens_out=1, tokens_incomplete=True)
    incomplete = score_run(tasks, [*subs[:2], lower], verdicts, estimate=None).cost
    assert (incomplete.attempts, incomplete.attempts_with_cost) == (3, 2)
    assert incomplete.attempts_incomplete == 1
    assert incomplete.total_usd == 6.0 and incomplete.tokens_in == 4000
    assert incomplete.earned_per_usd is None


def test_hack_flags_are_counted_per_attempt() -> None:
    tasks = [task("t1"), task("t2"), task("t3")]
    subs = [sub("t1"), sub("t2"), sub("t3")]
    verdicts = [
        verdict("t1", "resolved", hack_flags=["test_file_changed", "conftest_changed"]),
        verdict("t2", "unresolved", hack_flags=["test_file_changed"]),
        verdict("t3", "resolved"),
    ]
    hacks = score_run(tasks, subs, verdicts, estimate=None).hacks
    assert hacks.counts == {"test_file_changed": 2, "conftest_changed": 1}
    assert (hacks.attempts_flagged, hacks.resolved_flagged) == (2, 1)
    assert hacks.instance_ids == ["t1", "t2"]


def test_verification_rate_only_when_agents_report_it() -> None:
    tasks = [task(f"t{i}") for i in range(4)]
    subs = [
        sub("t0", verified=True),
        sub("t1", verified=True),
        sub("t2", verified=False),
        sub("t3"),  # no signal: left out
    ]
    verdicts = [
        verdict("t0", "resolved"),
        verdict("t1", "unresolved"),
        verdict("t2", "unresolved"),
        verdict("t3", "resolved"),
    ]
    v = score_run(tasks, subs, verdicts, estimate=None).verification
    assert v is not None
    assert (v.attempts, v.verified, v.rate) == (3, 2, pytest.approx(2 / 3))
    assert (v.resolved_when_verified, v.resolved_when_unverified) == (0.5, 0.0)


def test_pending_unknown_and_no_graded_attempts() -> None:
    tasks = [task("t1")]
    score = score_run(tasks, [sub("t1"), sub("ghost")], [], estimate=None)
    assert score.overall.pending == 1 and score.overall.graded_tasks == 0
    assert score.overall.resolve_rate is None and score.overall.kprize is None
    assert score.pass_at_k == [] and score.unknown_instance_ids == ["ghost"]
    empty = score_run([], [], [], estimate=None)
    assert empty.overall.tasks == 0 and empty.overall.dollars.share is None


def test_tasks_without_value_use_the_pricing_estimate() -> None:
    tasks = [task("t1", value_usd=100), task("t2"), task("t3"), task("t4")]
    subs = [sub(t.instance_id) for t in tasks]
    verdicts = [verdict(t.instance_id, "resolved") for t in tasks]
    guesses = {"t2": 40.0, "t3": None, "t4": math.nan}
    dollars = score_run(tasks, subs, verdicts, estimate=lambda t: guesses[t.instance_id])
    d = dollars.overall.dollars
    assert (d.tasks_valued, d.tasks_estimated, d.tasks_unvalued) == (1, 1, 2)
    assert d.available_usd == 140 and d.earned_usd == 140


def test_the_fresh_tasks_estimate_is_found_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("swebounty.collect.pricing")
    fake.estimate_value = lambda task: 25.0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "swebounty.collect.pricing", fake)
    assert load_value_estimator() is fake.estimate_value
    score = score_run([task("t1")], [sub("t1")], [verdict("t1", "resolved")])
    assert score.overall.dollars.tasks_estimated == 1
    assert score.overall.dollars.earned_usd == 25.0
    monkeypatch.setitem(sys.modules, "swebounty.collect.pricing", None)  # import fails
    assert load_value_estimator() is None
    score = score_run([task("t1")], [sub("t1")], [verdict("t1", "resolved")])
    assert score.overall.dollars.tasks_unvalued == 1


def test_score_is_deterministic_and_round_trips_as_json(
    mixed: tuple[list[Task], list[Submission], list[Verdict]],
) -> None:
    tasks, subs, verdicts = mixed
    first = score_run(tasks, subs, verdicts, estimate=None, model_cutoff=date(2024, 2, 1))
    again = score_run(tasks, subs, verdicts, estimate=None, model_cutoff=date(2024, 2, 1))
    assert first == again
    assert RunScore.model_validate_json(first.model_dump_json()) == first
    aware = datetime(2024, 2, 1, tzinfo=timezone(timedelta(hours=5)))
    shifted = score_run(tasks, subs, verdicts, estimate=None, model_cutoff=aware)
    assert shifted.model_cutoff == date(2024, 1, 31)  # 00:00 at UTC+5 is the day before in UTC


# ---------------------------------------------------------------------------- SWE-bench


def test_swebench_summary_fields(mixed: tuple[list[Task], list[Submission], list[Verdict]]) -> None:
    tasks, subs, verdicts = mixed
    subs.append(sub("t2", 2))
    verdicts.append(verdict("t2", "resolved", 2))
    verdicts.append(verdict("t1", "patch_failed", 2))  # only a later attempt
    report = swebench_summary(tasks, [*subs, sub("ghost")], verdicts)
    assert report == {
        "total_instances": 6,
        "submitted_instances": 6,
        "completed_instances": 4,
        "resolved_instances": 2,
        "unresolved_instances": 2,
        "empty_patch_instances": 1,
        "error_instances": 1,
        "completed_ids": ["t1", "t2", "t3", "t5"],
        "incomplete_ids": ["t6"],
        "empty_patch_ids": ["t3"],
        "submitted_ids": ["ghost", "t1", "t2", "t3", "t4", "t5"],
        "resolved_ids": ["t1", "t5"],
        "unresolved_ids": ["t2", "t3"],
        "error_ids": ["t4"],
        "schema_version": 2,
    }
    second = swebench_summary(tasks, subs, verdicts, attempt=2)
    assert second["resolved_ids"] == ["t2"]
    assert second["error_ids"] == ["t1"]  # SWE-bench has no report for a patch that fails
    assert second["incomplete_ids"] == ["t3", "t4", "t5", "t6"]


def test_swebench_summary_of_an_empty_run_says_what_ran() -> None:
    # `eval --empty` evaluates every task with no patch: the counts say how each run went
    # besides that the patch was empty, and an empty patch never evaluated is only that.
    tasks = [task(f"t{i}", "a/x") for i in range(1, 5)]
    subs = [sub(t.instance_id, patch="") for t in tasks]
    verdicts = [
        verdict("t1", "unresolved", empty_patch=True),
        verdict("t2", "error", empty_patch=True, reason="no test result"),
        verdict("t3", "error", empty_patch=True, reason="no test result"),
    ]
    report = swebench_summary(tasks, subs, verdicts)
    assert report["empty_patch_ids"] == ["t1", "t2", "t3", "t4"]
    assert report["completed_ids"] == report["unresolved_ids"] == ["t1"]
    assert report["error_ids"] == ["t2", "t3"]
    assert (report["completed_instances"], report["error_instances"]) == (1, 2)
    assert report["resolved_instances"] == 0


def test_swebench_instance_report_shapes() -> None:
    from swebounty.outcomes import swebench_instance_report
    from swebounty.verdicts import TestResult as Result

    tests = [
        Result(test_id="a", expected="FAIL_TO_PASS", status="passed"),
        Result(test_id="b", expected="FAIL_TO_PASS", status="missing"),
        Result(test_id="c", expected="PASS_TO_PASS", status="passed"),
    ]
    graded = Verdict(
        instance_id="x", status="unresolved", tests=tests, patch_method="git", reason="b missing"
    )
    report = swebench_instance_report(Submission(instance_id="x", model_patch="diff"), graded)
    assert report == {
        "x": {
            "patch_is_None": False,
            "patch_exists": True,
            "patch_successfully_applied": True,
            "resolved": False,
            "tests_status": {
                "FAIL_TO_PASS": {"success": ["a"], "failure": ["b"]},
                "PASS_TO_PASS": {"success": ["c"], "failure": []},
                "FAIL_TO_FAIL": {"success": [], "failure": []},
                "PASS_TO_FAIL": {"success": [], "failure": []},
            },
        }
    }
    failed = Verdict(instance_id="x", status="patch_failed", reason="does not apply")
    report = swebench_instance_report(Submission(instance_id="x", model_patch=None), failed)
    assert report == {
        "x": {
            "patch_is_None": True,
            "patch_exists": False,
            "patch_successfully_applied": False,
            "resolved": False,
        }
    }
