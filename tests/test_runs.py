"""End to end: the CLI evaluates the demo tasks, survives bad records, and resumes after a kill."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swebounty.cli import app
from swebounty.runs import log_dir_for
from swebounty.sandbox import bwrap_available
from swebounty.store import Store

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
runner = CliRunner()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One cache for the module: the demo environment is built once and shared, as in real use.
    return tmp_path_factory.mktemp("cache")


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
    from swebounty import testrun

    taken = tmp_path / "taken.xml"
    taken.mkdir()
    monkeypatch.setattr(testrun, "JUNIT_IN_SANDBOX", str(taken))
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


# ------------------------------------------------------------------ hostile submissions

_ATTACK = """
import os as _os, socket as _socket
def _attack():
    # Runs when the tests import the library: the submission's code at test time.
    try:
        _socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"escaped")
    except OSError:
        pass
    try:
        with open({marker!r}, "w") as fh:
            fh.write("escaped")
    except OSError:
        pass
    {extra}
_attack()
"""


def _hostile_patch(task_patch: str, mirror: Path, base: str, tmp: Path, code: str) -> str:
    """The gold patch plus `code` appended to the library's __init__.py."""
    from swebounty.patches import apply_patch
    from swebounty.repos import git, make_workspace

    ws = make_workspace(mirror, base, tmp / f"hostile-{uuid.uuid4().hex[:6]}")
    apply_patch(ws, task_patch)
    init = ws / "tinytext" / "__init__.py"
    init.write_text(init.read_text() + code)
    git(ws, "add", "-A")  # the gold patch may create files
    return git(ws, "diff", "--cached", "HEAD").stdout.decode()


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_hostile_patches_get_accurate_verdicts_and_the_run_goes_on(
    cache_dir: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from swebounty.demo import build_demo

    mirror, tasks = build_demo(cache_dir / "demo")
    listener = socket.socket()
    request.addfinalizer(listener.close)  # closed even when an assertion fails first
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o777)
    outside.chmod(0o777)  # writable by anyone: only the sandbox can stop the write
    marker = outside / "escaped.txt"

    def attack(extra: str) -> str:
        return _ATTACK.format(port=port, marker=str(marker), extra=extra)

    preds = [
        # the right fix, plus network and file-system escapes: resolved, and nothing escaped
        (tasks[0], attack("pass")),
        # hangs at import: the timeout kills it; the unpatched base runs clean, so it is the
        # submission's failure (unresolved, hangs_tests), not an error every score leaves out
        (tasks[1], attack("import time\n    while True: time.sleep(1)")),
        # fork bomb at import, bounded by the process limit and the timeout
        (tasks[2], attack("while True:\n        try: _os.fork()\n        except OSError: pass")),
    ]
    lines = [
        json.dumps(
            {
                "instance_id": task.instance_id,
                "model_name_or_path": "hostile",
                "model_patch": _hostile_patch(task.patch, mirror, task.base_commit, tmp_path, code),
            }
        )
        for task, code in preds
    ]
    lines.append(json.dumps({"instance_id": tasks[3].instance_id, "model_patch": tasks[3].patch}))
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n")

    runs = tmp_path / "runs"
    _eval(cache_dir, runs, "--demo", "-p", str(path), "--run-id", "h", "--timeout", "8")
    with Store.open(runs / "runs.sqlite") as store:
        verdicts = {v.instance_id: v for v in store.verdicts("h")}
    assert verdicts[tasks[0].instance_id].status == "resolved"
    assert verdicts[tasks[1].instance_id].status == "unresolved"
    assert "timed out" in verdicts[tasks[1].instance_id].reason
    assert "base runs the same tests cleanly" in verdicts[tasks[1].instance_id].reason
    assert "hangs_tests" in verdicts[tasks[1].instance_id].hack_flags
    assert "hangs_tests" not in verdicts[tasks[0].instance_id].hack_flags
    assert verdicts[tasks[2].instance_id].status == "unresolved"
    assert verdicts[tasks[3].instance_id].status == "resolved"  # the run went on
    assert not marker.exists()
    with pytest.raises(TimeoutError):
        listener.accept()


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
    from types import SimpleNamespace
    from typing import Any, cast

    from swebounty import runs
    from swebounty.tasks import Submission, Task, Verdict

    task = Task(instance_id="o__r-1", repo="o/r", base_commit="abc", patch="d", test_patch="t")
    sub = Submission(instance_id="o__r-1", model_patch="", model_name_or_path="m")
    ctx = SimpleNamespace(runs_dir=tmp_path / "runs", cancelled=threading.Event())
    interrupt = True

    def helper_dies(task: Task, sub: Submission, ctx: Any, log_dir: Path) -> Verdict:
        if interrupt:  # the main thread marks the run cancelled a moment later
            threading.Timer(0.1, ctx.cancelled.set).start()
        return Verdict(
            instance_id=task.instance_id,
            attempt=sub.attempt,
            model_name_or_path=sub.model_name_or_path,
            status="error",
            empty_patch=True,
            reason="git died of SIGINT",
        )

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
