"""The SQLite store: round trips, idempotence, concurrency and surviving a killed process."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from swebounty.store import Store, StoreError, check_run_id, schema
from swebounty.tasks import Attempt, RecordError, Submission
from swebounty.verdicts import TestResult as Result  # a Test* name would be collected
from swebounty.verdicts import Verdict


def make_verdict(i: int, attempt: int = 1, status: str = "resolved", n_tests: int = 3) -> Verdict:
    return Verdict.model_validate(
        {
            "instance_id": f"task-{i}",
            "attempt": attempt,
            "model_name_or_path": "m",
            "status": status,
            "reason": "" if status == "resolved" else "F2P failed",
            "tests": [
                Result(test_id=f"t::{j}", expected="FAIL_TO_PASS", status="passed")
                for j in range(n_tests)
            ],
            "hack_flags": ["conftest_changed"] if i % 2 else [],
            "patch_method": "git",
            "exit_code": 0,
            "env_key": "abc",
            "seconds": 1.5,
            "log_dir": f"runs/r/task-{i}",
            "sandbox": "bwrap",
        }
    )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path)
    s.ensure_run("r", "data.jsonl", {"workers": 2}, "bwrap", unsafe=False)
    return s


def test_open_dir_uses_runs_sqlite_in_wal_mode(tmp_path: Path) -> None:
    with Store.open(tmp_path) as s:
        assert s.path == tmp_path / "runs.sqlite"
        assert s.schema_version == len(schema.MIGRATIONS)
    db = sqlite3.connect(tmp_path / "runs.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "submissions", "verdicts", "test_results", "record_errors"} <= tables
    db.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    Store.open(tmp_path).close()
    db = sqlite3.connect(tmp_path / "runs.sqlite")
    db.execute("UPDATE schema_version SET version = 99")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="upgrade swebounty"):
        Store.open(tmp_path)


def test_migration_hook_runs_new_steps_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Store.open(tmp_path).close()
    calls: list[int] = []

    def add_column(db: sqlite3.Connection) -> None:
        calls.append(1)
        db.execute("ALTER TABLE runs ADD COLUMN note TEXT")

    steps = len(schema.MIGRATIONS)
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, add_column])
    with Store.open(tmp_path) as s:
        assert s.schema_version == steps + 1
    Store.open(tmp_path).close()
    assert calls == [1]


def test_a_store_made_before_agent_runs_is_migrated_with_its_data(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "runs.sqlite")
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version VALUES (1)")
    for statement in schema._SCHEMA_V1.split(";"):
        db.execute(statement)
    db.execute("INSERT INTO runs VALUES ('old', 'now', 'd.jsonl', '{}', 'bwrap', 0)")
    db.commit()
    db.close()
    with Store.open(tmp_path) as s:
        assert s.schema_version == len(schema.MIGRATIONS)
        assert s.run("old") is not None and s.attempts("old") == []
        s.save_attempt("old", Attempt(instance_id="t", agent="llm", status="skipped"))
        assert [a.status for a in s.attempts("old")] == ["skipped"]


def test_attempts_round_trip_with_trajectory_and_submission(store: Store) -> None:
    events = [{"type": "model", "step": 1, "message": {"content": "ü"}}, {"type": "end"}]
    attempt = Attempt(
        instance_id="task-1", attempt=2, agent="llm", model="m", status="submitted",
        stop_reason="submit", patch="diff --git a/x b/x\n", tokens_in=10, tokens_out=5,
        cost_usd=0.25, seconds=3.5, verified=True, trajectory=events,
    )  # fmt: skip
    store.save_attempt("r", attempt)
    store.save_attempt("r", attempt)  # saved again (a resumed run): still one
    assert store.attempts("r")[0].trajectory == []  # trajectories only when asked
    [back] = store.attempts("r", trajectories=True)
    assert back == attempt
    assert store.attempt("r", "task-1", 2) == attempt and store.attempt("r", "task-1", 1) is None
    [sub] = store.submissions("r")
    assert (sub.model_patch, sub.attempt, sub.cost_usd, sub.tokens_in) == (
        attempt.patch,
        2,
        0.25,
        10,
    )
    assert (sub.model_extra or {})["verified"] is True
    assert store.delete_attempts("r", [("task-1", 2)]) == 1 and store.attempts("r") == []


def test_provenance_round_trip(store: Store) -> None:
    assert store.provenance("r") is None
    store.save_provenance("r", {"agent": "llm", "weights": [{"sha256": "ab"}]})
    store.save_provenance("r", {"agent": "llm", "weights": []})
    assert store.provenance("r") == {"agent": "llm", "weights": []}


def test_runs(store: Store) -> None:
    store.ensure_run("r", "data.jsonl", {"workers": 4}, "unsafe", unsafe=True)
    again = store.ensure_run("r", "data.jsonl", {"workers": 1}, "bwrap", unsafe=False)
    assert again["config"] == {"workers": 1}
    assert again["unsafe"] is True  # once unsandboxed, always reported as such
    store.save_verdict("r", make_verdict(1))
    store.save_verdict("r", make_verdict(2, status="unresolved"))
    store.add_submission("r", Submission(instance_id="task-1"))
    [run] = store.runs()
    assert run["run_id"] == "r" and run["dataset"] == "data.jsonl"
    assert run["verdicts"] == {"resolved": 1, "unresolved": 1}
    assert run["submissions"] == 1
    assert store.run("nope") is None


def test_submissions_round_trip_and_idempotent(store: Store) -> None:
    sub = Submission(
        instance_id="task-1",
        model_name_or_path="m",
        model_patch="diff --git a/x b/x\n",
        attempt=2,
        cost_usd=0.25,
        trajectory="kept as extra",
    )
    assert store.add_submission("r", sub) is True
    assert store.add_submission("r", sub) is False
    [got] = store.submissions("r")
    assert got == sub
    assert got.model_extra == {"trajectory": "kept as extra"}
    changed = sub.model_copy(update={"model_patch": None})
    assert store.add_submission("r", changed) is True
    assert store.submissions("r") == [changed]


def test_verdict_round_trip_and_replace(store: Store) -> None:
    v = make_verdict(1, n_tests=3)
    store.save_verdict("r", v)
    assert store.verdicts("r") == [v]
    assert store.finished("r") == {("task-1", 1)}
    replacement = make_verdict(1, status="error", n_tests=1)
    store.save_verdict("r", replacement)
    assert store.verdicts("r") == [replacement]
    rows = store._read("SELECT status FROM test_results WHERE instance_id = 'task-1'")
    assert len(rows) == 1
    columns = store._read("SELECT status, hack_flags, reason FROM verdicts")
    assert [tuple(c) for c in columns] == [("error", '["conftest_changed"]', "F2P failed")]


def test_delete_verdicts_for_force(store: Store) -> None:
    for i in range(3):
        store.save_verdict("r", make_verdict(i))
    store.save_verdict("other", make_verdict(0))
    assert store.delete_verdicts("r", [("task-0", 1), ("task-2", 1), ("task-9", 1)]) == 2
    assert store.finished("r") == {("task-1", 1)}
    assert store.finished("other") == {("task-0", 1)}
    assert store._read("SELECT count(*) FROM test_results")[0][0] == 6


def test_replaced_verdicts_stay_in_the_attempts_history(store: Store) -> None:
    error = make_verdict(1, status="error")
    store.save_verdict("r", error)
    assert store.history("r", "task-1") == []
    resolved = make_verdict(1)
    store.save_verdict("r", resolved)  # a resumed run re-evaluated the error
    assert store.verdicts("r") == [resolved]
    assert store.statuses("r") == {("task-1", 1): "resolved"}
    assert store.history("r", "task-1") == [error]
    store.delete_verdicts("r", [("task-1", 1)])  # --force
    assert store.history("r", "task-1") == [error, resolved]
    assert store.history("r", "task-1", attempt=2) == []


@pytest.mark.parametrize(
    "run_id",
    ["", "../x", "/abs/path", "a/b", ".", "..", ".hidden", "-rf", "a b", "a\nb", "x" * 129],
)
def test_unsafe_run_ids_are_refused(store: Store, run_id: str) -> None:
    with pytest.raises(ValueError, match="not a safe name"):
        check_run_id(run_id)
    with pytest.raises(ValueError, match="not a safe name"):
        store.ensure_run(run_id, "data.jsonl", {}, "bwrap", unsafe=False)


@pytest.mark.parametrize("run_id", ["demo-gold", "r", "Lite_dev.v2", "x" * 128])
def test_safe_run_ids_are_accepted(run_id: str) -> None:
    assert check_run_id(run_id) == run_id


def test_record_errors_kept_once(store: Store) -> None:
    err = RecordError(source="preds.jsonl", where="line 3", message="not JSON")
    store.add_record_error("r", err)
    store.add_record_error("r", err)
    store.add_record_error("r", RecordError(source="p", where="x", message="unknown task id"))
    assert store.record_errors("r") == [
        err,
        RecordError(source="p", where="x", message="unknown task id"),
    ]
    assert store.record_errors("other") == []


def test_concurrent_saves_from_threads_and_connections(tmp_path: Path) -> None:
    first = Store.open(tmp_path)
    second = Store.open(tmp_path)  # another connection, as another process would have
    first.ensure_run("r", "d", {}, "bwrap", unsafe=False)

    def save(i: int) -> None:
        target = first if i % 2 else second
        target.save_verdict("r", make_verdict(i % 100, attempt=1 + i // 100))
        target.finished("r")

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(save, range(400)))
    assert len(first.verdicts("r")) == 400
    assert first._read("SELECT count(*) FROM test_results")[0][0] == 400 * 3
    first.close()
    second.close()


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    sys.path[:0] = {paths!r}
    from test_store import make_verdict
    from swebounty.store import Store

    db_path, kill_after, total, where = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    store = Store.open(db_path)
    store.ensure_run("r", "d", {{}}, "bwrap", unsafe=False)


    class DiesWritingTests:
        # Stands in for the connection: dies after writing a verdict and part of its tests.
        def __init__(self, db):
            self.db = db

        def __getattr__(self, name):
            return getattr(self.db, name)

        def executemany(self, sql, rows):
            if "INSERT INTO test_results" in sql:
                self.db.executemany(sql, list(rows)[:10])
                os.kill(os.getpid(), signal.SIGKILL)
            return self.db.executemany(sql, rows)


    done = store.finished("r")
    saved = 0
    for i in range(total):
        if ("task-%d" % i, 1) in done:
            continue
        if saved == kill_after:
            if where == "between":
                os.kill(os.getpid(), signal.SIGKILL)
            store._db = DiesWritingTests(store._db)
        store.save_verdict("r", make_verdict(i, n_tests=50))
        saved += 1
        print("saved", i, flush=True)
    """
)


def run_child(
    db: Path,
    kill_after: int,
    total: int,
    *,
    where: str = "between",
    kill_at_line: int | None = None,
) -> tuple[int, list[int]]:
    code = CHILD.format(paths=[str(Path(__file__).parent), *sys.path])
    saved = []
    with subprocess.Popen(
        [sys.executable, "-c", code, str(db), str(kill_after), str(total), where],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            saved.append(int(line.split()[1]))
            if kill_at_line is not None and len(saved) == kill_at_line:
                # Killed from outside while it is busy writing: possibly mid-transaction.
                proc.send_signal(signal.SIGKILL)
    return proc.returncode, saved


def assert_consistent(db: Path, must_have: list[int]) -> set[tuple[str, int]]:
    with Store.open(db) as s:
        verdicts = s.verdicts("r")
        keys = [(v.instance_id, v.attempt) for v in verdicts]
        assert len(keys) == len(set(keys)), "duplicated verdicts"
        assert {f"task-{i}" for i in must_have} <= {k[0] for k in keys}, "lost a saved verdict"
        for v in verdicts:
            rows = s._read(
                "SELECT count(*) FROM test_results WHERE run_id = 'r' AND instance_id = ?",
                (v.instance_id,),
            )
            assert rows[0][0] == len(v.tests) == 50, "half-written verdict"
        return s.finished("r")


@pytest.mark.parametrize("where", ["between", "inside"])
def test_killed_then_resumed(tmp_path: Path, where: str) -> None:
    """Killed between two saves, or in the middle of writing one verdict's test results."""
    db = tmp_path / "runs.sqlite"
    code, saved = run_child(db, kill_after=7, total=20, where=where)
    assert code == -signal.SIGKILL
    assert saved == list(range(7))
    assert assert_consistent(db, saved) == {(f"task-{i}", 1) for i in range(7)}
    code, saved_again = run_child(db, kill_after=-1, total=20)
    assert code == 0
    assert saved_again == list(range(7, 20))
    assert len(assert_consistent(db, list(range(20)))) == 20


def test_killed_from_outside_mid_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    code, saved = run_child(db, kill_after=-1, total=5000, kill_at_line=25)
    assert code == -signal.SIGKILL
    finished = assert_consistent(db, saved)
    assert len(saved) <= len(finished) <= len(saved) + 1  # at most the one in flight
    code, _ = run_child(db, kill_after=-1, total=60)
    assert code == 0
    assert len(assert_consistent(db, list(range(60)))) == max(60, len(finished))


def test_text_no_database_can_hold_is_made_storable(store: Store) -> None:
    verdict = Verdict(
        instance_id="o__r-1", status="error", reason="git said caf\udcff", hack_flags=["x\ud800"]
    )
    store.ensure_run("r", "d.jsonl", {}, "bwrap", False)
    store.save_verdict("r", verdict)
    store.add_record_error("r", RecordError(source="s\udcff", where="w", message="m\ud800"))
    (saved,) = store.verdicts("r")
    assert saved.reason == "git said caf\ufffd" and saved.hack_flags == ["x\ufffd"]
    assert store.record_errors("r")[0].source == "s\ufffd"
