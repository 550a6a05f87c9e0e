"""`swebounty eval` checks its inputs before anything runs, and finds runs from any directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import swebounty
from swebounty.cli import app
from swebounty.evalinputs import EvalInputError

runner = CliRunner()


def _invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.output


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SWEBOUNTY_HOME for the test; the current directory is elsewhere on purpose."""
    path = tmp_path / "home"
    monkeypatch.setenv("SWEBOUNTY_HOME", str(path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return path


@pytest.mark.parametrize(
    "run_id", ["", "../x", "/tmp/abs", "a/b", "..", ".hidden", "-x", "a b", "x" * 129]
)
def test_every_unsafe_run_id_is_refused(home: Path, run_id: str) -> None:
    code, out = _invoke("eval", "--demo", "--gold", "--run-id", run_id)
    assert code == 2
    assert "not a safe name" in out
    assert not (home / "runs").exists(), "nothing may be written for a refused run id"
    assert not Path("/tmp/abs").exists()


def test_missing_repos_dir_is_refused_up_front(home: Path, tmp_path: Path) -> None:
    code, out = _invoke(
        "eval", "--demo", "--gold", "--repos-dir", str(tmp_path / "nonexistent"), "--run-id", "r"
    )
    assert code == 2
    assert "repos dir" in out and "does not exist" in out
    assert not (home / "runs").exists()


@pytest.mark.parametrize("workers", ["0", "-3"])
def test_workers_below_one_is_refused(home: Path, workers: str) -> None:
    code, out = _invoke("eval", "--demo", "--gold", "--workers", workers)
    assert code == 2 and "workers must be 1 or more" in out


def test_a_dataset_without_tasks_is_an_error(home: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n{}\n[1, 2]\n")
    code, out = _invoke("eval", str(junk), "--gold")
    assert code == 2
    assert "holds no task" in " ".join(out.split())
    assert str(junk) in out.replace("\n", "")
    missing = tmp_path / "missing.jsonl"
    code, out = _invoke("eval", str(missing), "--gold")
    assert code == 2 and "does not exist" in out


def test_unknown_task_ids_are_blamed_on_the_predictions_file(home: Path, tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        json.dumps({"instance_id": "no__such-1", "model_patch": "diff"})
        + "\n"
        + json.dumps({"instance_id": "no__such-2", "model_patch": "diff"})
        + "\n"
    )
    code, out = _invoke("eval", "--demo", "-p", str(preds), "--run-id", "unknown", "--unsafe")
    assert code == 0, out
    flat = out.replace("\n", "")
    assert f"skipped {preds} no__such-1" in " ".join(flat.split())
    report = json.loads((home / "runs" / "unknown" / "report.json").read_text())
    assert report["swebounty"]["unknown_instance_ids"] == ["no__such-1", "no__such-2"]
    assert report["swebounty"]["run_id"] == "unknown"
    assert {e["source"] for e in report["record_errors"]} == {str(preds)}


def test_runs_live_under_the_home_whatever_the_directory(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"instance_id": "no__such-1", "model_patch": "x"}) + "\n")
    assert _invoke("eval", "--demo", "-p", str(preds), "--run-id", "here", "--unsafe")[0] == 0
    assert (home / "runs" / "runs.sqlite").is_file()
    assert (home / "cache" / "demo").is_dir()
    assert not Path("runs").exists(), "nothing relative to the current directory"
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    code, out = _invoke("runs")
    assert code == 0 and "here" in out
    # --home names the same place explicitly; the variable is then not needed.
    monkeypatch.delenv("SWEBOUNTY_HOME")
    code, out = _invoke("runs", "--home", str(home))
    assert code == 0 and "here" in out


def test_quiet_prints_only_the_result_line(home: Path, tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"instance_id": "no__such-1", "model_patch": "x"}) + "\n")
    result = runner.invoke(app, ["eval", "--demo", "-p", str(preds), "-q", "--run-id", "q"])
    assert result.exit_code == 0, result.output
    assert "┃" not in result.stdout  # no table
    assert result.stdout.strip().startswith("resolved 0/4")
    code, out = _invoke("eval", "--demo", "--gold", "--log-level", "loud")
    assert code == 2 and "--log-level" in out


def test_the_python_api_checks_inputs_the_same_way(home: Path, tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="not a safe name"):
        swebounty.evaluate("demo", "gold", run_id="../escape")
    with pytest.raises(EvalInputError, match="workers must be 1 or more"):
        swebounty.evaluate("demo", "gold", workers=0)
    with pytest.raises(EvalInputError, match="repos dir"):
        swebounty.evaluate("demo", "gold", repos_dir=tmp_path / "nope")
    assert not (home / "runs").exists()
    assert not os.listdir(tmp_path / "elsewhere")


def test_score_says_how_many_input_records_were_skipped(home: Path, tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    preds.write_text("{broken\n" + json.dumps({"instance_id": "no__such-1", "model_patch": "x"}))
    assert _invoke("eval", "--demo", "-p", str(preds), "--run-id", "skips", "--unsafe")[0] == 0
    code, out = _invoke("score", "skips")
    assert code == 0
    flat = " ".join(out.split())
    assert "run skips: 2 input record(s) were skipped" in flat
    assert str(preds) in out.replace("\n", "")


def test_a_reason_holding_markup_is_printed_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    # A refused patch's reason names its file: "[/x]" in it once ended `eval` with a
    # MarkupError before report.json was written; "[bold]" restyled the line.
    from swebounty.cli.evaluate import _show_verdicts
    from swebounty.verdicts import Verdict

    reason = "patch touches '[bold]a[/x]/../../b', outside the workspace or inside .git"
    _show_verdicts("r", [Verdict(instance_id="o__r-1", status="patch_failed", reason=reason)])
    assert reason in " ".join(capsys.readouterr().out.split())


def test_redoing_one_task_keeps_the_whole_run_in_its_report(home: Path) -> None:
    """`-i X --force` in a run of many tasks rewrote report.json with X's verdict alone (seen
    on the cold Lite run: "resolved 1/300" after 106 verdicts)."""
    assert _invoke("eval", "--demo", "--gold", "--run-id", "r", "--unsafe")[0] == 0
    path = home / "runs" / "r" / "report.json"
    before = json.loads(path.read_text())
    assert before["resolved_instances"] == before["total_instances"] > 1
    one = before["resolved_ids"][0]
    code, out = _invoke(
        "eval", "--demo", "--gold", "--run-id", "r", "--unsafe", "-i", one, "--force"
    )
    assert code == 0, out
    after = json.loads(path.read_text())
    assert after["resolved_ids"] == before["resolved_ids"]
    assert after["completed_instances"] == before["completed_instances"]
