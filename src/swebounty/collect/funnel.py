"""The yield funnel: how many fixes survive each step from a repository to a valid task, and why
the others were dropped.

    fix commits in the window -> candidates (code and tests changed, filters, gates)
      -> environment built -> tests collected -> FAIL_TO_PASS found -> stable over the runs
      -> valid

Everything is read back from the files `collect` and `validate` write (candidates, rejects,
`repos.json`, tasks), never from a run's memory: a resumed run, or one stopped half-way, gives
the funnel of everything decided so far; candidates not validated yet are `pending`.
Every drop has a class (`failure_class`) and an example (instance id and reason).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swebounty.collect.repolist import load_repo_log, repo_log_path

STAGES = ("fixes", "candidates", "environment", "collected", "fail_to_pass", "stable", "valid")
STAGE_TITLES = {
    "fixes": "fix commits in the window",
    "candidates": "candidates (code and tests changed, filters and gates passed)",
    "environment": "environment built",
    "collected": "tests collected",
    "fail_to_pass": "FAIL_TO_PASS found",
    "stable": "stable over every run",
    "valid": "valid",
}
# The stage a candidate of each validation class did not reach.
_CLASS_STAGE = {
    "resolution": "environment",
    "build": "environment",
    "interpreter": "environment",
    "index unreachable": "environment",
    "infra": "environment",
    "patch": "collected",
    "unsupported runner": "collected",
    "test collection": "collected",
    "timeout": "collected",
    "no failing test": "fail_to_pass",
    "network": "fail_to_pass",
    "flaky": "stable",
    "too many FAIL_TO_PASS": "valid",
}
_ENV_KIND = re.compile(
    r"environment not built: .*?\((build|python|resolve|yanked|network|timeout|other|interpreter)\)"
)
_ENV_CLASS = {
    "build": "build",
    "other": "build",
    "python": "interpreter",
    "interpreter": "interpreter",
    "resolve": "resolution",
    "yanked": "resolution",
    "network": "index unreachable",
    "timeout": "timeout",
}


def failure_class(stage: str, reason: str) -> str:
    """The class of a validation reject, from its stage and reason (validate.py's)."""
    if stage == "tests":
        return "unsupported runner"
    if stage == "collect":
        return "test collection"
    if stage == "patch":
        return "patch"
    if stage == "network":
        return "network"
    if stage == "too_many_f2p":
        return "too many FAIL_TO_PASS"
    if stage == "no_f2p":
        return "flaky" if "(flaky)" in reason else "no failing test"
    if m := _ENV_KIND.search(reason):
        return _ENV_CLASS[m.group(1)]
    if "timed out" in reason or "ran out of time" in reason:
        return "timeout"
    if "no test runner" in reason:
        return "unsupported runner"
    return "infra"


def collect_class(stage: str, reason: str) -> str:
    """The class of a collect reject: why a fix is no candidate."""
    if stage == "split":
        return "tests, docs or packaging only" if reason.startswith("no code change") else (
            "no test change"
        )  # fmt: skip
    if stage.startswith("filter:"):
        return f"filter {stage.split(':', 1)[1]}"
    return {"link": "no linked issue", "freshness": "too old"}.get(stage, stage)


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a JSONL output: its partial file while a run is under way or stopped."""
    partial = path.with_name(path.name + ".partial")
    source = partial if partial.exists() else path
    if not source.exists():
        return
    for line in source.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line torn by a kill
        if isinstance(record, dict) and "instance_id" in record:
            yield record


def decided(tasks: Path, *, retrying_infra: bool = False) -> set[str]:
    """Ids a validation to `tasks` has decided so far (valid or rejected); infrastructure
    rejects left out when a run will retry them."""
    ids = {str(t["instance_id"]) for t in _records(tasks)}
    for rej in _records(tasks.with_name(tasks.stem + ".rejects.jsonl")):
        if not (retrying_infra and rej.get("stage") == "infra"):
            ids.add(str(rej["instance_id"]))
    return ids


def _blank() -> dict[str, Any]:
    return {**dict.fromkeys(STAGES, 0), "pending": 0, "dropped": {}, "costs": _costs_blank()}


def _costs_blank() -> dict[str, Any]:
    return {
        "validated": 0,
        "wall_seconds": 0.0,
        "cpu_seconds": 0.0,
        "cpu_incomplete": 0,
        "env_keys": set(),
    }


def _drop(row: dict[str, Any], cls: str, stage: str, record: dict[str, Any]) -> None:
    entry = row["dropped"].setdefault(cls, {"count": 0, "stage": stage, "example": None})
    entry["count"] += 1
    if entry["example"] is None:
        reason = str(record.get("reason") or "").splitlines()
        entry["example"] = {
            "instance_id": record.get("instance_id"),
            "reason": (reason[0] if reason else "")[:300],
        }


def _cost(row: dict[str, Any], facts: dict[str, Any]) -> None:
    costs = row["costs"]
    costs["validated"] += 1
    costs["wall_seconds"] += float(facts.get("wall_seconds") or facts.get("seconds") or 0.0)
    costs["cpu_seconds"] += float(facts.get("cpu_seconds") or 0.0)
    # costs.Meter says whether every sandboxed run's time is in; older records did not count it.
    costs["cpu_incomplete"] += facts.get("cpu_complete") is not True
    if facts.get("env_key"):
        costs["env_keys"].add(facts["env_key"])


def compute(candidates: Path, tasks: Path | None = None) -> dict[str, Any]:
    """The funnel of a candidates file (with what `collect` wrote beside it) and, when given,
    of the validated tasks file (with its rejects)."""
    rows: dict[str, dict[str, Any]] = {}

    def row(repo: str) -> dict[str, Any]:
        return rows.setdefault(repo, _blank())

    failed: dict[str, str] = {}
    for repo, rec in load_repo_log(repo_log_path(candidates)).items():
        row(repo)["fixes"] = rec.fixes
        if rec.status == "failed":
            failed[repo] = rec.error or "failed"
    have_log = bool(rows)
    repo_of: dict[str, str] = {}
    for cand in _records(candidates):
        repo = str(cand.get("repo"))
        repo_of[str(cand["instance_id"])] = repo
        row(repo)["candidates"] += 1
        if not have_log:
            row(repo)["fixes"] += 1
    for rej in _records(candidates.with_name(candidates.stem + ".rejects.jsonl")):
        repo = str(rej.get("repo"))
        cls = collect_class(str(rej.get("stage")), str(rej.get("reason") or ""))
        _drop(row(repo), cls, "candidates", rej)
        if not have_log:
            row(repo)["fixes"] += 1
    decided: set[str] = set()
    if tasks is not None:
        for task in _records(tasks):
            iid = str(task["instance_id"])
            if iid not in repo_of:
                continue
            decided.add(iid)
            r = row(repo_of[iid])
            for stage in STAGES[2:]:
                r[stage] += 1
            _cost(r, task.get("validation") or {})
        for rej in _records(tasks.with_name(tasks.stem + ".rejects.jsonl")):
            iid = str(rej["instance_id"])
            if iid not in repo_of:
                continue
            decided.add(iid)
            r = row(repo_of[iid])
            cls = str(
                rej.get("class")
                or failure_class(str(rej.get("stage")), str(rej.get("reason") or ""))
            )
            stage = _CLASS_STAGE.get(cls, "environment")
            for later in STAGES[2 : STAGES.index(stage)]:
                r[later] += 1
            _drop(r, cls, stage, rej)
            _cost(r, rej)
    for iid, repo in repo_of.items():
        if iid not in decided:
            row(repo)["pending"] += 1
    overall = _blank()
    for repo_row in rows.values():
        for key in (*STAGES, "pending"):
            overall[key] += repo_row[key]
        for cls, entry in repo_row["dropped"].items():
            total = overall["dropped"].setdefault(
                cls, {"count": 0, "stage": entry["stage"], "example": entry["example"]}
            )
            total["count"] += entry["count"]
        for key in ("validated", "wall_seconds", "cpu_seconds", "cpu_incomplete"):
            overall["costs"][key] += repo_row["costs"][key]
        overall["costs"]["env_keys"] |= repo_row["costs"]["env_keys"]
    for r in [*rows.values(), overall]:
        _finish(r)
    return {
        "stages": {s: STAGE_TITLES[s] for s in STAGES},
        "candidates_file": str(candidates),
        "tasks_file": str(tasks) if tasks else None,
        "overall": overall,
        "repos": dict(sorted(rows.items())),
        "failed_repos": failed,
    }


def _finish(row: dict[str, Any]) -> None:
    """Sorted drops, yields, and costs per candidate and per valid task."""
    row["dropped"] = dict(sorted(row["dropped"].items(), key=lambda kv: -kv[1]["count"]))
    decided = row["candidates"] - row["pending"]
    row["yield"] = round(row["valid"] / decided, 3) if decided else None
    costs = row["costs"]
    keys = costs.pop("env_keys")
    n, valid = costs["validated"], row["valid"]
    costs["wall_seconds"] = round(costs["wall_seconds"], 1)
    costs["cpu_seconds"] = round(costs["cpu_seconds"], 1)
    costs["environments"] = len(keys)
    costs["cpu_seconds_per_candidate"] = round(costs["cpu_seconds"] / n, 1) if n else None
    costs["wall_seconds_per_candidate"] = round(costs["wall_seconds"] / n, 1) if n else None
    costs["cpu_seconds_per_valid"] = round(costs["cpu_seconds"] / valid, 1) if valid else None
    costs["wall_seconds_per_valid"] = round(costs["wall_seconds"] / valid, 1) if valid else None


def write(funnel: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(funnel, indent=2) + "\n", encoding="utf-8")


def funnel_path(tasks: Path) -> Path:
    return tasks.with_name(tasks.stem + ".funnel.json")
