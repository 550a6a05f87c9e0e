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
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from real_tasks_report import by_repo, show
from real_tasks_verdicts import verdict_row
from rich.console import Console

from swebounty.baseline import DEFAULT_POLICY, POLICIES
from swebounty.envs import EnvBuildError, Environment
from swebounty.envs.cache import dir_sizes, read_json
from swebounty.evalcontext import EvalContext
from swebounty.repos import RepoError, commit_date, ensure_mirror, find_mirror, make_workspace
from swebounty.runs import evaluate_run
from swebounty.store import Store
from swebounty.tasks import Task, empty_submissions, gold_submissions, load_tasks
from swebounty.verdicts import Verdict

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


if __name__ == "__main__":
    sys.exit(main())
