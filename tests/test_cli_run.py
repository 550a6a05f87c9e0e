"""`swebounty run`: k attempts per task from the command line, resumable, scored."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_helpers import Demo, needs_bwrap
from fake_openai import FakeOpenAI, bash, submit
from swebounty.cli import app
from swebounty.store import Store

pytestmark = [pytest.mark.sandbox, pytest.mark.network, needs_bwrap]
runner = CliRunner()

# Fixes the roman numerals (demo task 1) on attempts 1 and 3, gets it wrong on attempt 2, and
# skips every other task: pass@1 2/3 and pass@3 1 on task 1.
ROMAN_AGENT = """\
import json, pathlib, sys
task = json.load(sys.stdin)
if task["instance_id"] != "demo__tinytext-1":
    sys.exit(42)
good = [1000, "M", 900, "CM", 500, "D", 400, "CD", 100, "C", 90, "XC", 50, "L", 40, "XL",
        10, "X", 9, "IX", 5, "V", 4, "IV", 1, "I"]
pairs = list(zip(good[::2], good[1::2])) if task["attempt"] != 2 else [(1000, "M"), (1, "I")]
path = pathlib.Path("tinytext/roman.py")
lines = [f"_VALUES = {pairs!r}" if l.startswith("_VALUES =") else l
         for l in path.read_text().splitlines()]
path.write_text("\\n".join(lines) + "\\n")
"""


@pytest.fixture(scope="module")
def cache_dir(shared_demo: Demo) -> Path:
    # The demo's cache of the agent tests: its environment is built once and shared, as in
    # real use (nothing here checks what a cache holds).
    return shared_demo.cache


def _cli(cache: Path, runs: Path, *args: str) -> str:
    result = runner.invoke(
        app, [*args, "--cache-dir", str(cache), "--runs-dir", str(runs)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_three_attempts_per_task_resumable_and_scored(cache_dir: Path, tmp_path: Path) -> None:
    agent = tmp_path / "roman_agent.py"
    agent.write_text(ROMAN_AGENT)
    runs = tmp_path / "runs"
    args = ["run", "--demo", "--agent", "command", "--command", f"python3 {agent}",
            "--attempts", "3", "--run-id", "X", "--workers", "2"]  # fmt: skip
    first = _cli(cache_dir, runs, *args)
    assert "pass@3 25.0%" in first  # task 1 of 4
    with Store.open(runs / "runs.sqlite") as store:
        attempts = store.attempts("X")
        verdicts = {(v.instance_id, v.attempt): v for v in store.verdicts("X")}
        assert store.provenance("X")["agent"] == "command"  # type: ignore[index]
    assert len(attempts) == 12 and len(verdicts) == 12
    assert {(a.instance_id, a.attempt) for a in attempts} == set(verdicts)
    roman = {a.attempt: verdicts[a.instance_id, a.attempt].status for a in attempts
             if a.instance_id == "demo__tinytext-1"}  # fmt: skip
    assert roman == {1: "resolved", 2: "unresolved", 3: "resolved"}
    others = [a for a in attempts if a.instance_id != "demo__tinytext-1"]
    assert {a.status for a in others} == {"skipped"}
    started = {(a.instance_id, a.attempt): a.started_at for a in attempts}
    assert len(set(started.values())) == 12  # independent attempts, each its own run

    again = _cli(cache_dir, runs, *args)
    assert "12 of 12 attempts already graded" in again
    # The run graded under the default base failures policy; another one is refused.
    with Store.open(runs / "runs.sqlite") as store:
        assert store.run("X")["config"]["base_failures"] == "network"  # type: ignore[index]
        assert {v.base_failures for v in store.verdicts("X")} == {"network"}
    mixed = runner.invoke(app, [*args, "--base-failures", "strict", "--cache-dir",
                                str(cache_dir), "--runs-dir", str(runs)])  # fmt: skip
    assert mixed.exit_code != 0 and "mix two grading policies" in mixed.output
    with Store.open(runs / "runs.sqlite") as store:
        assert {(a.instance_id, a.attempt): a.started_at for a in store.attempts("X")} == started

    scores = _cli(cache_dir, runs, "score", "X", "--json")
    [score] = json.loads(scores)
    passes = {p["k"]: p["pass_at_k"]["value"] for p in score["pass_at_k"]}
    assert passes[1] == pytest.approx((2 / 3) / 4) and passes[3] == pytest.approx(1 / 4)
    # a = 2 resolved, b = 1 wrong, c = 9 skipped
    assert score["overall"]["kprize"]["value"] == pytest.approx((2 - 1 - 9 / 10000) / 12)
    assert score["eligibility"]["kprize"] is False  # no open weights, no --code-url
    table = _cli(cache_dir, runs, "score", "X")
    assert "(k=3)" in table and "pass@1" in table and "0.083258" in table
    report = json.loads((runs / "X" / "report.json").read_text())
    assert report["swebounty"]["provenance"]["offline"] is True
    assert report["swebounty"]["eligibility"]["kprize"] is False
    html = tmp_path / "report.html"
    _cli(cache_dir, runs, "report", "X", "-o", str(html))
    page = html.read_text()
    assert "Kprize rule" in page and "not eligible" in page and "agent command" in page


def test_llm_agent_from_the_command_line_with_cost_and_provenance(
    cache_dir: Path, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."fake-model"]\ninput = 1000\noutput = 2000\n')
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF" + bytes(100))
    os.environ["I9_FAKE_KEY"] = "sk-test"
    runs = tmp_path / "runs"
    with FakeOpenAI([bash("user-tool -q tests/test_roman.py"), submit()]) as fake:
        out = _cli(cache_dir, runs, "run", "--demo", "-i", "demo__tinytext-2",
                   "--agent", "llm", "--model", "fake-model", "--base-url", fake.url,
                   "--api-key-env", "I9_FAKE_KEY", "--prices", str(prices),
                   "--weights", str(weights), "--model-cutoff", "2020-01-01",
                   "--max-cost", "0.0001", "--run-id", "L")  # fmt: skip
    assert fake.chat_requests[0].headers["Authorization"] == "Bearer sk-test"
    assert "skipped" in out  # nothing changed: an empty diff is a skip
    with Store.open(runs / "runs.sqlite") as store:
        [attempt] = store.attempts("L")
        provenance = store.provenance("L")
    assert attempt.cost_usd is not None and attempt.cost_usd > 0
    assert attempt.stop_reason == "budget" and len(fake.chat_requests) == 1  # $0.0001 spent
    assert attempt.cost_usd == pytest.approx(
        (attempt.tokens_in * 1000 + attempt.tokens_out * 2000) / 1e6  # type: ignore[operator]
    )
    assert provenance is not None and provenance["weights"][0]["bytes"] == 104
    [score] = json.loads(_cli(cache_dir, runs, "score", "L", "--json"))
    assert score["eligibility"]["open_weights"] and score["eligibility"]["open_code"]
    assert score["eligibility"]["offline"] and score["eligibility"]["kprize"]
    assert score["eligibility"]["fresh"] is True  # the demo tasks are from 2024


def test_a_mount_that_would_show_hidden_files_is_refused(cache_dir: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    args = ["run", "--demo", "--agent", "command", "--command", "true", "--mount", str(tmp_path)]
    result = runner.invoke(app, [*args, "--cache-dir", str(cache_dir), "--runs-dir", str(runs)])
    assert result.exit_code == 2
    assert "would show the agent" in " ".join(result.output.split())


def test_unknown_agent_and_bad_options_are_clear_errors(cache_dir: Path, tmp_path: Path) -> None:
    for args, message in (
        (["--agent", "nope"], "unknown agent"),
        (["--agent", "llm", "--model", "m", "--base-url", "http://x/api"], "must end in /v1"),
        (["--agent", "command"], "command"),
        (
            ["--agent", "llm", "--model", "m", "--base-url", "http://x/v1", "--max-cost", "1"],
            "--max-cost needs the price of model 'm'",
        ),
    ):
        result = runner.invoke(app, ["run", "--demo", *args, "--cache-dir", str(cache_dir),
                                     "--runs-dir", str(tmp_path)])  # fmt: skip
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split())
