"""Quality gates a benchmark needs beyond "a test fails before and passes after".

What SWE-bench Verified's reviewers rejected, made mechanical (each one counted in the funnel):
- **duplicates**: the same change landing twice in a repository (a cherry-pick, a backport
  merged forward, a revert and re-land) is one task, not two: later copies are rejected
  (`duplicate`);
- **tests that need the network**: grading is offline, so a test failing for want of the
  network (netfail.py's signatures) can never be graded; a candidate whose only failing tests
  are such is rejected (`network`), and the ones it has are recorded;
- **a FAIL_TO_PASS set too large to be about one change** (typically a whole new test module
  of a feature): beyond `max_fail_to_pass` tests the task is rejected (`too_many_f2p`).
A fix that changes only tests, docs or packaging is no candidate at all (split.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from swebounty.netfail import network_evidence
from swebounty.tasks import Task

FAILING = ("failed", "error")


class Gates(BaseModel):
    max_fail_to_pass: int = Field(
        default=40,
        description="more FAIL_TO_PASS tests than this and the task is not one change: rejected",
    )


def change_id(patch: str, test_patch: str) -> str:
    """What a change does, independent of where and when it landed: the changed lines of each
    file (not their line numbers, hunk headers or blob ids), hashed. A cherry-pick onto a
    moved base has the same id."""
    digest = hashlib.sha256()
    for text in (patch, test_patch):
        lines = text.splitlines()
        added = sorted(ln[1:] for ln in lines if ln.startswith("+") and not ln.startswith("+++ "))
        removed = sorted(ln[1:] for ln in lines if ln.startswith("-") and not ln.startswith("--- "))
        digest.update(json.dumps([added, removed]).encode())
    return digest.hexdigest()[:16]


def known_changes(candidates: Path) -> dict[str, str]:
    """`repo:change id` -> instance id of the candidates already in a (partial) candidates
    file."""
    found: dict[str, str] = {}
    if not candidates.exists():
        return found
    for line in candidates.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        cid = record.get("change_id")
        if isinstance(cid, str):
            found.setdefault(f"{record.get('repo')}:{cid}", str(record.get("instance_id")))
    return found


def network_failures(outcomes: dict[str, Any]) -> dict[str, str]:
    """Test id -> the evidence, for every test of one run that failed for want of the network."""
    found: dict[str, str] = {}
    for tid, outcome in outcomes.items():
        if str(getattr(outcome, "status", outcome)) not in FAILING:
            continue
        evidence = network_evidence(str(getattr(outcome, "message", "") or ""))
        if evidence:
            found[tid] = evidence
    return found


def too_many_f2p(task: Task, gates: Gates) -> str | None:
    """Why the task's FAIL_TO_PASS is too large to be about one change, or None."""
    n = len(task.FAIL_TO_PASS)
    if n <= gates.max_fail_to_pass:
        return None
    files = sorted({tid.split("::", 1)[0] for tid in task.FAIL_TO_PASS})
    where = f" in {', '.join(files[:3])}" if files else ""
    return (
        f"{n} FAIL_TO_PASS tests{where}, more than {gates.max_fail_to_pass}: "
        "a whole feature's tests, not one change"
    )
