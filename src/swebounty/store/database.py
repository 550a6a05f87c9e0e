"""The store's SQLite file: one connection shared by a process's threads, its transactions,
and bringing the file to the newest schema when it opens.

WAL mode: readers never wait for the writer, and a process killed at any moment leaves every
committed transaction whole. Other processes may open the same file (WAL + busy_timeout
serialise writers).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from swebounty.store import schema

DB_NAME = "runs.sqlite"
BUSY_TIMEOUT_MS = 30_000


class StoreError(Exception):
    """The store cannot be used as it is; the message says what to do."""


def storable(value: Any) -> Any:
    """`value` with every string made valid UTF-8 (a lone surrogate becomes U+FFFD): SQLite
    and JSON refuse them, and one bad string must not cost a verdict."""
    if isinstance(value, str):
        return re.sub("[\ud800-\udfff]", "\ufffd", value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    return value


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Database:
    """One SQLite file of the store, opened and migrated: the connection and its transactions."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        if path.is_dir():
            path = path / DB_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.RLock()
        # Autocommit mode: transactions are opened explicitly with BEGIN IMMEDIATE, which takes
        # the write lock up front instead of failing on a read-to-write upgrade.
        self._db = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        self._db.row_factory = sqlite3.Row
        self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._db.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode survives a killed process (only an OS crash can lose the last
        # commits), and is much faster than FULL.
        self._db.execute("PRAGMA synchronous = NORMAL")
        try:
            self._migrate()
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    def _migrate(self) -> None:
        """Bring the file to the newest schema, in one transaction (all steps or none)."""
        with self._write() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (0)")
            version = row[0] if row else 0
            steps = schema.MIGRATIONS  # looked up at each open: a test appends a step
            if version > len(steps):
                raise StoreError(
                    f"{self.path} has schema version {version}, newer than this swebounty "
                    f"understands ({len(steps)}); upgrade swebounty or use another runs dir"
                )
            for step in steps[version:]:
                step(db)
            db.execute("UPDATE schema_version SET version = ?", (len(steps),))

    @property
    def schema_version(self) -> int:
        return int(self._read("SELECT version FROM schema_version")[0][0])
