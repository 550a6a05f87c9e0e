"""End to end: the CLI evaluates the demo tasks (gold, empty, unsafe, the Python API) and
survives bad records. test_runs_resume.py: resuming and interruptions; test_runs_hostile.py:
hostile submissions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_helpers import Demo
from swebounty.cli import app
from swebounty.runs import log_dir_for
from swebounty.sandbox import bwrap_available
from swebounty.store import Store

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
runner = CliRunner()


@pytest.fixture(scope="module")
def cache_dir(shared_demo: Demo) -> Path:
    # The demo's cache of the agent tests: its environment is built once and shared, as in
    # real use (nothing here checks what a cache holds).
    return shared_demo.cache


def _eval(cache: Path, runs: Path, *args: str) -> str:
    result = runner.invoke(
        app,
        ["eval", *args, "--cache-dir", str(cache), "--runs-dir", str(runs)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return result.output


def _report(runs: Path, run_id: str) -> dict[str, object]:
    data = json.loads((runs / run_id / "report.json").read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_demo_gold_resolves_all_and_empty_none(cache_dir: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _eval(cache_dir, runs, "--demo", "--gold", "--run-id", "g", "--workers", "2")
    gold = _report(runs, "g")
    assert gold["total_instances"] == gold["resolved_instances"] == 4
    assert gold["sandbox"] == "bwrap" and gold["unsafe"] is False

    _eval(cache_dir, runs, "--demo", "--empty", "--run-id", "e")
    empty = _report(runs, "e")
    assert empty["resolved_instances"] == 0
    assert empty["empty_patch_instances"] == 4
    assert empty["unresolved_instances"] == empty["completed_instances"] == 4  # they ran
    with Store.open(runs / "runs.sqlite") as store:
        for verdict in store.verdicts("e"):
            assert verdict.status == "unresolved", verdict.reason
            f2p = [t for t in verdict.tests if t.expected == "FAIL_TO_PASS"]
            assert f2p and all(t.status in ("failed", "error") for t in f2p)
        # logs are where the README says
        one = store.verdicts("g")[0]
    log_dir = runs / "g" / one.instance_id
    assert {"patch.diff", "test_output.txt", "junit.xml", "verdict.json", "report.json"} <= {
        p.name for p in log_dir.iterdir()
    }
    # SWE-bench's per-instance report, as its log readers expect it.
    instance = json.loads((log_dir / "report.json").read_text())[one.instance_id]
    assert instance["resolved"] is True and instance["patch_successfully_applied"] is True
    assert instance["patch_is_None"] is False and instance["patch_exists"] is True
    f2p = instance["tests_status"]["FAIL_TO_PASS"]
    assert f2p["failure"] == [] and sorted(f2p["success"]) == sorted(
        t.test_id for t in one.tests if t.expected == "FAIL_TO_PASS"
    )
    assert set(instance["tests_status"]) == {
        "FAIL_TO_PASS",
        "PASS_TO_PASS",
        "FAIL_TO_FAIL",
        "PASS_TO_FAIL",
    }


@pytest.mark.network
def test_unsafe_backend_runs_the_demo_and_says_so(cache_dir: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    out = _eval(cache_dir, runs, "--demo", "--gold", "--run-id", "u", "--unsafe")
    assert "UNSAFE" in out
    report = _report(runs, "u")
    assert report["resolved_instances"] == 4 and report["unsafe"] is True


def test_unsafe_runs_side_by_side_write_their_own_junit_files(
    cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without a sandbox's private /tmp, a fixed JUnit path is shared by every run on the host:
    # two workers read each other's results. Taken here, so a run that still uses it fails.
    from swebounty.frameworks import pytest as pytest_framework

    taken = tmp_path / "taken.xml"
    taken.mkdir()
    monkeypatch.setattr(pytest_framework, "JUNIT_IN_SANDBOX", str(taken))
    runs = tmp_path / "runs"
    _eval(cache_dir, runs, "--demo", "--gold", "--run-id", "u2", "--unsafe", "--workers", "2")
    assert _report(runs, "u2")["resolved_instances"] == 4


@pytest.mark.network
def test_the_python_api_returns_the_verdicts(cache_dir: Path, tmp_path: Path) -> None:
    import swebounty

    verdicts = swebounty.evaluate(
        "demo", "gold", run_id="api", cache_dir=cache_dir, runs_dir=tmp_path / "runs", unsafe=True
    )
    assert len(verdicts) == 4 and all(v.resolved for v in verdicts)
    assert _report(tmp_path / "runs", "api")["resolved_instances"] == 4
    # Resumable like the CLI: nothing is evaluated twice.
    again = swebounty.evaluate(
        "demo", "gold", run_id="api", cache_dir=cache_dir, runs_dir=tmp_path / "runs", unsafe=True
    )
    assert [v.model_dump() for v in again] == [v.model_dump() for v in verdicts]


def _demo_task_ids(cache: Path) -> list[str]:
    from swebounty.demo import build_demo

    _, tasks = build_demo(cache / "demo")
    return [t.instance_id for t in tasks]


@pytest.mark.network
def test_bad_records_get_errors_and_the_run_goes_on(cache_dir: Path, tmp_path: Path) -> None:
    ids = _demo_task_ids(cache_dir)
    from swebounty.demo import build_demo

    _, tasks = build_demo(cache_dir / "demo")
    good = {"instance_id": ids[0], "model_name_or_path": "m", "model_patch": tasks[0].patch}
    no_apply = {
        "instance_id": ids[1],
        "model_name_or_path": "m",
        "model_patch": "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n"
        "@@ -1,2 +1,2 @@\n-a\n+b\n c\n",
    }
    unknown = {"instance_id": "no__such-1", "model_name_or_path": "m", "model_patch": "x"}
    lines = [json.dumps(good).encode(), b"{broken json", json.dumps(no_apply).encode()]
    lines += [json.dumps(unknown).encode()]
    lines += [b'{"instance_id": "' + ids[2].encode() + b'", "model_patch": "caf\xe9"}']
    preds = tmp_path / "preds.jsonl"
    preds.write_bytes(b"\n".join(lines) + b"\n")

    runs = tmp_path / "runs"
    out = _eval(cache_dir, runs, "--demo", "-p", str(preds), "--run-id", "bad", "--unsafe")
    assert "not JSON" in out and "no task with this instance_id" in out and "UTF-8" in out
    with Store.open(runs / "runs.sqlite") as store:
        verdicts = {v.instance_id: v for v in store.verdicts("bad")}
        errors = store.record_errors("bad")
    assert verdicts[ids[0]].status == "resolved"
    assert verdicts[ids[1]].status == "patch_failed"
    assert "nope.py" in verdicts[ids[1]].reason
    assert set(verdicts) == {ids[0], ids[1]}
    assert len(errors) == 3


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "x\0y"])
def test_log_folders_are_never_named_by_what_could_leave_the_runs_dir(
    tmp_path: Path, name: str
) -> None:
    # Task and Submission refuse such ids at load; this is the last line before a path.
    with pytest.raises(ValueError, match="cannot name a folder"):
        log_dir_for(tmp_path, "run", name, 1)
    with pytest.raises(ValueError, match="cannot name a folder"):
        log_dir_for(tmp_path, name, "octo__lib-1", 2)
    assert log_dir_for(tmp_path, "run", "octo__lib-1", 3) == tmp_path / "run/octo__lib-1.attempt-3"
