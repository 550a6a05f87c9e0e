"""The store's tables, version by version, and the migrations between versions.

`MIGRATIONS[i]` takes a database from schema version i to i + 1; a file records its version in
`schema_version`, and `database.Database` runs the steps it lacks when it opens the file. A
new table or column is a new step appended here: a step that has shipped is never edited, or
the files it already migrated would differ from new ones.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

_SCHEMA_V1 = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    dataset TEXT NOT NULL,
    config TEXT NOT NULL,
    sandbox TEXT NOT NULL,
    unsafe INTEGER NOT NULL
);
CREATE TABLE submissions (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    instance_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    model_name_or_path TEXT NOT NULL,
    model_patch TEXT,
    meta TEXT NOT NULL,
    UNIQUE (run_id, instance_id, attempt)
);
CREATE TABLE verdicts (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    instance_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    status TEXT NOT NULL,
    empty_patch INTEGER NOT NULL,
    reason TEXT NOT NULL,
    hack_flags TEXT NOT NULL,
    patch_method TEXT,
    exit_code INTEGER,
    env_key TEXT,
    seconds REAL NOT NULL,
    log_dir TEXT,
    verdict TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    UNIQUE (run_id, instance_id, attempt)
);
CREATE TABLE test_results (
    run_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    test_id TEXT NOT NULL,
    expected TEXT NOT NULL,
    status TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX test_results_key ON test_results (run_id, instance_id, attempt);
CREATE TABLE record_errors (
    run_id TEXT NOT NULL,
    source TEXT NOT NULL,
    location TEXT NOT NULL,
    message TEXT NOT NULL,
    UNIQUE (run_id, source, location, message)
);
"""

# Agent runs (`swebounty run`): each attempt with its trajectory, and what produced the run.
_SCHEMA_V2 = """
CREATE TABLE attempts (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    instance_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    agent TEXT NOT NULL,
    model TEXT,
    status TEXT NOT NULL,
    stop_reason TEXT NOT NULL,
    error TEXT NOT NULL,
    tokens_in INTEGER,
    tokens_out INTEGER,
    cost_usd REAL,
    seconds REAL NOT NULL,
    verified INTEGER,
    trajectory TEXT NOT NULL,
    record TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    UNIQUE (run_id, instance_id, attempt)
);
CREATE TABLE provenance (
    run_id TEXT PRIMARY KEY REFERENCES runs(run_id),
    provenance TEXT NOT NULL
);
"""

# Version 3: a verdict that is replaced (an `error` re-evaluated on resume, a --force redo)
# moves here first, so an attempt's earlier outcomes stay on record.
_SCHEMA_V3 = """
CREATE TABLE verdict_history (
    run_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    status TEXT NOT NULL,
    verdict TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    replaced_at TEXT NOT NULL
);
CREATE INDEX verdict_history_key ON verdict_history (run_id, instance_id, attempt);
"""

# Version 4: the base failures policy got a name (strict, network, all). A verdict graded
# under the earlier opt-in flag (`excuse_base_failures: true`) was graded under `all`.
_SCHEMA_V4 = """
UPDATE verdicts SET verdict = json_set(verdict, '$.base_failures', 'all')
    WHERE json_extract(verdict, '$.excuse_base_failures') = 1;
UPDATE verdict_history SET verdict = json_set(verdict, '$.base_failures', 'all')
    WHERE json_extract(verdict, '$.excuse_base_failures') = 1
"""

Migration = Callable[[sqlite3.Connection], None]


def _script(sql: str) -> Migration:
    """A migration running each statement of `sql` inside the caller's transaction.

    (`executescript` would commit first, letting two processes migrate the same file at once.)
    """

    def migrate(db: sqlite3.Connection) -> None:
        for statement in sql.split(";"):
            if statement.strip():
                db.execute(statement)

    return migrate


# MIGRATIONS[i] takes a database from schema version i to i + 1. Append, never edit.
MIGRATIONS: list[Migration] = [
    _script(_SCHEMA_V1),
    _script(_SCHEMA_V2),
    _script(_SCHEMA_V3),
    _script(_SCHEMA_V4),
]
