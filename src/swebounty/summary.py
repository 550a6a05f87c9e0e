"""A run's `report.json`: SWE-bench's summary fields (so existing tooling reads it) plus ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swebounty import misses
from swebounty.scoring import score_run, swebench_summary
from swebounty.tasks import RecordError, Submission, Task
from swebounty.verdicts import Verdict


def run_report(
    run_id: str,
    tasks: list[Task],
    submissions: list[Submission],
    verdicts: list[Verdict],
    record_errors: list[RecordError],
    *,
    sandbox: str,
    unsafe: bool,
    provenance: dict[str, Any] | None = None,
    unknown_instance_ids: list[str] | None = None,
) -> dict[str, Any]:
    """`provenance` (agent runs) adds what produced the run and its Kprize eligibility."""
    report = swebench_summary(tasks, submissions, verdicts)
    report["run_id"] = run_id
    report["sandbox"] = sandbox
    report["unsafe"] = unsafe
    report["record_errors"] = [e.model_dump() for e in record_errors]
    # Where the verdicts were produced: {"ray": {"host/node": n}} (or "local": {"host": n}).
    producers: dict[str, dict[str, int]] = {}
    for v in verdicts:
        nodes = producers.setdefault(v.executor or "unknown", {})
        nodes[v.node or "unknown"] = nodes.get(v.node or "unknown", 0) + 1
    report["executors"] = producers
    report["task_defects"] = task_defects(verdicts)
    report["misses"] = misses.by_class(verdicts)  # every verdict not resolved, by why
    score = score_run(tasks, submissions, verdicts, run_id=run_id, provenance=provenance)
    if unknown_instance_ids:
        # Predictions for tasks the dataset lacks never reach the store's submissions, so
        # score_run cannot see them: the caller that paired them says which they were.
        score.unknown_instance_ids = sorted(
            set(score.unknown_instance_ids) | set(unknown_instance_ids)
        )
    report["swebounty"] = score.model_dump(mode="json")
    return report


def task_defects(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """report.json's `task_defects`: the verdicts of tasks whose FAIL_TO_PASS tests passed with
    no change to the repository (grading.py), by task and attempt."""
    return [
        {"instance_id": v.instance_id, "attempt": v.attempt, "status": v.status,
         "reason": v.task_defect}
        for v in sorted(verdicts, key=lambda v: (v.instance_id, v.attempt))
        if v.task_defect
    ]  # fmt: skip


def write_run_report(path: Path, report: dict[str, Any]) -> None:
    """Write `report` atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    tmp.replace(path)
