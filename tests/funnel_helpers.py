"""Files of a small collection half-way through validation, for the funnel's tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swebounty.collect.repolist import RepoLog, RepoRecord

ENV = "before-run failed: environment not built: {} ({}).\nspec abc: uv pip install failed."


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def funnel_files(root: Path) -> tuple[Path, Path]:
    cands = root / "candidates.jsonl"
    log = RepoLog(root / "candidates.repos.json")
    log.update(RepoRecord(repo="a/one", status="done", fixes=9))
    log.update(RepoRecord(repo="b/two", status="done", fixes=2))
    log.update(RepoRecord(repo="c/gone", status="failed", error="clone missing"))
    ids = {"a/one": [f"a{i}" for i in range(7)], "b/two": ["b0"]}
    _write(cands, [{"instance_id": i, "repo": r} for r, xs in ids.items() for i in xs])
    _write(
        root / "candidates.rejects.jsonl",
        [
            {"instance_id": "a-x", "repo": "a/one", "stage": "split", "reason": "no test change"},
            {"instance_id": "a-y", "repo": "a/one", "stage": "duplicate", "reason": "same as a0"},
            {"instance_id": "b-x", "repo": "b/two", "stage": "filter:leak", "reason": "quotes"},
        ],
    )
    tasks = root / "tasks.jsonl"
    _write(
        tasks,
        [
            {"instance_id": "a0", "repo": "a/one",
             "validation": {"cpu_seconds": 30.0, "wall_seconds": 40.0, "env_key": "e1",
                            "cpu_complete": True}},
            {"instance_id": "a1", "repo": "a/one",
             "validation": {"cpu_seconds": 10.0, "wall_seconds": 20.0, "env_key": "e1"}},
        ],
    )  # fmt: skip

    def rej(iid: str, stage: str, reason: str) -> dict[str, Any]:
        return {"instance_id": iid, "repo": "a/one", "stage": stage, "reason": reason,
                "cpu_seconds": 5.0, "wall_seconds": 6.0}  # fmt: skip

    # a partial file (a stopped run) is what is read
    _write(
        root / "tasks.rejects.jsonl.partial",
        [
            rej("a2", "infra", ENV.format("x", "resolve")),
            rej("a3", "collect", "the before-run collects no test"),
            rej("a4", "no_f2p", "no FAIL_TO_PASS after 3 run(s) each (flaky)"),
            rej("a5", "too_many_f2p", "99 FAIL_TO_PASS tests"),
        ],
    )
    return cands, tasks
