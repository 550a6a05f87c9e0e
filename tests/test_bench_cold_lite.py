"""bench/cold_lite.py: a cold whole-dataset run measured in segments — a stop (SIGINT/SIGTERM to
the script) is passed on to the run as its graceful stop and still measured, `--resume` continues
in the same home, and the figures are the segments' sums. The run itself is a stand-in
`swebounty` module on PYTHONPATH (the real one is exercised by the evaluation tests)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

from bench_helpers import load_bench
from swebounty.store import Store
from swebounty.verdicts import Verdict

# Waits to be stopped as `swebounty eval` does on SIGINT (exit 130), or finishes at once and
# writes the run's report when told to by a file in its home.
STAND_IN = """\
import json, signal, sys, time
from pathlib import Path
home = Path(sys.argv[sys.argv.index("--home") + 1])
(home / "calls").open("a").write(" ".join(sys.argv[1:]) + "\\n")
if (home / "finish").exists():
    (home / "runs" / "cold").mkdir(parents=True, exist_ok=True)
    report = {"resolved_instances": 1, "total_instances": 1, "misses": [],
              "resolved_ids": ["o__r-1"]}
    (home / "runs" / "cold" / "report.json").write_text(json.dumps(report))
    sys.exit(0)
def stop(signum, frame):
    (home / "stopped-by").write_text(signal.Signals(signum).name)
    sys.exit(130)
signal.signal(signal.SIGINT, stop)
(home / "started").write_text("")
time.sleep(60)
sys.exit(3)
"""

TASK = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "0" * 40}


@pytest.fixture(scope="module")
def cold_lite() -> ModuleType:
    return load_bench("cold_lite.py", "cold_lite_bench")


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment a run's child gets: PYTHONPATH puts the stand-in `swebounty` first."""
    fake = tmp_path / "fake"
    (fake / "swebounty").mkdir(parents=True)
    (fake / "swebounty" / "__init__.py").write_text("")
    (fake / "swebounty" / "__main__.py").write_text(STAND_IN)
    monkeypatch.setenv("PYTHONPATH", str(fake))
    return dict(os.environ)


def send_when_started(home: Path, signum: int) -> threading.Thread:
    def send() -> None:
        deadline = time.monotonic() + 30
        while not (home / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signum)  # to the script, as a user's Ctrl-C or a kill would be

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_reaches_the_run_as_its_graceful_stop_and_is_measured(
    cold_lite: ModuleType, stand_in: dict[str, str], tmp_path: Path, signum: int
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    thread = send_when_started(home, signum)
    segment = cold_lite.run_eval(home / "tasks.jsonl", home, tmp_path, 2, stand_in)
    thread.join()
    assert (home / "stopped-by").read_text() == "SIGINT"
    assert segment["stopped"] is True
    assert segment["exit_code"] == 130
    assert segment["wall_s"] > 0
    assert "sources " in segment["code"]  # which swebounty graded it (segments may differ)
    # the process's own handlers are back (pytest-xdist's workers have their own SIGTERM's)
    assert {s: signal.getsignal(s) for s in handlers} == handlers


def test_resume_continues_in_the_home_and_sums_the_segments(
    cold_lite: ModuleType,
    stand_in: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dataset = tmp_path / "lite.jsonl"
    dataset.write_text(json.dumps(TASK) + "\n")
    home = tmp_path / "home"
    out = tmp_path / "cold.json"
    base = ["cold_lite.py", "--dataset", str(dataset), "--repos-dir", str(tmp_path)]
    base += ["--home", str(home), "--json", str(out), "--keep-uv-cache"]

    monkeypatch.setattr(sys, "argv", base)
    home.mkdir()
    (home / "cache").mkdir()  # a cache that is not this script's: refused, not continued
    with pytest.raises(SystemExit, match=r"no segments\.json"):
        monkeypatch.setattr(sys, "argv", [*base, "--resume"])
        cold_lite.main()
    monkeypatch.setattr(sys, "argv", base)
    with pytest.raises(SystemExit, match=r"already holds a cache.*--resume"):
        cold_lite.main()
    (home / "cache").rmdir()

    thread = send_when_started(home, signal.SIGINT)
    cold_lite.main()  # the first segment, stopped
    thread.join()
    first = json.loads(out.read_text())
    assert [s["stopped"] for s in first["segments"]] == [True]
    assert (first["resolved"], first["evaluated"]) == (0, 0)  # no report, no verdict yet
    assert first["per_repo"]["o/r"]["not run"] == 1
    # a verdict the stopped run committed is counted from the store
    (home / "runs").mkdir()
    with Store.open(home / "runs") as store:
        store.ensure_run("cold", str(dataset), {}, "bwrap", False)
        store.save_verdict("cold", Verdict(instance_id=TASK["instance_id"], status="unresolved"))
    monkeypatch.setattr(sys, "argv", [*base, "--report-only"])
    cold_lite.main()
    so_far = json.loads(out.read_text())
    assert (so_far["resolved"], so_far["evaluated"]) == (0, 1)
    assert so_far["per_repo"]["o/r"]["unresolved"] == 1
    assert len(so_far["segments"]) == 1  # a report is not a segment

    monkeypatch.setattr(sys, "argv", [*base, "--resume"])
    (home / "finish").write_text("")
    cold_lite.main()
    result = json.loads(out.read_text())
    segments = result["segments"]
    assert [s["stopped"] for s in segments] == [True, False]
    assert result["wall_s"] == round(sum(s["wall_s"] for s in segments), 1)
    assert result["cpu_s"] == round(sum(s["cpu_s"] for s in segments), 1)
    assert result["machine_busy_s"] >= 0 and all("machine_busy_s" in s for s in segments)
    assert result["exit_code"] == 0
    assert (result["resolved"], result["evaluated"]) == (1, 1)
    assert result["tasks"] == [TASK["instance_id"]]
    assert result["per_repo"] == {
        "o/r": {"tasks": 1, "resolved": 1, "unresolved": 0, "error": 0, "not run": 0}
    }
    calls = (home / "calls").read_text().splitlines()
    assert len(calls) == 2 and calls[0] == calls[1]  # the same run, same id, same tasks file
    assert "--run-id cold" in calls[0]

    monkeypatch.setattr(sys, "argv", [*base[:-1], "--resume"])  # without --keep-uv-cache
    with pytest.raises(SystemExit, match="--keep-uv-cache must be as in"):
        cold_lite.main()


def test_the_machine_s_busy_time_counts_this_process_s_work(cold_lite: ModuleType) -> None:
    before = cold_lite.machine_busy_s()
    end = time.process_time() + 0.5
    while time.process_time() < end:  # half a CPU-second of our own
        pass
    assert cold_lite.machine_busy_s() - before >= 0.4


def test_a_segment_ended_by_sigkill_is_kept_with_its_figures_so_far(
    cold_lite: ModuleType,
    stand_in: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session's end SIGKILLs everything: the segment then running never wrote its end, and
    its 40 minutes were missing from the run's wall time (the cold Lite run's segment 2)."""
    dataset = tmp_path / "lite.jsonl"
    dataset.write_text(json.dumps(TASK) + "\n")
    home = tmp_path / "home"
    out = tmp_path / "cold.json"
    base = ["cold_lite.py", "--dataset", str(dataset), "--repos-dir", str(tmp_path)]
    base += ["--home", str(home), "--json", str(out), "--keep-uv-cache"]
    monkeypatch.setattr(cold_lite, "BEAT_S", 0.2)
    seg_file = home / "segments.json"
    at_kill: list[str] = []

    def kill_after_a_beat() -> None:  # what the file held when the process would have died
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = seg_file.read_text() if seg_file.exists() else ""
            if '"open": true' in text and json.loads(text)["segments"][-1]["wall_s"] > 0.3:
                at_kill.append(text)
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=kill_after_a_beat, daemon=True)
    thread.start()
    monkeypatch.setattr(sys, "argv", base)
    cold_lite.main()
    thread.join()
    assert at_kill, "no beat was written while the run went on"
    seg_file.write_text(at_kill[0])  # as a SIGKILL would have left it
    killed = json.loads(at_kill[0])["segments"][0]

    monkeypatch.setattr(sys, "argv", [*base, "--resume"])
    (home / "finish").write_text("")
    cold_lite.main()
    result = json.loads(out.read_text())
    first, second = result["segments"]
    assert first["killed"] is True and "open" not in first and first["stopped"] is True
    assert first["wall_s"] == killed["wall_s"] > 0.3
    assert "killed" not in second
    assert result["wall_s"] == round(first["wall_s"] + second["wall_s"], 1)
