"""Real tasks through the real harness: environment builds, gold and empty verdicts, disk.

    python bench/real_tasks.py --dataset ../shared/data/swebench_lite_dev.json \\
        --repos-dir ~/clones [--workers 2] [--cold] [--no-share] [-i TASK_ID ...]

Four passes over the tasks whose repository has a clone in --repos-dir (the others are listed
as unavailable, not evaluated):
1. build: every task's environment, `--workers` at a time (with --cold, in a fresh, empty
   environment cache, so these are cold builds; uv's own download cache stays as it is);
2. reuse: the same again with a new EnvManager on the same cache, one at a time: the warm cost
   of finding a task's environment (inference + cache lookup), timed apart from making the
   fresh workspace that every attempt needs anyway;
3. gold and 4. empty: `evaluate_run` exactly as `swebounty eval` runs it (fresh history-free
   workspace, sandbox, JUnit grading), with --force so the times are this run's, under
   --base-failures (baseline.py; `network` by default). Resolved counts are given for that
   policy and each narrower one from the same verdicts (baseline.status_under): strict (a
   resolve that needed an excused test is unresolved), network, all.
It prints a per-task table, a per-repository table (gold and empty resolved, environments, and
why gold missed: the environment's failure class or the verdict), totals, and the throughput
figures a Docker harness is compared by: worker-seconds per task cold (environment built on first
use) and warm (found in the cache), distinct environments per task, disk per environment. All of
it goes to --json (bench/results/real_tasks.json).
Logs of each attempt are under RUNS_DIR/<run_id>/<task_id>/.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import statistics
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swebounty.baseline import DEFAULT_POLICY, POLICIES, status_under
from swebounty.envs import EnvBuildError, Environment
from swebounty.envs.cache import dir_sizes, read_json
from swebounty.evalcontext import EvalContext
from swebounty.netfail import network_evidence, pytest_sections, section_name
from swebounty.repos import RepoError, commit_date, ensure_mirror, find_mirror, make_workspace
from swebounty.runs import evaluate_run
from swebounty.store import Store
from swebounty.tasks import Task, Verdict, empty_submissions, gold_submissions, load_tasks

SWE_BENCH_ENV_IMAGE = 1.7e9  # bytes of one SWE-bench environment image, for comparison
console = Console(stderr=True)
out = Console(width=170)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dataset", type=Path, required=True, help="SWE-bench .json/.jsonl/.parquet")
    p.add_argument("--repos-dir", type=Path, required=True, help="clones named owner__name")
    default_cache = Path(os.environ.get("SWEBOUNTY_CACHE", "~/.cache/swebounty"))
    p.add_argument("--cache-dir", type=Path, default=default_cache, help="swebounty's cache")
    p.add_argument("--runs-dir", type=Path, default=Path("runs"), help="store and attempt logs")
    p.add_argument("--run-prefix", default="real", help="runs are PREFIX-gold and PREFIX-empty")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("-i", "--instance-id", action="append", dest="ids", help="only these tasks")
    p.add_argument(
        "--cold",
        action="store_true",
        help="build in a fresh environment cache (CACHE_DIR/cold-<time>), to time cold builds",
    )
    p.add_argument(
        "--no-share",
        action="store_true",
        help="resolve every task at its own cutoff (no shared start-of-month cutoff first)",
    )
    p.add_argument("--sandbox", choices=["bwrap", "unsafe"], default="bwrap")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per test run")
    p.add_argument(
        "--base-failures",
        choices=POLICIES,
        default=DEFAULT_POLICY,
        help="the policy the runs grade under (narrower ones counted from them)",
    )
    p.add_argument("--json", type=Path, default=Path(__file__).parent / "results/real_tasks.json")
    return p.parse_args(argv)


def gb(n: float | None) -> str:
    return "-" if n is None else f"{n / 1e9:.2f} GB"


def junit_seconds(path: Path) -> float | None:
    """pytest's own time for the run (the top testsuite's `time`)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    try:
        return round(sum(float(s.get("time", "0")) for s in suites), 2)
    except ValueError:
        return None


def context(args: argparse.Namespace, cache_dir: Path) -> EvalContext:
    ctx = EvalContext.create(
        cache_dir=cache_dir,
        runs_dir=args.runs_dir,
        repos_dir=args.repos_dir,
        sandbox=args.sandbox,
        timeout_s=args.timeout,
        base_failures=args.base_failures,
    )
    ctx.envs.share = not args.no_share
    return ctx


def build_pass(
    tasks: list[Task], ctx: EvalContext, workers: int, label: str
) -> dict[str, dict[str, Any]]:
    """Each task's environment, timed; `workers` at a time."""
    results: dict[str, dict[str, Any]] = {}
    started = time.monotonic()

    def one(task: Task) -> dict[str, Any]:
        """Workspace and environment timed apart: the workspace is every attempt's own cost
        (a fresh checkout), the environment is what the cache saves."""
        scratch = ctx.work_dir / f"bench-{task.instance_id}-{uuid.uuid4().hex[:8]}"
        env: Environment | None = None
        error = None
        t0 = t1 = time.monotonic()
        try:
            mirror = ensure_mirror(
                task.repo, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir, url=task.repo_url
            )
            scratch.mkdir(mode=0o711)
            ws = make_workspace(mirror, task.base_commit, scratch / "workspace")
            t1 = time.monotonic()
            spec = ctx.envs.spec_for(task, ws, commit_date(mirror, task.base_commit))
            env = ctx.envs.ensure(spec, ws)
        except (EnvBuildError, RepoError) as exc:
            error = str(exc)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        row: dict[str, Any] = {
            "seconds": round(time.monotonic() - t1, 2),
            "workspace_seconds": round(t1 - t0, 2),
            "error": error,
        }
        if env is not None:
            record = read_json(ctx.envs.cache.spec_dir(env.spec_key or "") / "record.json")
            row.update(
                cutoff=(record or {}).get("cutoff"),
                env_key=env.key,
                interpreter=env.interpreter,
                spec_build_seconds=env.build_seconds,
                env_dir=str(env.path.parent),
                why=env.why,
            )
        return row

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(one, t): t for t in tasks}
        for n, future in enumerate(as_completed(futures), 1):
            task = futures[future]
            row = results[task.instance_id] = future.result()
            what = (
                f"env {row['env_key']} (Python {row['interpreter']})"
                if not row["error"]
                else f"[red]failed[/]: {row['error'].splitlines()[0][:100]}"
            )
            console.print(
                f"[{n:>2}/{len(tasks)}] {label} {task.instance_id}: {what} "
                f"{row['seconds']:.1f} s  (elapsed {time.monotonic() - started:.0f} s)"
            )
    return results


def eval_pass(
    run_id: str,
    kind: str,
    tasks: list[Task],
    ctx: EvalContext,
    store: Store,
    args: argparse.Namespace,
) -> dict[str, Verdict]:
    subs = gold_submissions(tasks) if kind == "gold" else empty_submissions(tasks)
    by_id = {t.instance_id: t for t in tasks}
    store.ensure_run(
        run_id,
        dataset=str(args.dataset.resolve()),
        config={
            "kind": kind,
            "repos_dir": str(args.repos_dir),
            "timeout": args.timeout,
            "base_failures": args.base_failures,
        },
        sandbox=ctx.sandbox.name,
        unsafe=args.sandbox == "unsafe",
    )
    started = time.monotonic()
    done = Counter[str]()

    def progress(v: Verdict) -> None:
        done[v.status] += 1
        n = sum(done.values())
        console.print(
            f"[{n:>2}/{len(tasks)}] {kind} {v.instance_id}: {v.status} {v.seconds:.1f} s  "
            f"(elapsed {time.monotonic() - started:.0f} s; "
            + ", ".join(f"{k} {c}" for k, c in sorted(done.items()))
            + ")"
        )

    verdicts = evaluate_run(
        run_id,
        [(by_id[s.instance_id], s) for s in subs],
        ctx,
        store,
        workers=args.workers,
        force=True,
        on_verdict=progress,
    )
    return {v.instance_id: v for v in verdicts}


def verdict_row(v: Verdict | None) -> dict[str, Any]:
    if v is None:
        return {"status": None}
    f2p = [t for t in v.tests if t.expected == "FAIL_TO_PASS"]
    p2p = [t for t in v.tests if t.expected == "PASS_TO_PASS"]
    junit = Path(v.log_dir or "") / "junit.xml"
    return {
        "status": v.status,
        "f2p_passed": sum(t.status == "passed" for t in f2p),
        "f2p": len(f2p),
        "p2p_passed": sum(t.status == "passed" for t in p2p),
        "p2p": len(p2p),
        "seconds": round(v.seconds or 0.0, 2),
        "pytest_seconds": junit_seconds(junit),
        "reason": v.reason if v.status != "resolved" else None,
        "log_dir": v.log_dir,
        "network": v.status == "unresolved" and needs_network(v),
        # The status under the run's policy and each narrower one; the tests it excused.
        "policies": {
            p: status_under(v, p) for p in POLICIES[: POLICIES.index(v.base_failures) + 1]
        },
        "excused": [
            {"test_id": e.test_id, "base_status": e.base_status, "network": e.network}
            for e in v.excused_tests
        ],
    }


def needs_network(v: Verdict) -> bool:
    """Every expected test that did not pass failed reaching the network (its message or its
    section of the output says so): the miss is the sandbox's lack of one, not the patch's."""
    missed = [t for t in v.tests if t.status != "passed"]
    if not missed:
        return False
    try:
        output = (Path(v.log_dir or "") / "test_output.txt").read_text(errors="replace")
    except OSError:
        output = ""
    sections = pytest_sections(output)
    for t in missed:
        if not network_evidence(
            (t.message or "") + "\n" + sections.get(section_name(t.test_id), "")
        ):
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    tasks, errors = load_tasks(args.dataset)
    for err in errors:
        console.print(f"[yellow]bad record[/] {err.where}: {err.message}")
    if args.ids:
        unknown = set(args.ids) - {t.instance_id for t in tasks}
        if unknown:
            sys.exit(f"no task named {', '.join(sorted(unknown))} in {args.dataset}")
        tasks = [t for t in tasks if t.instance_id in set(args.ids)]
    repos_dir = args.repos_dir.expanduser().resolve()
    unavailable = [t for t in tasks if find_mirror(t.repo, repos_dir) is None]
    tasks = [t for t in tasks if find_mirror(t.repo, repos_dir) is not None]
    for t in unavailable:
        console.print(f"[yellow]no clone of {t.repo} in {repos_dir}[/]: {t.instance_id} skipped")

    cache_dir = args.cache_dir.expanduser().resolve()
    if args.cold:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        cache_dir = cache_dir / f"cold-{stamp}"
        console.print(f"cold run: fresh environment cache {cache_dir} (uv's cache is kept)")
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    wall0 = time.monotonic()

    built = build_pass(tasks, context(args, cache_dir), args.workers, "build")
    build_wall = time.monotonic() - wall0
    t0 = time.monotonic()
    reused = build_pass(tasks, context(args, cache_dir), 1, "reuse")
    reuse_wall = time.monotonic() - t0

    ctx = context(args, cache_dir)
    store = Store.open(ctx.runs_dir / "runs.sqlite")
    t0 = time.monotonic()
    gold = eval_pass(f"{args.run_prefix}-gold", "gold", tasks, ctx, store, args)
    gold_wall = time.monotonic() - t0
    t0 = time.monotonic()
    empty = eval_pass(f"{args.run_prefix}-empty", "empty", tasks, ctx, store, args)
    empty_wall = time.monotonic() - t0

    rows = []
    users = Counter(b.get("env_key") for b in built.values() if b.get("env_key"))
    for task in tasks:
        b, r = built[task.instance_id], reused[task.instance_id]
        rows.append(
            {
                "instance_id": task.instance_id,
                "repo": task.repo,
                "env_key": b.get("env_key"),
                "env_shared_by": users.get(b.get("env_key"), 0),
                "interpreter": b.get("interpreter"),
                "cutoff": b.get("cutoff"),
                "build_seconds": b["seconds"],
                "spec_build_seconds": b.get("spec_build_seconds"),
                "reuse_seconds": r["seconds"],
                "workspace_seconds": r["workspace_seconds"],
                "build_error": b["error"],
                "gold": verdict_row(gold.get(task.instance_id)),
                "empty": verdict_row(empty.get(task.instance_id)),
                "why": b.get("why", []),
            }
        )
    envs: dict[str, dict[str, Any]] = {}
    for b in built.values():
        if b.get("env_key") and b["env_key"] not in envs:
            size, own = dir_sizes(Path(b["env_dir"]))
            envs[b["env_key"]] = {
                "interpreter": b["interpreter"],
                "cutoff": b["cutoff"],
                "size_bytes": size,
                "own_bytes": own,
                "tasks": users[b["env_key"]],
            }
    env_dirs = sorted({Path(b["env_dir"]) for b in built.values() if b.get("env_dir")})
    all_bytes, all_own = dir_sizes(*env_dirs)  # each inode once over all
    sizes = [e["size_bytes"] for e in envs.values()]
    owns = [e["own_bytes"] for e in envs.values()]
    ok_builds = [r["build_seconds"] for r in rows if not r["build_error"]]
    reuses = [r["reuse_seconds"] for r in rows if not r["build_error"]]
    wss = [r["workspace_seconds"] for r in rows if not r["build_error"]]
    # Worker-seconds per task: what one worker spends on one gold attempt, with the environment
    # built on first use (cold) or found in the cache (warm); a Docker harness's figures are
    # image build + container run per task, to compare with these.
    done = [r for r in rows if r["gold"]["status"] is not None]
    evals = [r["gold"]["seconds"] for r in done]
    cold_ws = [r["build_seconds"] + r["workspace_seconds"] + r["gold"]["seconds"] for r in done]
    warm_ws = [r["reuse_seconds"] + r["workspace_seconds"] + r["gold"]["seconds"] for r in done]
    totals = {
        "tasks": len(tasks) + len(unavailable),
        "evaluated": len(tasks),
        "unavailable": [t.instance_id for t in unavailable],
        "gold_resolved": sum(r["gold"]["status"] == "resolved" for r in rows),
        "base_failures": args.base_failures,
        "gold_resolved_by_policy": {
            p: sum(r["gold"].get("policies", {}).get(p) == "resolved" for r in rows)
            for p in POLICIES[: POLICIES.index(args.base_failures) + 1]
        },
        "empty_resolved_by_policy": {
            p: sum(r["empty"].get("policies", {}).get(p) == "resolved" for r in rows)
            for p in POLICIES[: POLICIES.index(args.base_failures) + 1]
        },
        "empty_resolved": sum(r["empty"]["status"] == "resolved" for r in rows),
        "gold_statuses": dict(Counter(r["gold"]["status"] for r in rows)),
        "empty_statuses": dict(Counter(r["empty"]["status"] for r in rows)),
        "environments": len(envs),
        "tasks_sharing_an_env": sum(n for n in users.values() if n > 1),
        "cold": args.cold,
        "share": not args.no_share,
        "build_wall_seconds": round(build_wall, 1),
        "build_seconds_max": max(ok_builds, default=None),
        "build_seconds_median": round(statistics.median(ok_builds), 2) if ok_builds else None,
        "reuse_wall_seconds": round(reuse_wall, 1),
        "reuse_seconds_max": max(reuses, default=None),
        "reuse_seconds_median": round(statistics.median(reuses), 2) if reuses else None,
        "workspace_seconds_median": round(statistics.median(wss), 2) if wss else None,
        "workspace_seconds_max": max(wss, default=None),
        "gold_wall_seconds": round(gold_wall, 1),
        "empty_wall_seconds": round(empty_wall, 1),
        "total_wall_seconds": round(time.monotonic() - wall0, 1),
        "worker_seconds_per_task_cold": round(statistics.mean(cold_ws), 1) if cold_ws else None,
        "worker_seconds_per_task_warm": round(statistics.mean(warm_ws), 1) if warm_ws else None,
        "eval_seconds_per_task": round(statistics.mean(evals), 1) if evals else None,
        "environments_per_task": round(len(envs) / len(tasks), 3) if tasks else None,
        "env_bytes_mean": round(statistics.mean(sizes)) if sizes else None,
        "env_own_bytes_mean": round(statistics.mean(owns)) if owns else None,
        "env_bytes_median": statistics.median(sizes) if sizes else None,
        "env_own_bytes_median": statistics.median(owns) if owns else None,
        "envs_bytes_together": all_bytes,
        "envs_own_bytes_together": all_own,
        "swe_bench_env_image_bytes": SWE_BENCH_ENV_IMAGE,
    }
    totals["by_repo"] = by_repo(rows)
    show(rows, totals, args)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "dataset": str(args.dataset),
        "at": datetime.now(timezone.utc).isoformat(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "options": {
            "workers": args.workers,
            "sandbox": args.sandbox,
            "cold": args.cold,
            "share": not args.no_share,
            "cache_dir": str(cache_dir),
            "runs_dir": str(args.runs_dir.resolve()),
        },
        "totals": totals,
        "envs": envs,
        "tasks": rows,
    }
    args.json.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    console.print(f"written {args.json}")
    if args.cold:
        console.print(f"the cold cache {cache_dir} is kept; remove it with rm -r when done")
    return 0 if totals["gold_resolved"] == len(tasks) and totals["empty_resolved"] == 0 else 1


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


if __name__ == "__main__":
    sys.exit(main())
