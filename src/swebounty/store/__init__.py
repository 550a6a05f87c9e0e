"""SQLite store of runs, submissions, verdicts, per-test results, bad records and agent attempts.

One file, `<runs_dir>/runs.sqlite` (database.py: the connection, WAL mode, migrations; schema.py:
the tables). Every verdict is committed in its own transaction together with its test results,
so a run killed at any moment keeps every verdict it saved and never holds half of one.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from swebounty.store.database import DB_NAME, Database, StoreError, now, storable
from swebounty.tasks import Attempt, RecordError, Submission
from swebounty.verdicts import Verdict

__all__ = ["DB_NAME", "Store", "StoreError", "check_run_id"]

# A run id names a row and a folder under the runs directory: nothing that could leave it.
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

_SUBMISSION_COLUMNS = ("instance_id", "attempt", "model_name_or_path", "model_patch")


def check_run_id(run_id: str) -> str:
    """`run_id` if it is a safe name (also a folder name under the runs directory), else
    ValueError saying what is allowed."""
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise ValueError(
            f"run id {run_id!r} is not a safe name: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return run_id


class Store(Database):
    """Runs, submissions and verdicts in one SQLite file. Safe to share between threads."""

    @classmethod
    def open(cls, path: str | Path) -> Store:
        """Open (creating if needed) the store at `path`, a file or a runs directory."""
        return cls(path)

    def __enter__(self) -> Store:
        return self

    # ------------------------------------------------------------------------ runs

    def ensure_run(
        self, run_id: str, dataset: str, config: dict[str, Any], sandbox: str, unsafe: bool
    ) -> dict[str, Any]:
        """Create the run, or update the dataset and config of an existing one (a resumed run;
        evalinputs.run_conflict says when a run may take another dataset).

        `unsafe` sticks: once any part of a run went unsandboxed, the run says so.
        """
        check_run_id(run_id)
        with self._write() as db:
            db.execute(
                """INSERT INTO runs (run_id, created_at, dataset, config, sandbox, unsafe)
                   VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT (run_id) DO UPDATE SET
                     dataset = excluded.dataset,
                     config = excluded.config,
                     sandbox = excluded.sandbox,
                     unsafe = max(runs.unsafe, excluded.unsafe)""",
                (run_id, now(), dataset, json.dumps(config, default=str), sandbox, int(unsafe)),
            )
        run = self.run(run_id)
        assert run is not None
        return run

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self._read("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        return self._run_dict(rows[0]) if rows else None

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first, with counts of submissions and verdicts by status."""
        rows = self._read("SELECT * FROM runs ORDER BY created_at, run_id")
        counts: dict[str, dict[str, int]] = {}
        for row in self._read(
            "SELECT run_id, status, count(*) AS n FROM verdicts GROUP BY run_id, status"
        ):
            counts.setdefault(row["run_id"], {})[row["status"]] = row["n"]
        subs = {
            row["run_id"]: row["n"]
            for row in self._read("SELECT run_id, count(*) AS n FROM submissions GROUP BY run_id")
        }
        result = []
        for row in rows:
            run = self._run_dict(row)
            run["submissions"] = subs.get(run["run_id"], 0)
            run["verdicts"] = counts.get(run["run_id"], {})
            result.append(run)
        return result

    @staticmethod
    def _run_dict(row: sqlite3.Row) -> dict[str, Any]:
        run = dict(row)
        run["config"] = json.loads(run["config"])
        run["unsafe"] = bool(run["unsafe"])
        return run

    # ------------------------------------------------------------------------ submissions

    def add_submission(self, run_id: str, sub: Submission) -> bool:
        """Record a submission; the same one again changes nothing. True if new or changed."""
        with self._write() as db:
            return self._upsert_submission(db, run_id, sub)

    @staticmethod
    def _upsert_submission(db: sqlite3.Connection, run_id: str, sub: Submission) -> bool:
        sub = Submission.model_validate(storable(sub.model_dump()))
        data = sub.model_dump(mode="json")
        meta = json.dumps({k: v for k, v in data.items() if k not in _SUBMISSION_COLUMNS})
        values = (run_id, sub.instance_id, sub.attempt, sub.model_name_or_path, sub.model_patch)
        old = db.execute(
            """SELECT model_name_or_path, model_patch, meta FROM submissions
               WHERE run_id = ? AND instance_id = ? AND attempt = ?""",
            values[:3],
        ).fetchone()
        if old is not None and tuple(old) == (*values[3:], meta):
            return False
        db.execute(
            """INSERT INTO submissions
               (run_id, instance_id, attempt, model_name_or_path, model_patch, meta)
               VALUES (?, ?, ?, ?, ?, ?)
               ON CONFLICT (run_id, instance_id, attempt) DO UPDATE SET
                 model_name_or_path = excluded.model_name_or_path,
                 model_patch = excluded.model_patch,
                 meta = excluded.meta""",
            (*values, meta),
        )
        return True

    def submissions(self, run_id: str) -> list[Submission]:
        rows = self._read(
            "SELECT * FROM submissions WHERE run_id = ? ORDER BY instance_id, attempt", (run_id,)
        )
        return [
            Submission.model_validate(
                {**json.loads(row["meta"]), **{k: row[k] for k in _SUBMISSION_COLUMNS}}
            )
            for row in rows
        ]

    # ------------------------------------------------------------------------ verdicts

    def save_verdict(self, run_id: str, verdict: Verdict) -> None:
        """Commit a verdict and its test results atomically, replacing any for the same key."""
        verdict = Verdict.model_validate(storable(verdict.model_dump()))
        key = (run_id, verdict.instance_id, verdict.attempt)
        with self._write() as db:
            self._delete(db, [key])  # an earlier verdict moves to verdict_history
            db.execute(
                """INSERT INTO verdicts
                   (run_id, instance_id, attempt, status, empty_patch, reason, hack_flags,
                    patch_method, exit_code, env_key, seconds, log_dir, verdict, finished_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    *key,
                    verdict.status,
                    int(verdict.empty_patch),
                    verdict.reason,
                    json.dumps(verdict.hack_flags),
                    verdict.patch_method,
                    verdict.exit_code,
                    verdict.env_key,
                    verdict.seconds,
                    verdict.log_dir,
                    verdict.model_dump_json(),
                    now(),
                ),
            )
            db.executemany(
                """INSERT INTO test_results
                   (run_id, instance_id, attempt, test_id, expected, status, message)
                   VALUES (?, ?, ?, ?, ?, ?, ?)""",
                [(*key, t.test_id, t.expected, t.status, t.message) for t in verdict.tests],
            )

    def delete_verdicts(self, run_id: str, keys: Iterable[tuple[str, int]]) -> int:
        """Forget the verdicts of (instance_id, attempt) keys (for --force); return how many."""
        with self._write() as db:
            return self._delete(db, [(run_id, iid, attempt) for iid, attempt in keys])

    @staticmethod
    def _delete(db: sqlite3.Connection, keys: list[tuple[str, str, int]]) -> int:
        where = "WHERE run_id = ? AND instance_id = ? AND attempt = ?"
        replaced_at = now()
        db.executemany(
            f"""INSERT INTO verdict_history
                (run_id, instance_id, attempt, status, verdict, finished_at, replaced_at)
                SELECT run_id, instance_id, attempt, status, verdict, finished_at, '{replaced_at}'
                FROM verdicts {where}""",
            keys,
        )
        db.executemany(f"DELETE FROM test_results {where}", keys)
        before = db.total_changes
        db.executemany(f"DELETE FROM verdicts {where}", keys)
        return db.total_changes - before

    def finished(self, run_id: str) -> set[tuple[str, int]]:
        """(instance_id, attempt) of every verdict of the run."""
        return set(self.statuses(run_id))

    def statuses(self, run_id: str) -> dict[tuple[str, int], str]:
        """The status of every verdict of the run, by (instance_id, attempt)."""
        rows = self._read(
            "SELECT instance_id, attempt, status FROM verdicts WHERE run_id = ?", (run_id,)
        )
        return {(row[0], row[1]): row[2] for row in rows}

    def history(self, run_id: str, instance_id: str, attempt: int = 1) -> list[Verdict]:
        """The verdicts an attempt had before its current one, oldest first."""
        rows = self._read(
            """SELECT verdict FROM verdict_history
               WHERE run_id = ? AND instance_id = ? AND attempt = ? ORDER BY rowid""",
            (run_id, instance_id, attempt),
        )
        return [Verdict.model_validate_json(row[0]) for row in rows]

    def verdicts(self, run_id: str) -> list[Verdict]:
        rows = self._read(
            "SELECT verdict FROM verdicts WHERE run_id = ? ORDER BY instance_id, attempt",
            (run_id,),
        )
        return [Verdict.model_validate_json(row[0]) for row in rows]

    # ------------------------------------------------------------------------ record errors

    def add_record_error(self, run_id: str, error: RecordError) -> None:
        """Remember a bad input record; the same error seen again on resume is kept once."""
        error = RecordError.model_validate(storable(error.model_dump()))
        with self._write() as db:
            db.execute(
                """INSERT OR IGNORE INTO record_errors (run_id, source, location, message)
                   VALUES (?, ?, ?, ?)""",
                (run_id, error.source, error.where, error.message),
            )

    def record_errors(self, run_id: str) -> list[RecordError]:
        rows = self._read(
            "SELECT source, location, message FROM record_errors WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        )
        return [RecordError(source=r[0], where=r[1], message=r[2]) for r in rows]

    # ------------------------------------------------------------------------ agent attempts

    def save_attempt(self, run_id: str, attempt: Attempt) -> None:
        """Commit an agent's attempt (trajectory included) with its submission, atomically."""
        record = attempt.model_dump_json(exclude={"trajectory"})
        verified = None if attempt.verified is None else int(attempt.verified)
        with self._write() as db:
            db.execute(
                """INSERT INTO attempts
                   (run_id, instance_id, attempt, agent, model, status, stop_reason, error,
                    tokens_in, tokens_out, cost_usd, seconds, verified, trajectory, record,
                    finished_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (run_id, instance_id, attempt) DO UPDATE SET
                     agent = excluded.agent, model = excluded.model, status = excluded.status,
                     stop_reason = excluded.stop_reason, error = excluded.error,
                     tokens_in = excluded.tokens_in, tokens_out = excluded.tokens_out,
                     cost_usd = excluded.cost_usd, seconds = excluded.seconds,
                     verified = excluded.verified, trajectory = excluded.trajectory,
                     record = excluded.record, finished_at = excluded.finished_at""",
                (
                    run_id,
                    attempt.instance_id,
                    attempt.attempt,
                    attempt.agent,
                    attempt.model,
                    attempt.status,
                    attempt.stop_reason,
                    attempt.error,
                    attempt.tokens_in,
                    attempt.tokens_out,
                    attempt.cost_usd,
                    attempt.seconds,
                    verified,
                    "".join(json.dumps(e, default=str) + "\n" for e in attempt.trajectory),
                    record,
                    now(),
                ),
            )
            self._upsert_submission(db, run_id, attempt.submission())

    def attempts(self, run_id: str, *, trajectories: bool = False) -> list[Attempt]:
        """The agent attempts of a run (trajectories only when asked: they can be large)."""
        column = "trajectory" if trajectories else "'' AS trajectory"
        rows = self._read(
            f"SELECT record, {column} FROM attempts WHERE run_id = ? ORDER BY instance_id, attempt",
            (run_id,),
        )
        return [self._attempt(row) for row in rows]

    def attempt(self, run_id: str, instance_id: str, number: int) -> Attempt | None:
        rows = self._read(
            "SELECT record, trajectory FROM attempts "
            "WHERE run_id = ? AND instance_id = ? AND attempt = ?",
            (run_id, instance_id, number),
        )
        return self._attempt(rows[0]) if rows else None

    @staticmethod
    def _attempt(row: sqlite3.Row) -> Attempt:
        attempt = Attempt.model_validate_json(row[0])
        attempt.trajectory = [json.loads(line) for line in (row[1] or "").splitlines() if line]
        return attempt

    def delete_attempts(self, run_id: str, keys: Iterable[tuple[str, int]]) -> int:
        """Forget agent attempts (and their verdicts) so they run again (for --force)."""
        rows = [(run_id, iid, n) for iid, n in keys]
        with self._write() as db:
            self._delete(db, rows)
            before = db.total_changes
            db.executemany(
                "DELETE FROM attempts WHERE run_id = ? AND instance_id = ? AND attempt = ?", rows
            )
            return db.total_changes - before

    # ------------------------------------------------------------------------ provenance

    def save_provenance(self, run_id: str, provenance: dict[str, Any]) -> None:
        with self._write() as db:
            db.execute(
                """INSERT INTO provenance (run_id, provenance) VALUES (?, ?)
                   ON CONFLICT (run_id) DO UPDATE SET provenance = excluded.provenance""",
                (run_id, json.dumps(provenance, default=str)),
            )

    def provenance(self, run_id: str) -> dict[str, Any] | None:
        rows = self._read("SELECT provenance FROM provenance WHERE run_id = ?", (run_id,))
        return dict(json.loads(rows[0][0])) if rows else None
