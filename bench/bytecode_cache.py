"""What the bytecode cache saves a test run, in CPU seconds (which the machine's load does not
inflate, unlike wall time), on real tasks with warm environments.

    python bench/bytecode_cache.py --dataset ../shared/data/swebench_7repos.jsonl \\
        --repos-dir ~/clones [--cache-dir DIR] [-i TASK ...] [--repeat 3] [--json PATH]

For each task, --repeat times and alternately: a fresh checkout with the gold and test
patches, as a new evaluation has it, with or without the cache's .pyc files copied in
(bytecode.seed); then the task's test files run directly with pytest in the task's
environment, writing no bytecode of their own (PYTHONDONTWRITEBYTECODE), so each run compiles
what a fresh evaluation would compile. Reported: the copy's CPU and wall time, pytest's CPU
time (its process tree), and the net saving per evaluation. The cache is filled first, as
the harness fills it (bytecode.compile_missing in the sandbox).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import (  # the same tasks and options (bench/ is on sys.path)
    DEFAULT_TASKS,
    task_args,
)
from rich.console import Console
from rich.table import Table

from swebounty import bytecode, safefs
from swebounty.evalcontext import EvalContext
from swebounty.patches import apply_patch
from swebounty.repos import commit_date, ensure_mirror, make_workspace
from swebounty.tasks import Task, load_tasks
from swebounty.testing import pytest_command, test_files
from swebounty.workdirs import work_root

console = Console(stderr=True)


def cpu() -> float:
    """CPU seconds of this process and of every child process it waited for."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def one_run(task: Task, ctx: EvalContext, root: Path, seeded: bool) -> dict[str, float]:
    mirror = ensure_mirror(task.repo, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir)
    scratch = Path(tempfile.mkdtemp(dir=root))
    try:
        ws = make_workspace(mirror, task.base_commit, scratch / "workspace")
        env = ctx.envs.ensure(
            ctx.envs.spec_for(task, ws, commit_date(mirror, task.base_commit)), ws
        )
        pyc = bytecode.plan(ctx.cache_dir, ws, env.interpreter, env.interpreter_executable)
        if pyc is not None and pyc.missing():
            with ctx.lease() as sandbox:
                bytecode.compile_missing(
                    pyc, ws, env.interpreter_executable, [env.interpreter_prefix], sandbox,
                    ctx.policy, scratch / "compile",
                )  # fmt: skip
        apply_patch(ws, task.patch)
        apply_patch(ws, task.test_patch)
        c0, w0 = cpu(), time.perf_counter()
        copied = bytecode.seed(pyc, ws, set()) if seeded and pyc else 0
        c1, w1 = cpu(), time.perf_counter()
        tenv = ctx.envs.for_task(env, ws, scratch / "layer")
        variables = {**tenv.env, "PYTHONDONTWRITEBYTECODE": "1"}
        if tenv.setup_argv:
            subprocess.run(tenv.setup_argv, cwd=ws, env=variables, capture_output=True)
        files = test_files(task.test_patch, expected=task.FAIL_TO_PASS + task.PASS_TO_PASS)
        argv = pytest_command(tenv.test_prefix, files, scratch / "junit.xml")
        c2 = cpu()
        subprocess.run(argv, cwd=ws, env=variables, capture_output=True, check=False)
        c3 = cpu()
        return {
            "copied": copied,
            "copy_cpu_s": c1 - c0,
            "copy_wall_s": w1 - w0,
            "pytest_cpu_s": c3 - c2,
        }
    finally:
        safefs.remove_tree(scratch)


def main() -> None:
    p = task_args(__doc__)
    p.add_argument(
        "--json", type=Path, default=Path(__file__).parent / "results/bytecode_cache.json"
    )
    args = p.parse_args()
    ids = args.ids or DEFAULT_TASKS
    by_id = {t.instance_id: t for t in load_tasks(args.dataset)[0]}
    if missing := [i for i in ids if i not in by_id]:
        sys.exit(f"not in {args.dataset}: {', '.join(missing)}")
    root = work_root(args.cache_dir.expanduser().resolve())
    root.mkdir(mode=0o711, parents=True, exist_ok=True)
    ctx = EvalContext.create(
        cache_dir=args.cache_dir, runs_dir=Path(tempfile.mkdtemp()), repos_dir=args.repos_dir
    )
    results: dict[str, Any] = {}
    for n, i in enumerate(ids, 1):
        console.print(f"[{n}/{len(ids)}] {i}")
        one_run(by_id[i], ctx, root, seeded=True)  # fills the cache, warms the page cache
        runs: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
        for _ in range(args.repeat):
            runs["without"].append(one_run(by_id[i], ctx, root, seeded=False))
            runs["with"].append(one_run(by_id[i], ctx, root, seeded=True))
        med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
        saved = med["without"]["pytest_cpu_s"] - med["with"]["pytest_cpu_s"]
        results[i] = {**med, "net_saving_cpu_s": saved - med["with"]["copy_cpu_s"]}
    table = Table(title=f"the bytecode cache on fresh checkouts (median of {args.repeat})")
    for c in ["task", "pycs copied", "copy CPU s", "copy wall s", "pytest CPU s without",
              "pytest CPU s with", "net CPU s saved"]:  # fmt: skip
        table.add_column(c, justify="left" if c == "task" else "right")
    for i, r in results.items():
        w, wo = r["with"], r["without"]
        table.add_row(i, f"{w['copied']:.0f}", f"{w['copy_cpu_s']:.3f}", f"{w['copy_wall_s']:.3f}",
                      f"{wo['pytest_cpu_s']:.2f}", f"{w['pytest_cpu_s']:.2f}",
                      f"{r['net_saving_cpu_s']:+.2f}")  # fmt: skip
    Console(width=160).print(table)
    total = statistics.median(r["net_saving_cpu_s"] for r in results.values())
    print(f"median net saving {total:.2f} CPU s per evaluation; load {os.getloadavg()[0]:.1f}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"tasks": results, "median_net_saving_cpu_s": total}, indent=2))
    print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
