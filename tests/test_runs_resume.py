"""End to end: a killed or interrupted run resumes with nothing lost or duplicated, and an
error (a wrong --repos-dir, an interruption) is redone or never saved.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swebounty.store import Store
from test_runs import _demo_task_ids, _eval, _report, needs_bwrap
from test_runs_hostile import _hostile_patch


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One cache for the module: the demo environment is built once and shared, as in real use.
    return tmp_path_factory.mktemp("cache")


@pytest.mark.network
@pytest.mark.slow
def test_resume_after_kill_loses_and_duplicates_nothing(cache_dir: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    # Warm the environment first so the killed run spends its time on verdicts.
    _eval(
        cache_dir,
        tmp_path / "warm",
        "--demo",
        "--gold",
        "--run-id",
        "w",
        "--unsafe",
        "-i",
        _demo_task_ids(cache_dir)[0],
    )
    cmd = [
        sys.executable,
        "-m",
        "swebounty",
        "eval",
        "--demo",
        "--gold",
        "--run-id",
        "k",
        "--unsafe",
        "--cache-dir",
        str(cache_dir),
        "--runs-dir",
        str(runs),
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    db = runs / "runs.sqlite"
    deadline = time.monotonic() + 120
    first: list[tuple[str, str]] = []
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            with sqlite3.connect(db) as conn:
                try:
                    first = conn.execute(
                        "SELECT instance_id, finished_at FROM verdicts WHERE run_id='k'"
                    ).fetchall()
                except sqlite3.OperationalError:
                    first = []
            if first:
                break
        time.sleep(0.05)
    assert first, "the run produced no verdict in time"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as conn:
        before = dict(
            conn.execute(
                "SELECT instance_id, finished_at FROM verdicts WHERE run_id='k'"
            ).fetchall()
        )
    assert 1 <= len(before) < 4, "kill the run mid-way: make the wait tighter"

    _eval(cache_dir, runs, "--demo", "--gold", "--run-id", "k", "--unsafe")
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT instance_id, finished_at FROM verdicts WHERE run_id='k'"
        ).fetchall()
    assert len(rows) == 4 and len({r[0] for r in rows}) == 4
    after = dict(rows)
    for instance_id, finished in before.items():
        assert after[instance_id] == finished, "a finished verdict was redone on resume"
    assert _report(runs, "k")["resolved_instances"] == 4


# ------------------------------------------------------------------ errors, interruptions


@pytest.mark.network
def test_an_error_from_a_wrong_repos_dir_becomes_a_verdict_on_the_rerun(
    cache_dir: Path, tmp_path: Path
) -> None:
    from swebounty.demo import build_demo
    from swebounty.records import write_jsonl

    mirror, tasks = build_demo(cache_dir / "demo")
    data = tmp_path / "tasks.jsonl"
    # Nowhere to clone from: only the right --repos-dir can provide the repository.
    nowhere = str(tmp_path / "no-such-clone")
    write_jsonl(data, [t.model_copy(update={"repo_url": nowhere}) for t in tasks[:2]])
    wrong = tmp_path / "empty-clones"
    wrong.mkdir()
    runs = tmp_path / "runs"
    args = [str(data), "--gold", "--run-id", "re", "--unsafe"]

    _eval(cache_dir, runs, *args, "--repos-dir", str(wrong))
    with Store.open(runs / "runs.sqlite") as store:
        first = {v.instance_id: v for v in store.verdicts("re")}
    assert {v.status for v in first.values()} == {"error"}
    assert all("clone" in v.reason for v in first.values())

    # Asked to keep errors, a resume keeps them.
    _eval(cache_dir, runs, *args, "--repos-dir", str(mirror.parent), "--no-retry-errors")
    with Store.open(runs / "runs.sqlite") as store:
        assert {v.status for v in store.verdicts("re")} == {"error"}

    # By default a resume re-evaluates them; the errors stay in each attempt's history.
    _eval(cache_dir, runs, *args, "--repos-dir", str(mirror.parent))
    with Store.open(runs / "runs.sqlite") as store:
        assert {v.status for v in store.verdicts("re")} == {"resolved"}
        for iid, verdict in first.items():
            assert store.history("re", iid) == [verdict]
    assert _report(runs, "re")["resolved_instances"] == 2
    # ... and so do their logs.
    shelved = runs / "re" / f"{tasks[0].instance_id}.before-1"
    assert "clone" in (shelved / "error.txt").read_text()
    assert (runs / "re" / tasks[0].instance_id / "junit.xml").exists()


def _sandbox_children(pid: int) -> list[int]:
    """Children of `pid` that lead their own session: the sandboxed commands it started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ppid, session = int(fields[1]), int(fields[3])
        if ppid == pid and session == int(entry.name):
            found.append(int(entry.name))
    return found


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.sandbox
@pytest.mark.network
@pytest.mark.slow
@needs_bwrap
def test_ctrl_c_stops_the_run_at_once_and_a_rerun_does_exactly_the_rest(
    cache_dir: Path, tmp_path: Path
) -> None:
    from swebounty.demo import build_demo

    mirror, tasks = build_demo(cache_dir / "demo")
    slow = "\nimport time as _time\n_time.sleep(25)\n"
    lines = [json.dumps({"instance_id": tasks[0].instance_id, "model_patch": tasks[0].patch})]
    for task in tasks[1:]:
        patch = _hostile_patch(task.patch, mirror, task.base_commit, tmp_path, slow)
        lines.append(json.dumps({"instance_id": task.instance_id, "model_patch": patch}))
    preds = tmp_path / "slow.jsonl"
    preds.write_text("\n".join(lines) + "\n")
    runs = tmp_path / "runs"
    args = ["--demo", "-p", str(preds), "--run-id", "c", "--workers", "2"]
    where = ["--cache-dir", str(cache_dir), "--runs-dir", str(runs)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "swebounty", "eval", *args, *where],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        env={**os.environ, "COLUMNS": "200"},  # task ids in full in the partial table
        # A terminal's foreground job gets SIGINT; a test run in the background of a shell
        # without job control inherits it ignored (and then Python would rightly ignore it).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    db = runs / "runs.sqlite"
    deadline = time.monotonic() + 180
    sandboxes: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None:
        done = 0
        if db.exists():
            with sqlite3.connect(db) as conn:
                try:
                    done = conn.execute("SELECT count(*) FROM verdicts").fetchone()[0]
                except sqlite3.OperationalError:
                    done = 0
        sandboxes = _sandbox_children(proc.pid)
        if done >= 1 and sandboxes:
            break
        time.sleep(0.1)
    assert sandboxes, "no sandbox was running: the test could not interrupt one"
    start = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    output, _ = proc.communicate(timeout=60)
    stopped_in = time.monotonic() - start
    text = output.decode(errors="replace")
    assert proc.returncode == 130, text
    assert stopped_in < 8, f"took {stopped_in:.1f} s to stop"
    assert "interrupted" in text and "resume" in text  # a partial summary, not a traceback
    assert tasks[0].instance_id in text and "Traceback" not in text
    # Killed with the run; on a loaded machine the kernel may take a moment to reap them.
    gone_by = time.monotonic() + 5
    while any(_alive(pid) for pid in sandboxes) and time.monotonic() < gone_by:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in sandboxes), "a sandbox outlived the interrupted run"
    with sqlite3.connect(db) as conn:
        before = dict(conn.execute("SELECT instance_id, finished_at FROM verdicts").fetchall())
        statuses = {r[0] for r in conn.execute("SELECT status FROM verdicts")}
    assert 1 <= len(before) < 4
    assert statuses == {"resolved"}, "an attempt cut short must not be saved as a verdict"

    _eval(cache_dir, runs, *args[:-2], "--workers", "3")
    with Store.open(db) as store:
        after = {v.instance_id: v for v in store.verdicts("c")}
        assert len(after) == 4
        for iid in after:
            assert store.history("c", iid) == [], f"{iid} was evaluated twice"
    with sqlite3.connect(db) as conn:
        finished = dict(conn.execute("SELECT instance_id, finished_at FROM verdicts").fetchall())
    for iid, when in before.items():
        assert finished[iid] == when, "a finished attempt was redone"
    assert all(v.status == "resolved" for v in after.values())


def test_an_error_the_interruption_caused_is_not_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C reaches a git or uv a worker started a moment before the main thread marks the
    # run cancelled: the worker's `error` must wait for that mark, not become a verdict.
    import threading
    from typing import Any, cast

    from run_helpers import one_attempt, verdict_of
    from swebounty import runs
    from swebounty.tasks import Submission, Task
    from swebounty.verdicts import Verdict

    task, sub, ctx = one_attempt(tmp_path / "runs")
    interrupt = True

    def helper_dies(task: Task, sub: Submission, ctx: Any, log_dir: Path) -> Verdict:
        if interrupt:  # the main thread marks the run cancelled a moment later
            threading.Timer(0.1, ctx.cancelled.set).start()
        return verdict_of(task, sub, "error", "git died of SIGINT")

    monkeypatch.setattr(runs, "evaluate_safely", helper_dies)
    with Store.open(tmp_path / "runs.sqlite") as store:
        assert runs.evaluate_run("r", [(task, sub)], cast(Any, ctx), store) == []
        assert store.statuses("r") == {}
        # Without an interruption the same error is an outcome, saved.
        interrupt = False
        ctx.cancelled = threading.Event()
        verdicts = runs.evaluate_run("r", [(task, sub)], cast(Any, ctx), store)
        assert [v.status for v in verdicts] == ["error"]
        assert store.statuses("r") == {("o__r-1", sub.attempt): "error"}
