"""How much time the harness adds to running a task's tests, on the bundled demo tasks.

For each demo task: the harness's whole evaluation of the gold patch (fresh workspace, cached
environment, patch, sandboxed tests, grading) beside the time pytest takes to run the same test
files directly, unsandboxed, in the same environment and an already prepared checkout. Also
workspace creation, and cold vs warm environment time. Medians of --repeat runs, all measured in
this one run (the machines are shared and noisy: compare ratios, not absolute numbers).

    python bench/eval_overhead.py [--repeat 3] [--sandbox bwrap|unsafe] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swebounty.demo import build_demo
from swebounty.envs import EnvManager
from swebounty.evalcontext import EvalContext
from swebounty.patches import apply_patch
from swebounty.repos import commit_date, make_workspace
from swebounty.runs import evaluate_one
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Submission, Task
from swebounty.testing import pytest_command, test_files

console = Console()


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_of(repeat: int, fn: Callable[[], object]) -> float:
    return statistics.median(timed(fn) for _ in range(repeat))


def direct_pytest(task: Task, ctx: EvalContext, mirror: Path, work: Path, repeat: int) -> float:
    """pytest on the task's test files in a prepared checkout, no harness, no sandbox."""
    ws = make_workspace(mirror, task.base_commit, work / f"direct-{task.instance_id}")
    apply_patch(ws, task.patch)
    apply_patch(ws, task.test_patch)
    spec = ctx.envs.spec_for(task, ws, commit_date(mirror, task.base_commit))
    env = ctx.envs.ensure(spec, ws)
    tenv = ctx.envs.for_task(env, ws, work / f"layer-{task.instance_id}")
    if tenv.setup_argv:
        subprocess.run(tenv.setup_argv, cwd=ws, env=tenv.env, check=True, capture_output=True)
    junit = work / f"{task.instance_id}.xml"
    argv = pytest_command(tenv.test_prefix, test_files(task.test_patch), junit)
    return median_of(
        repeat, lambda: subprocess.run(argv, cwd=ws, env=tenv.env, capture_output=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sandbox", default="bwrap" if bwrap_available()[0] else "unsafe")
    parser.add_argument("--json", type=Path, default=Path("bench/results/eval_overhead.json"))
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="swebounty-bench-"))
    try:
        mirror, tasks = build_demo(work / "demo")
        ctx = EvalContext.create(
            cache_dir=work / "cache",
            runs_dir=work / "runs",
            repos_dir=mirror.parent,
            sandbox=args.sandbox,
        )

        # Environment: the first build is cold (uv's own download cache may be warm), the
        # second is a cache hit. A fresh EnvManager on the same dir shows reuse across runs.
        ws = make_workspace(mirror, tasks[0].base_commit, work / "env-ws")
        spec = ctx.envs.spec_for(tasks[0], ws, commit_date(mirror, tasks[0].base_commit))
        cold = timed(lambda: ctx.envs.ensure(spec, ws))
        warm = median_of(args.repeat, lambda: EnvManager(ctx.cache_dir / "envs").ensure(spec, ws))

        counter = iter(range(10_000))
        ws_time = median_of(
            max(5, args.repeat),
            lambda: make_workspace(mirror, tasks[0].base_commit, work / f"ws-{next(counter)}"),
        )

        rows = []
        for task in tasks:
            sub = Submission(instance_id=task.instance_id, model_patch=task.patch)
            runs = iter(range(10_000))
            harness = median_of(
                args.repeat,
                lambda t=task, s=sub, r=runs: evaluate_one(
                    t, s, ctx, work / "logs" / f"{t.instance_id}-{next(r)}"
                ),
            )
            direct = direct_pytest(task, ctx, mirror, work, args.repeat)
            rows.append(
                {
                    "task": task.instance_id,
                    "harness_s": harness,
                    "direct_pytest_s": direct,
                    "overhead_s": harness - direct,
                    "ratio": harness / direct,
                }
            )
        result = {
            "sandbox": ctx.sandbox.name,
            "repeat": args.repeat,
            "workspace_s": ws_time,
            "env_cold_s": cold,
            "env_warm_s": warm,
            "tasks": rows,
            "median_overhead_s": statistics.median(r["overhead_s"] for r in rows),
            "targets": {"warm_overhead_s": 0.5, "env_warm_s": 1.0},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)

    table = Table(title=f"harness overhead on the demo tasks (sandbox: {result['sandbox']})")
    for col in ("task", "harness s", "pytest direct s", "overhead s", "ratio"):
        table.add_column(col, justify="right" if col != "task" else "left")
    for r in rows:
        table.add_row(
            str(r["task"]),
            f"{r['harness_s']:.3f}",
            f"{r['direct_pytest_s']:.3f}",
            f"{r['overhead_s']:.3f}",
            f"{r['ratio']:.2f}",
        )
    console.print(table)
    console.print(
        f"workspace creation {ws_time * 1000:.0f} ms · environment cold {cold:.2f} s, "
        f"warm {warm * 1000:.0f} ms · median overhead {result['median_overhead_s']:.3f} s "
        f"(targets: overhead < 0.5 s, warm env < 1 s) · median of {args.repeat}"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    console.print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
