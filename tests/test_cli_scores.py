"""`swebounty score` and `swebounty report` over a store filled by hand, checked against hand-computed numbers.

The run "multi" has 3 graded attempts at each of 4 tasks (values $100, $300, none, $200):

    task  repo   month    value  attempts                              graded n  resolved c
    t1    org/a  2024-01  $100   resolved, wrong, resolved (flagged)   3         2
    t2    org/a  2024-02  $300   skipped (empty), wrong, wrong         3         0
    t3    org/b  2024-02  none   resolved, error, resolved, wrong      3         2
    t4    org/b  2024-03  $200   pick 1 (right), pick 0, pick 1        3         2

    resolve rate = mean(c/n) = (2/3 + 0 + 2/3 + 2/3) / 4 = 50%
    Kprize       = (a - b - c/10000) / (a + b + c) with a=6, b=5, c=1 -> 0.9999 / 12 = 0.083325
    pass@2       = mean(1, 0, 1, 1) = 75%;  pass^2 = mean(1/3, 0, 1/3, 1/3) = 25%
    dollars      = 100 * 2/3 + 200 * 2/3 = $200 of $600 (33%); t3 has no value and no patch to
                   estimate one from, so it is counted apart, never as $0
    cost         = 13 attempts x $0.25 = $3.25; one attempt per task costs $1.00, so $200 per $
    cutoff 2024-02-01: before = t1 (66.7%), after = t2, t3, t4 ((0 + 2/3 + 2/3) / 3 = 44.4%)

The run "skipper" submits one empty patch per task: 4 skips, Kprize -4/10000/4 = -0.000100.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from swebounty.cli import app
from swebounty.records import write_jsonl
from swebounty.store import Store
from swebounty.tasks import Submission, Task
from swebounty.verdicts import TestResult as Result  # not a test class for pytest
from swebounty.verdicts import Verdict

PATCH = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
# (instance_id, repo, created, value, kind)
TASKS = [
    ("t1", "org/a", datetime(2024, 1, 10), 100.0, "fix"),
    ("t2", "org/a", datetime(2024, 2, 5), 300.0, "fix"),
    ("t3", "org/b", datetime(2024, 2, 20), None, "fix"),
    ("t4", "org/b", datetime(2024, 3, 1), 200.0, "pick"),
]
# instance_id -> outcome of attempts 1, 2, ...: resolved, wrong, skipped, error, or "pick N"
ATTEMPTS = {
    "t1": ["resolved", "wrong", "resolved"],
    "t2": ["skipped", "wrong", "wrong"],
    "t3": ["resolved", "error", "resolved", "wrong"],
    "t4": ["pick 1", "pick 0", "pick 1"],
}


def _task(iid: str, repo: str, created: datetime, value: float | None, kind: Any) -> Task:
    pick = kind == "pick"
    return Task(
        instance_id=iid,
        repo=repo,
        base_commit="0" * 40,
        created_at=created,
        value_usd=value,
        kind=kind,
        # t3 has no reference patch, so no pricing estimate can value it either.
        patch="" if iid == "t3" or pick else PATCH,
        FAIL_TO_PASS=[] if pick else ["tests/test_m.py::test_x"],
        proposals=["keep x", "set x = 2"] if pick else [],
        accepted_proposal=1 if pick else None,
    )


def _attempt(iid: str, number: int, outcome: str, model: str) -> tuple[Submission, Verdict]:
    pick = int(outcome.split()[1]) if outcome.startswith("pick") else None
    sub = Submission(
        instance_id=iid,
        model_name_or_path=model,
        attempt=number,
        model_patch=None if pick is not None or outcome == "skipped" else PATCH,
        pick=pick,
        cost_usd=0.25,
        tokens_in=1000,
        tokens_out=100,
        seconds=2.0,
    )
    resolved = outcome == "resolved" or pick == 1
    status = {"skipped": "unresolved", "error": "error"}.get(outcome, "unresolved")
    verdict = Verdict(
        instance_id=iid,
        attempt=number,
        model_name_or_path=model,
        status="resolved" if resolved else status,
        empty_patch=outcome == "skipped",
        reason="" if resolved else f"attempt {number}: {outcome}",
        tests=[]
        if pick is not None
        else [
            Result(
                test_id="tests/test_m.py::test_x",
                expected="FAIL_TO_PASS",
                status="passed" if resolved else "failed",
            )
        ],
        hack_flags=["conftest_changed"] if (iid, number) == ("t1", 3) else [],
        seconds=1.0,
    )
    return sub, verdict


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset and a store with the runs "multi" and "skipper"; returns their folder."""
    root = tmp_path_factory.mktemp("scores")
    dataset = root / "tasks.jsonl"
    write_jsonl(dataset, [_task(*row) for row in TASKS])
    with Store.open(root / "runs" / "runs.sqlite") as store:
        for run_id in ("multi", "skipper"):
            store.ensure_run(run_id, dataset=str(dataset), config={}, sandbox="bwrap", unsafe=False)
        for iid, outcomes in ATTEMPTS.items():
            for number, outcome in enumerate(outcomes, start=1):
                sub, verdict = _attempt(iid, number, outcome, "model-m")
                store.add_submission("multi", sub)
                store.save_verdict("multi", verdict)
            sub, verdict = _attempt(iid, 1, "skipped", "model-s")
            store.add_submission("skipper", sub)
            store.save_verdict("skipper", verdict)
    return root


def invoke(root: Path, *args: str, columns: int = 80) -> Any:
    runner = CliRunner(env={"COLUMNS": str(columns)})
    return runner.invoke(
        app,
        [*args, "--runs-dir", str(root / "runs"), "--cache-dir", str(root / "cache")],
    )


def test_score_json_has_the_hand_computed_numbers(dirs: Path) -> None:
    out = dirs / "scores" / "multi.json"
    result = invoke(
        dirs, "score", "multi", "--json", "--model-cutoff", "2024-02-01", "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    (score,) = json.loads(result.stdout)
    assert json.loads(out.read_text(encoding="utf-8")) == [score]

    overall = score["overall"]
    assert score["run_id"] == "multi" and score["models"] == ["model-m"]
    assert (overall["resolved"], overall["wrong"], overall["skipped"]) == (6, 5, 1)
    assert (overall["errors"], overall["graded_tasks"], overall["tasks_resolved"]) == (1, 4, 3)
    rate = overall["resolve_rate"]
    assert rate["value"] == pytest.approx(0.5)
    assert rate["low"] <= 0.5 <= rate["high"] and rate["low"] < rate["high"]
    assert overall["kprize"]["value"] == pytest.approx((6 - 5 - 1 / 10000) / 12, abs=1e-9)

    dollars = overall["dollars"]
    assert dollars["earned_usd"] == pytest.approx(200.0)
    assert dollars["available_usd"] == pytest.approx(600.0)
    assert dollars["earned_any_usd"] == pytest.approx(300.0)
    assert dollars["share"]["value"] == pytest.approx(1 / 3)
    assert (dollars["tasks_valued"], dollars["tasks_estimated"], dollars["tasks_unvalued"]) == (
        3,
        0,
        1,
    )

    curve = {
        p["k"]: (p["tasks"], p["pass_at_k"]["value"], p["pass_hat_k"]["value"])
        for p in score["pass_at_k"]
    }
    assert curve[1] == (4, pytest.approx(0.5), pytest.approx(0.5))
    assert curve[2] == (4, pytest.approx(0.75), pytest.approx(0.25))
    assert curve[3] == (4, pytest.approx(0.75), pytest.approx(0.0))
    assert set(curve) == {1, 2, 3}

    assert score["pick"]["resolve_rate"]["value"] == pytest.approx(2 / 3)
    assert score["fix"]["resolve_rate"]["value"] == pytest.approx(4 / 9)
    cost = score["cost"]
    assert cost["attempts"] == 13 and cost["attempts_with_cost"] == 13
    assert cost["total_usd"] == pytest.approx(3.25)
    assert cost["one_pass_usd"] == pytest.approx(1.0)
    assert cost["earned_per_usd"] == pytest.approx(200.0)
    assert (cost["tokens_in"], cost["tokens_out"]) == (13_000, 1_300)
    assert score["hacks"]["counts"] == {"conftest_changed": 1}
    assert score["hacks"]["resolved_flagged"] == 1

    assert sorted(score["by_repo"]) == ["org/a", "org/b"]
    assert score["by_repo"]["org/a"]["resolve_rate"]["value"] == pytest.approx(1 / 3)
    assert sorted(score["by_month"]) == ["2024-01", "2024-02", "2024-03"]
    assert score["model_cutoff"] == "2024-02-01"
    by_cutoff = score["by_cutoff"]
    assert by_cutoff["before"]["resolve_rate"]["value"] == pytest.approx(2 / 3)
    assert by_cutoff["after"]["resolve_rate"]["value"] == pytest.approx(4 / 9)
    assert by_cutoff["after"]["graded_tasks"] == 3


def test_score_table_in_a_narrow_and_a_wide_terminal(dirs: Path) -> None:
    narrow = invoke(dirs, "score", "multi", "skipper", "--model-cutoff", "2024-02-01")
    assert narrow.exit_code == 0, narrow.output
    text = narrow.stdout
    assert max(len(line) for line in text.splitlines()) <= 80  # a scorecard, not a squeezed row
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") == 4}
    assert "50.0% [" in rows["resolve rate [95% CI]"]
    assert "0.0% [0.0–0.0]" in rows["resolve rate [95% CI]"]
    assert "0.083325" in rows["Kprize score [95% CI]"]
    assert "-0.000100" in rows["Kprize score [95% CI]"]
    assert "75.0% (k=3)" in rows["pass@k"] and "0.0% (k=3)" in rows["pass^k"]
    assert "$200 / $600 (33%)" in rows["earned / available"]
    assert "$0 / $600 (0%)" in rows["earned / available"]
    assert "1 without a value" in text
    assert "$3.25" in rows["cost"] and "200.0" in rows["$ earned per $ spent"]
    assert "66.7%" in rows["pick accuracy"]
    assert "6 / 5 / 1 / 1" in rows["resolved/wrong/skipped/error"]
    assert "13,000 / 1,300" in rows["tokens in / out"]
    # Breakdowns: by repository, by month, and around the cutoff (with intervals).
    for title in ("by repository", "by month of task creation", "model cutoff (2024-02-01)"):
        assert title in text
    before = next(line for line in text.splitlines() if line.startswith("│ before"))
    after = next(line for line in text.splitlines() if line.startswith("│ after"))
    assert "66.7% [" in before and "44.4% [" in after

    wide = invoke(dirs, "score", "multi", "skipper", columns=250)
    assert wide.exit_code == 0, wide.output
    (multi,) = [line for line in wide.stdout.splitlines() if line.startswith("│ multi ")]
    for cell in ("model-m", "6 / 5 / 1 / 1", "50.0% [", "75.0% (k=3)", "0.083325", "$3.25"):
        assert cell in multi


def test_report_writes_one_self_contained_file(dirs: Path) -> None:
    out = dirs / "html" / "report.html"
    result = invoke(
        dirs, "report", "skipper", "multi", "-o", str(out), "--model-cutoff", "2024-02-01"
    )
    assert result.exit_code == 0, result.output
    assert str(out) in result.stdout.replace("\n", "")
    html = out.read_text(encoding="utf-8")
    assert re.search(r"<script[^>]*\bsrc=|<link\b|<img\b|@import", html) is None
    for match in re.finditer(r"https?://", html):  # only SVG namespace names, never fetched
        assert html[: match.start()].rstrip('="').endswith(("xmlns", "xmlns:xlink"))
    board = html[html.index('id="leaderboard"') : html.index('id="charts"')]
    assert board.index("multi") < board.index("skipper")  # best resolve rate first
    assert "50.0%" in board and "0.083325" in board and "-0.000100" in board
    assert "$200" in board and "1 without a value" in board
    passk = html[html.index('id="fig-passk"') :]
    assert passk.index("<svg") < passk.index("</figure>")  # a real curve: several attempts
    assert 'id="contamination"' in html and 'id="kinds"' in html
    assert html.count('<details class="task"') == 8
    assert "conftest_changed" in html and "attempt 2: wrong" in html


@pytest.mark.parametrize("command", ["score", "report"])
def test_unknown_run_and_bad_cutoff_are_clear_errors(dirs: Path, command: str) -> None:
    unknown = invoke(dirs, command, "multi", "nope")
    assert unknown.exit_code == 2
    assert "no run 'nope'" in unknown.output and "multi, skipper" in unknown.output

    bad = invoke(dirs, command, "multi", "--model-cutoff", "June 2025")
    assert bad.exit_code == 2
    assert "'June 2025' is not a date like 2025-06-30" in bad.output


def test_missing_store_and_moved_dataset(tmp_path: Path, dirs: Path) -> None:
    nothing = invoke(tmp_path, "score", "multi")
    assert nothing.exit_code == 2 and "no runs in" in nothing.output
    assert not (tmp_path / "runs").exists()  # a mistyped --runs-dir creates nothing

    with Store.open(tmp_path / "runs" / "runs.sqlite") as store:
        store.ensure_run(
            "lost", dataset=str(tmp_path / "gone.jsonl"), config={}, sandbox="bwrap", unsafe=False
        )
    moved = invoke(tmp_path, "report", "lost", "-o", str(tmp_path / "r.html"))
    assert moved.exit_code == 2 and "cannot read its dataset" in moved.output
    assert not (tmp_path / "r.html").exists()


def test_cutoff_with_a_time_zone_is_read_in_utc(dirs: Path) -> None:
    # 2024-02-01 01:00 at +02:00 is 2024-01-31 23:00 UTC: the cutoff date is the UTC one.
    result = invoke(dirs, "score", "multi", "--json", "--model-cutoff", "2024-02-01T01:00+02:00")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["model_cutoff"] == "2024-01-31"


def test_score_names_the_task_defects_of_each_run(tmp_path: Path) -> None:
    # t2's empty submission resolved nothing, but its FAIL_TO_PASS test passes on the base: a
    # defect of the task that `score` says, as `eval` and `run` do, whatever it prints.
    from swebounty.grading import TASK_DEFECT

    dataset = tmp_path / "tasks.jsonl"
    write_jsonl(dataset, [_task(*row) for row in TASKS[:2]])
    with Store.open(tmp_path / "runs" / "runs.sqlite") as store:
        for run_id in ("flawed", "sound"):
            store.ensure_run(run_id, dataset=str(dataset), config={}, sandbox="bwrap", unsafe=False)
            for iid in ("t1", "t2"):
                sub, verdict = _attempt(iid, 1, "skipped", "model-s")
                if (run_id, iid) == ("flawed", "t2"):
                    verdict = verdict.model_copy(update={"task_defect": TASK_DEFECT})
                store.add_submission(run_id, sub)
                store.save_verdict(run_id, verdict)

    table = invoke(tmp_path, "score", "flawed", "sound", columns=250)
    assert table.exit_code == 0, table.output
    (line,) = [line for line in table.stdout.splitlines() if "task defect" in line]
    assert line.startswith("run flawed: 1 task defect(s)") and "labels of t2 " in line
    assert "resolve rate" in table.stdout[: table.stdout.index(line)]  # after the scores

    as_json = invoke(tmp_path, "score", "flawed", "sound", "--json", columns=250)
    assert as_json.exit_code == 0, as_json.output
    assert [s["run_id"] for s in json.loads(as_json.stdout)] == ["flawed", "sound"]
    (line,) = [line for line in as_json.stderr.splitlines() if "task defect" in line]
    assert line.startswith("run flawed: 1 task defect(s)") and "labels of t2 " in line
