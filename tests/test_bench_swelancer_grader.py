"""bench/swelancer_grader.py: SWE-Lancer's Manager rule, applied to a CSV with the standard
library alone, beside swebounty's verdicts on the same picks; proposal ids that are not 0..n-1
map through the id order, and a disagreement is reported (exit status 1)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from bench_helpers import load_bench
from swebounty.cli import app
from swelancer_helpers import OLD_HEADER, manager_data, manager_row, write_csv


def _bench() -> ModuleType:
    return load_bench("swelancer_grader.py", "swelancer_grader")


def _row(qid: str, price: str, ids: list[int], correct: int) -> dict[str, str]:
    row = manager_row(qid, price, manager_data(ids, correct))
    listing = "".join(f"Proposal: {i}:\\n\\nproposal {i}\\n\\n" for i in ids)
    row["prompt"] = row["prompt"].replace("fixes the issue.", "fixes the issue.\\n\\n" + listing, 1)
    return row


def test_the_rule_and_swebounty_agree_on_first_proposal_picks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench()
    dataset = write_csv(tmp_path / "swelancer_tasks_lite.csv", OLD_HEADER, [
        _row("1-manager-0", "1000", [3, 5, 9], 3),  # ids not 0..n-1: the first is id 3
        _row("2-manager-0", "500", [0, 1], 1),
    ])  # fmt: skip
    rows = bench.manager_rows(dataset)
    assert rows["1-manager-0"]["listed"] == [3, 5, 9] and rows["1-manager-0"]["correct"] == 3
    assert bench.chosen_id({"pick": 1}, [9, 3, 5]) == 5  # an index into the ids in order
    assert bench.chosen_id({"selected_proposal_id": "9"}, [3, 5, 9]) == 9
    assert bench.chosen_id({"pick": 7}, [3, 5, 9]) is None
    first = tmp_path / "first.jsonl"
    assert bench.main([str(dataset), "--write-first", str(first)]) == 0
    assert [json.loads(line)["pick"] for line in first.read_text().splitlines()] == [0, 0]
    home = tmp_path / "home"
    result = CliRunner().invoke(app, ["eval", str(dataset), "--predictions", str(first),
                                      "--run-id", "first", "--home", str(home)])  # fmt: skip
    assert result.exit_code == 0, result.output
    out = tmp_path / "agreement.json"
    code = bench.main([str(dataset), "--predictions", str(first), "--run-id", "first",
                       "--home", str(home), "--json", str(out)])  # fmt: skip
    found = json.loads(out.read_text())
    assert code == 0 and found["differ"] == []
    assert found["swelancer_rule"] == {"correct": 1, "earned_usd": 1000.0}
    assert found["swebounty"] == {"resolved": 1, "earned_usd": 1000.0}
    # Graded against other picks than the run's: the disagreement is said.
    second = tmp_path / "second.jsonl"
    second.write_text(first.read_text().replace('"pick": 0', '"pick": 1'))
    code = bench.main([str(dataset), "--predictions", str(second), "--run-id", "first",
                       "--home", str(home)])  # fmt: skip
    assert code == 1 and "graded differently: 2" in capsys.readouterr().out
