"""Agents on SWE-Lancer's Manager tasks with no clone of the repository: the `llm` agent, driven
by a scripted OpenAI-compatible server, sees the issue and the proposals only, and its picks are
graded and paid; the attempt records that it had no workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_helpers import needs_bwrap
from fake_openai import FakeOpenAI, bash, submit
from swebounty.cli import app
from swebounty.store import Store
from swelancer_helpers import OLD_HEADER, manager_data, manager_row, write_csv

pytestmark = [needs_bwrap]


def _cli(tmp_path: Path, *args: str) -> str:
    result = CliRunner().invoke(
        app,
        [*args, "--cache-dir", str(tmp_path / "cache"), "--runs-dir", str(tmp_path / "runs")],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_llm_picks_without_a_clone_are_graded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No clone here and none can be made (git may not leave the machine), whatever the network.
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")
    rows = [
        manager_row("1-manager-0", "4000", manager_data([0, 1, 2], 2, title="First issue")),
        manager_row("2-manager-0", "1000", manager_data([0, 1], 1, title="Second issue")),
    ]
    dataset = write_csv(tmp_path / "swelancer_tasks_lite.csv", OLD_HEADER, rows)
    # Task 1: a bash call (not offered: answered with an error), then the right pick.
    # Task 2: the wrong pick.
    script = [bash("ls"), submit(proposal=2), submit(proposal=0)]
    with FakeOpenAI(script) as fake:
        _cli(tmp_path, "run", str(dataset), "--agent", "llm", "--model", "fake-model",
             "--base-url", fake.url, "--run-id", "M", "--repos-dir", str(tmp_path))  # fmt: skip
    first = fake.chat_requests[0].body
    assert [t["function"]["name"] for t in first["tools"]] == ["submit", "skip"]
    prompt = first["messages"][1]["content"]
    assert "No copy of the repository" in prompt and "First issue" in prompt
    assert '<proposal index="2">\nproposal 2\n</proposal>' in prompt
    assert "unknown tool 'bash'" in fake.chat_requests[1].body["messages"][-1]["content"]
    with Store.open(tmp_path / "runs" / "runs.sqlite") as store:
        attempts = {i: store.attempt("M", i, 1) for i in ("1-manager-0", "2-manager-0")}
        verdicts = {v.instance_id: v for v in store.verdicts("M")}
    first_attempt, second_attempt = attempts.values()
    assert first_attempt is not None and second_attempt is not None
    assert (first_attempt.pick, second_attempt.pick) == (2, 0)
    for attempt in (first_attempt, second_attempt):
        assert attempt.workspace is False and attempt.trajectory[0]["type"] == "no_workspace"
        assert "no clone of Expensify/App" in attempt.trajectory[0]["reason"]
    assert verdicts["1-manager-0"].status == "resolved"
    assert verdicts["2-manager-0"].status == "unresolved"
    [score] = json.loads(_cli(tmp_path, "score", "M", "--json"))
    assert score["overall"]["dollars"]["earned_usd"] == 4000.0
    assert score["by_split"]["lite"]["dollars"]["available_usd"] == 5000.0


def test_gold_needs_no_clone_and_is_paid_in_full(tmp_path: Path) -> None:
    rows = [manager_row(f"{n}-manager-0", "500", manager_data([0, 1], n % 2)) for n in (1, 2)]
    dataset = write_csv(tmp_path / "swelancer_tasks_lite.csv", OLD_HEADER, rows)
    _cli(tmp_path, "run", str(dataset), "--agent", "gold", "--run-id", "G")
    [score] = json.loads(_cli(tmp_path, "score", "G", "--json"))
    assert score["pick"]["resolved"] == 2 and score["overall"]["dollars"]["earned_usd"] == 1000.0
    with Store.open(tmp_path / "runs" / "runs.sqlite") as store:
        assert all(a.workspace is None for a in store.attempts("G"))  # gold uses none
