"""The tables and summaries of real_tasks.py: per task, per repository, and the totals."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

out = Console(width=170)


def gb(n: float | None) -> str:
    return "-" if n is None else f"{n / 1e9:.2f} GB"


def failure_class(row: dict[str, Any]) -> str | None:
    """What kept gold from resolving, in a few words: the environment's failure class, or the
    verdict's status."""
    error = row["build_error"]
    if error:
        first = error.splitlines()[0]
        return first.rsplit("(", 1)[-1].rstrip(").") if first.endswith(").") else "environment"
    status = row["gold"]["status"]
    if status == "unresolved" and row["gold"].get("network"):
        return "network"
    return None if status == "resolved" else status


def by_repo(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per repository: tasks, gold and empty resolved, environments, and why gold missed."""
    table: dict[str, dict[str, Any]] = {}
    for r in rows:
        entry = table.setdefault(
            r["repo"],
            {
                "tasks": 0,
                "gold": 0,
                "gold_strict": 0,
                "empty": 0,
                "envs": set(),
                "misses": Counter[str](),
            },
        )
        entry["tasks"] += 1
        entry["gold"] += r["gold"]["status"] == "resolved"
        entry["gold_strict"] += r["gold"].get("policies", {}).get("strict") == "resolved"
        entry["empty"] += r["empty"]["status"] == "resolved"
        if r["env_key"]:
            entry["envs"].add(r["env_key"])
        why = failure_class(r)
        if why:
            entry["misses"][why] += 1
    return {
        repo: {**e, "envs": len(e["envs"]), "misses": dict(e["misses"])}
        for repo, e in sorted(table.items())
    }


def show(rows: list[dict[str, Any]], totals: dict[str, Any], args: argparse.Namespace) -> None:
    table = Table(title=f"real tasks: {args.dataset.name}", show_lines=False)
    cols = ["task", "env (tasks)", "python", "resolved at", "build s", "reuse s", "ws s"]
    for col in [*cols, "gold", "test s", "empty"]:
        table.add_column(col, no_wrap=True, justify="right" if col.endswith(" s") else "left")
    for r in rows:
        g, e = r["gold"], r["empty"]
        gold = g["status"] or "-"
        if g["status"] and g["status"] != "resolved":
            gold = f"[red]{gold}[/] {g['f2p_passed']}/{g['f2p']} {g['p2p_passed']}/{g['p2p']}"
        empty = e["status"] or "-"
        if e["status"] == "resolved":
            empty = f"[red]{empty}[/]"
        table.add_row(
            r["instance_id"],
            f"{r['env_key'] or 'failed'} ({r['env_shared_by']})",
            r["interpreter"] or "-",
            (r["cutoff"] or "-")[:10],
            f"{r['build_seconds']:.1f}",
            f"{r['reuse_seconds']:.2f}",
            f"{r['workspace_seconds']:.2f}",
            gold,
            "-" if g["pytest_seconds"] is None else f"{g['pytest_seconds']:.1f}",
            empty,
        )
    out.print(table)
    for r in rows:
        for kind in ("gold", "empty"):
            v = r[kind]
            wrong = v["status"] != ("resolved" if kind == "gold" else "unresolved")
            if wrong and v["reason"]:
                out.print(f"{r['instance_id']} {kind} {v['status']}: {v['reason'][:300]}")
    t = totals
    n = t["evaluated"]
    repos = Table(title=f"per repository (gold: strict / --base-failures {args.base_failures})")
    for col in ("repository", "tasks", "gold resolved", "empty resolved", "environments", "misses"):
        repos.add_column(col)
    for repo, e in t["by_repo"].items():
        misses = ", ".join(f"{k} {v}" for k, v in sorted(e["misses"].items())) or "-"
        repos.add_row(
            repo,
            str(e["tasks"]),
            f"{e['gold_strict']} / {e['gold']}",
            str(e["empty"]),
            str(e["envs"]),
            misses,
        )
    out.print(repos)
    policies = " / ".join(f"{p} {k}" for p, k in t["gold_resolved_by_policy"].items())
    empties = " / ".join(f"{p} {k}" for p, k in t["empty_resolved_by_policy"].items())
    out.print(f"gold resolved by --base-failures policy: {policies}; empty: {empties}")
    out.print(
        f"gold resolved {t['gold_resolved']}/{n}, empty resolved {t['empty_resolved']}/{n}"
        f" ({len(t['unavailable'])} of {t['tasks']} tasks without a clone: "
        f"{', '.join(t['unavailable']) or 'none'})"
    )
    kind = "cold (fresh env cache, warm uv cache)" if t["cold"] else "first use in this run"
    out.print(
        f"env build, {kind}: {t['build_wall_seconds']} s wall with {args.workers} workers; "
        f"per task median {t['build_seconds_median']} s, max {t['build_seconds_max']} s"
    )
    out.print(
        f"env reuse (warm, inference + cache lookup): median {t['reuse_seconds_median']} s, "
        f"max {t['reuse_seconds_max']} s; fresh workspace (every attempt's own cost): median "
        f"{t['workspace_seconds_median']} s, max {t['workspace_seconds_max']} s"
    )
    out.print(
        f"environments ({'start-of-month cutoff first' if t['share'] else 'exact cutoffs'}): "
        f"{t['environments']} for {n} tasks "
        f"({t['tasks_sharing_an_env']} tasks share one with another task)"
    )
    out.print(
        f"disk per env: median {gb(t['env_bytes_median'])} counting files hard-linked from "
        f"uv's cache, {gb(t['env_own_bytes_median'])} its own; all together "
        f"{gb(t['envs_bytes_together'])} ({gb(t['envs_own_bytes_together'])} own). "
        f"A SWE-bench env image: ~{gb(t['swe_bench_env_image_bytes'])}"
    )
    out.print(
        f"gold {t['gold_wall_seconds']} s, empty {t['empty_wall_seconds']} s; "
        f"total {t['total_wall_seconds']} s"
    )
    out.print(
        f"throughput: {t['worker_seconds_per_task_cold']} worker-seconds per task cold "
        f"(environment built on first use), {t['worker_seconds_per_task_warm']} warm "
        f"(environment cached), of which the evaluation itself {t['eval_seconds_per_task']} s; "
        f"{t['environments_per_task']} distinct environments per task; disk per environment "
        f"{gb(t['env_bytes_mean'])} mean ({gb(t['env_own_bytes_mean'])} not shared with uv's "
        f"cache)"
    )
