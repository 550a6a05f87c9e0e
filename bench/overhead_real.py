"""Where the harness's time goes on real tasks, beside bare pytest on the same files.

    python bench/overhead_real.py --dataset ../shared/data/swebench_7repos.jsonl \\
        --repos-dir ~/clones [--cache-dir DIR] [-i TASK ...] [--repeat 3] [--json PATH]

Environments are built (or found) first and every task is evaluated once to warm up, so what
is timed is the warm path. Then, all in this one run (the machines are shared: compare ratios):
1. bare pytest: the task's test files run directly with pytest (the argv the harness uses),
   unsandboxed, in the same environment and per-task layer, in a checkout with the gold and
   test patches applied, just before the harness evaluates the task in each default pass
   (left out of the task's time), so each evaluation is compared with a bare run seconds
   away (a first run that also compiles the checkout's bytecode is reported apart as "cold");
2. the harness: `evaluate_run` over all tasks in one call, one worker, gold submissions, as
   `swebounty eval --gold` runs it; --repeat times, then --repeat times more with the bytecode
   cache off (bytecode.py; the warm-up filled it), to show what it saves, and --repeat times
   with every workspace on the cache's disk instead of in memory (workdirs.py; only when the
   harness puts them in memory here), interleaved so the machine's load weighs on all alike.
   A task's time is the gap between its verdict being committed and the previous one's (the
   first from the call's start), so the store commit and the pool are in it. Each stage of the
   harness is timed by wrapping the function that does it (exclusive time: a stage inside
   another is not counted twice), in the default passes and in the disk passes apart;
3. `swebounty eval` itself (a subprocess: start-up, dataset, progress bar) over the same tasks;
4. micro-measurements per task: the sandbox starting `true`, `python -c pass` inside vs
   outside, pytest's collection inside vs outside, and its run (unguarded) inside vs outside,
   interleaved;
5. throughput: tasks per minute at --workers (default 1, 2) on the real tasks and at
   --demo-workers (default 1, 2, 4) on the bundled demo (its 4 tasks x --demo-attempts).
Each task's overhead is the median over the passes of (its time in the pass - its bare run
just before); the table shows its spread (min..max over the passes) and the summary the
median over tasks pass by pass, so one noisy sample does not decide the figure.
Prints the tables and writes everything to --json (bench/results/overhead_real.json).
Its parts: the measurements in overhead_passes.py, the stage timer in stages.py, what the
benches over real tasks share in benchkit.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from benchkit import DEFAULT_TASKS, median, table, task_args
from overhead_passes import (
    Checkout,
    cli_eval,
    demo_throughput,
    harness_pass,
    sandbox_costs,
)
from rich.console import Console
from stages import Stages

from swebounty import bytecode, safefs
from swebounty.evalcontext import EvalContext
from swebounty.runs import build_task_env
from swebounty.store import Store
from swebounty.tasks import load_tasks
from swebounty.workdirs import work_root

console = Console(stderr=True)
out = Console(width=160)


def parse_args() -> argparse.Namespace:
    p = task_args(__doc__)
    p.add_argument("--workers", default="1,2", help="real-task throughput at these workers")
    p.add_argument("--demo-workers", default="1,2,4", help="demo throughput at these workers")
    p.add_argument("--demo-attempts", type=int, default=6, help="gold attempts per demo task")
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument(
        "--micro-repeat", type=int, default=3, help="runs of each sandbox cost and of the CLI"
    )
    p.add_argument(
        "--skip-variants",
        action="store_true",
        help="leave out the passes without the bytecode cache and with workspaces on disk",
    )
    p.add_argument(
        "--json", type=Path, default=Path(__file__).parent / "results/overhead_real.json"
    )
    return p.parse_args()


COLUMNS = ["task", "verdict", "bare s", "bare min-max", "bare cold s", "harness s"]
COLUMNS += ["overhead s", "overhead min-max", "ratio"]
COLUMNS += ["overhead s, no bytecode cache", "overhead s, workspaces on disk"]


def main() -> None:
    args = parse_args()
    ids = args.ids or DEFAULT_TASKS
    by_id = {t.instance_id: t for t in load_tasks(args.dataset)[0]}
    missing = [i for i in ids if i not in by_id]
    if missing:
        sys.exit(f"not in {args.dataset}: {', '.join(missing)}")
    tasks = [by_id[i] for i in ids]
    # Where the harness puts its workspaces, so bare pytest reads the same kind of filesystem.
    root = work_root(args.cache_dir.expanduser().resolve())
    root.mkdir(mode=0o711, parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="swebounty-overhead-", dir=root))
    load = os.getloadavg()
    ctx = EvalContext.create(
        cache_dir=args.cache_dir, runs_dir=work / "runs", repos_dir=args.repos_dir, workers=2
    )
    store = Store(work / "runs" / "runs.sqlite")
    try:
        console.print(f"warming up {len(tasks)} tasks (environments, one evaluation each)")
        for t in tasks:
            build_task_env(t, ctx)
        harness_pass(tasks, ctx, store, 1, None)

        checkouts, costs = {}, {}
        for n, t in enumerate(tasks, 1):
            console.print(f"[{n}/{len(tasks)}] bare pytest and the sandbox: {t.instance_id}")
            checkouts[t.instance_id] = Checkout(t, ctx, work / "bare")
            costs[t.instance_id] = sandbox_costs(checkouts[t.instance_id], ctx, args.micro_repeat)

        console.print(f"the harness: evaluate_run over all tasks, {args.repeat} times")
        stages = Stages()
        # Each pass with the bytecode cache is followed by one without it, and one with the
        # workspaces on disk, so a change in the machine's load weighs on all alike.
        memory_dir = ctx.memory_dir
        console.print(f"workspaces in memory: {memory_dir or 'no (on the cache disk)'}")
        passes, uncached, on_disk = [], [], []
        for _ in range(args.repeat):
            # Bare pytest on each task just before the harness evaluates it: the load of a
            # shared machine changes by the second.
            passes.append(harness_pass(tasks, ctx, store, 1, stages, checkouts=checkouts))
            if args.skip_variants:
                continue
            bytecode.ENABLED = False
            try:
                uncached.append(harness_pass(tasks, ctx, store, 1, None))
            finally:
                bytecode.ENABLED = True
            if memory_dir is not None:
                ctx.memory_dir = None
                try:
                    on_disk.append(harness_pass(tasks, ctx, store, 1, stages, "disk"))
                finally:
                    ctx.memory_dir = memory_dir
        bare = {
            i: {
                **costs[i],
                "median_s": median([p[3][i] for p in passes]),
                "runs_s": [p[3][i] for p in passes],
            }
            for i in ids
        }
        statuses = {v.instance_id: v.status for v in passes[-1][2]}
        harness = {i: median([p[1][i] for p in passes]) for i in ids}
        nan = {i: float("nan") for i in ids}
        no_cache = {i: median([p[1][i] for p in uncached]) for i in ids} if uncached else nan
        disk = {i: median([p[1][i] for p in on_disk]) for i in ids} if on_disk else nan
        if memory_dir is None:  # the default passes were on disk already
            disk = dict(harness)
        cli = median([cli_eval(args, ids, work / "cli-runs") for _ in range(args.micro_repeat)])

        rates: dict[str, dict[int, float]] = {"real": {}, "demo": {}}
        if not args.skip_throughput:
            console.print("throughput")
            for w in [int(x) for x in args.workers.split(",")]:
                wall = harness_pass(tasks, ctx, store, w, None)[0]
                rates["real"][w] = len(tasks) / wall * 60
            demo_w = [int(x) for x in args.demo_workers.split(",")]
            rates["demo"] = demo_throughput(demo_w, args.demo_attempts, work)
    finally:
        safefs.remove_tree(work)
    load_after = os.getloadavg()

    rows, overheads, overheads_no_cache, overheads_disk = [], [], [], []
    # The spread: each task's overhead in every pass (against bare pytest's median), and the
    # median over the tasks pass by pass, so one noisy sample cannot decide the figure.
    per_pass = {i: [p[1][i] - p[3][i] for p in passes] for i in ids}
    pass_medians = [median([per_pass[i][k] for i in ids]) for k in range(len(passes))]
    for i in ids:
        b, h = bare[i], harness[i]
        overheads.append(median(per_pass[i]))
        overheads_no_cache.append(no_cache[i] - b["median_s"])
        overheads_disk.append(disk[i] - b["median_s"])
        rows.append(
            [
                i,
                statuses.get(i, "?"),
                f"{b['median_s']:.2f}",
                f"{min(b['runs_s']):.2f}-{max(b['runs_s']):.2f}",
                f"{b['cold_s']:.2f}",
                f"{h:.2f}",
                f"{median(per_pass[i]):+.2f}",
                f"{min(per_pass[i]):+.2f}..{max(per_pass[i]):+.2f}",
                f"{h / b['median_s']:.2f}",
                f"{no_cache[i] - b['median_s']:+.2f}",
                f"{disk[i] - b['median_s']:+.2f}",
            ]
        )
    bare_total = sum(bare[i]["median_s"] for i in ids)
    harness_total = sum(harness[i] for i in ids)
    out.print(
        table(
            f"harness vs bare pytest (median of {args.repeat}; one evaluate_run, 1 worker)",
            COLUMNS,
            rows,
        )
    )
    per_task_stages = stages.per_task(ids)
    per_task_disk = stages.per_task(ids, "disk") if on_disk else {}
    for timings, totals in ((per_task_stages, harness), (per_task_disk, disk)):
        for i, timed in timings.items():
            timed["other (pool, between stages)"] = totals[i] - sum(timed.values())
            # The tests' own time is the floor, not overhead: what the sandboxed run takes
            # beyond bare pytest (sandbox start, the guard, a per-task install, bytecode of a
            # fresh checkout) is.
            tests = timed.pop("sandbox run", 0.0)
            timed["sandbox run beyond bare pytest"] = tests - bare[i]["median_s"]
    names = list(dict.fromkeys(s for t in per_task_stages.values() for s in t))

    def stage_stats(timings: dict[str, dict[str, float]], s: str) -> tuple[float, float]:
        if not timings:
            return float("nan"), float("nan")
        values = [timings[i].get(s, 0.0) for i in ids]
        return median(values), max(values)

    per_stage = {s: stage_stats(per_task_stages, s) for s in names}
    per_stage_disk = {s: stage_stats(per_task_disk, s) for s in names}
    out.print(
        table(
            "the harness's time per stage (median over tasks of each task's median)",
            ["stage", "median s", "max s", "median s, workspaces on disk", "max s, on disk"],
            [
                [
                    s,
                    f"{m:.3f}",
                    f"{mx:.3f}",
                    f"{per_stage_disk[s][0]:.3f}",
                    f"{per_stage_disk[s][1]:.3f}",
                ]
                for s, (m, mx) in per_stage.items()
            ],
        )
    )
    micro = [
        ("sandbox start (`true`)", "sandbox_true_s", None),
        ("python -c pass: inside / outside", "sandbox_python_start_s", "python_start_s"),
        ("pytest --collect-only: inside / outside", "sandbox_collect_s", "collect_s"),
        (
            "pytest run, warm checkout: inside (unguarded) / outside, interleaved",
            "sandbox_pytest_s",
            "outside_pytest_s",
        ),
        ("pytest run, fresh checkout: outside", "cold_s", None),
    ]
    out.print(
        table(
            "the sandbox's own costs (median over tasks)",
            ["what", "inside s", "outside s"],
            [
                [
                    name,
                    f"{median([bare[i][a] for i in ids]):.3f}",
                    f"{median([bare[i][b] for i in ids]):.3f}" if b else "",
                ]
                for name, a, b in micro
            ],
        )
    )
    summary = {
        "median_overhead_s": median(overheads),
        "mean_overhead_s": statistics.mean(overheads),
        "median_overhead_per_pass_s": pass_medians,
        "ratio_per_pass": [sum(p[1].values()) / bare_total for p in passes],
        "ratio_total": harness_total / bare_total,
        "median_overhead_no_bytecode_cache_s": median(overheads_no_cache),
        "ratio_total_no_bytecode_cache": sum(no_cache.values()) / bare_total,
        "workspaces_in_memory": memory_dir is not None,
        "median_overhead_workspaces_on_disk_s": median(overheads_disk),
        "ratio_total_workspaces_on_disk": sum(disk.values()) / bare_total,
        "cli_eval_s": cli,
        "cli_overhead_per_task_s": (cli - bare_total) / len(ids),
        "target_overhead_s": 0.3,
    }
    out.print(
        f"median overhead {summary['median_overhead_s']:.3f} s per task (target <= 0.3 s), "
        f"mean {summary['mean_overhead_s']:.3f} s; harness/bare {summary['ratio_total']:.2f}x; "
        f"pass by pass {', '.join(f'{x:.3f}' for x in pass_medians)} s; "
        f"without the bytecode cache {summary['median_overhead_no_bytecode_cache_s']:.3f} s, "
        f"{summary['ratio_total_no_bytecode_cache']:.2f}x; with workspaces on disk "
        f"{summary['median_overhead_workspaces_on_disk_s']:.3f} s, "
        f"{summary['ratio_total_workspaces_on_disk']:.2f}x; "
        f"`swebounty eval` {cli:.1f} s vs bare {bare_total:.1f} s: "
        f"{summary['cli_overhead_per_task_s']:+.2f} s per task"
    )
    if rates["real"] or rates["demo"]:
        out.print(
            "tasks/minute: real "
            + ", ".join(f"{w} worker(s) {r:.1f}" for w, r in rates["real"].items())
            + "; demo "
            + ", ".join(f"{w} worker(s) {r:.1f}" for w, r in rates["demo"].items())
        )
    out.print(
        f"load average before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
        f"after {load_after[0]:.2f}; {os.cpu_count()} cpus"
    )
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_before": load,
            "loadavg_after": load_after,
        },
        "repeat": args.repeat,
        "tasks": {
            i: {
                "verdict": statuses.get(i),
                "harness_s": harness[i],
                "harness_per_pass_s": [p[1][i] for p in passes],
                "overhead_per_pass_s": per_pass[i],
                "harness_no_bytecode_cache_s": no_cache[i],
                "harness_workspaces_on_disk_s": disk[i],
                **bare[i],
            }
            for i in ids
        },
        "stages_s": {s: {"median": m, "max": mx} for s, (m, mx) in per_stage.items()},
        "stages_workspaces_on_disk_s": {
            s: {"median": m, "max": mx} for s, (m, mx) in per_stage_disk.items()
        },
        "stages_per_task_s": per_task_stages,
        "stages_per_task_workspaces_on_disk_s": per_task_disk,
        "stages_not_found": stages.missing,
        "summary": summary,
        "tasks_per_minute": rates,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    out.print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
