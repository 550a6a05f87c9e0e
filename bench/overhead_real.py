"""Where the harness's time goes on real tasks, beside bare pytest on the same files.

    python bench/overhead_real.py --dataset ../shared/data/swebench_7repos.jsonl \\
        --repos-dir ~/clones [--cache-dir DIR] [-i TASK ...] [--repeat 3] [--json PATH]

Environments are built (or found) first and every task is evaluated once to warm up, so what
is timed is the warm path. Then, all in this one run (the machines are shared: compare ratios):
1. bare pytest: the task's test files run directly with pytest (the argv the harness uses),
   unsandboxed, in the same environment and per-task layer, in a checkout with the gold and
   test patches applied; median of --repeat runs (the first run also compiles the checkout's
   bytecode: reported apart as "cold");
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
   outside, and pytest's collection inside vs outside;
5. throughput: tasks per minute at --workers (default 1, 2) on the real tasks and at
   --demo-workers (default 1, 2, 4) on the bundled demo (its 4 tasks x --demo-attempts).
Prints the tables and writes everything to --json (bench/results/overhead_real.json).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swebounty import bytecode, safefs
from swebounty.demo import build_demo
from swebounty.diffs import files_in_patch
from swebounty.evalcontext import EvalContext
from swebounty.integrity import revert_test_infra
from swebounty.patches import apply_patch, reset_files
from swebounty.repos import commit_date, ensure_mirror, make_workspace
from swebounty.runs import build_task_env, evaluate_run
from swebounty.sandbox.base import Mount
from swebounty.store import Store
from swebounty.tasks import Submission, Task, gold_submissions, load_tasks
from swebounty.testing import pytest_command, test_files
from swebounty.workdirs import work_root

# The mix: flask, pylint x2, sympy x2, seaborn, sphinx (environments that build today).
DEFAULT_TASKS = [
    "pallets__flask-4992",
    "pylint-dev__pylint-7228",
    "pylint-dev__pylint-7993",
    "sympy__sympy-23191",
    "sympy__sympy-24152",
    "mwaskom__seaborn-3010",
    "sphinx-doc__sphinx-10466",
]
console = Console(stderr=True)
out = Console(width=160)


# Stage -> the functions that do it, as (module, attribute path). A function that is not there
# (renamed, moved) is reported and left out; its time then shows under "other".
STAGES: list[tuple[str, str, str]] = [
    ("mirror and commit date", "swebounty.repos", "ensure_mirror"),
    ("mirror and commit date", "swebounty.repos", "commit_date"),
    ("workspace", "swebounty.repos", "make_workspace"),
    ("environment: spec", "swebounty.envs.manager", "EnvManager.spec_for"),
    ("environment: lookup", "swebounty.envs.manager", "EnvManager.ensure"),
    ("patch, reset, test patch", "swebounty.patches", "apply_patch"),
    ("patch, reset, test patch", "swebounty.patches", "reset_files"),
    ("integrity: binaries, test infrastructure", "swebounty.integrity", "strip_compiled"),
    ("integrity: binaries, test infrastructure", "swebounty.integrity", "revert_test_infra"),
    ("integrity: binaries, test infrastructure", "swebounty.integrity", "infra_manifest"),
    ("bytecode cache: plan, compile misses", "swebounty.bytecode", "plan"),
    ("bytecode cache: plan, compile misses", "swebounty.bytecode", "compile_missing"),
    ("bytecode cache: copy into the workspace", "swebounty.bytecode", "seed"),
    ("per-task layer", "swebounty.envs.manager", "EnvManager.for_task"),
    ("font cache", "swebounty.fontcache", "seeds"),
    ("sandbox: workdir to its uid", "swebounty.sandbox.bwrap", "BwrapSandbox.prepare_workdir"),
    ("sandbox run", "swebounty.sandbox.bwrap", "BwrapSandbox.run"),
    ("results: channel, JUnit, cross-check", "swebounty.pytest_guard", "read_channel"),
    ("results: channel, JUnit, cross-check", "swebounty.testing", "parse_junit_bytes"),
    ("results: channel, JUnit, cross-check", "swebounty.pytest_guard", "disagreements"),
    ("base run (failure attribution)", "swebounty.baseline", "base_run"),
    ("grading", "swebounty.grading", "grade"),
    ("store commit", "swebounty.store", "Store.save_verdict"),
    ("cleanup", "swebounty.safefs", "remove_tree"),
]


class Stages:
    """Times the harness's stages by wrapping the functions of STAGES, per task (the thread's
    current task, set by evaluate_one) and per pass; exclusive times (nested stages apart)."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.lock = threading.Lock()
        self.passes: list[tuple[str, dict[str, dict[str, float]]]] = []  # (label, per task)
        self.recording = False
        self.missing: list[str] = []
        self._wrap(
            "evaluation glue (logs, verdict)", "swebounty.runs", "evaluate_one", sets_task=True
        )
        for stage, module, attr in STAGES:
            self._wrap(stage, module, attr)

    def _wrap(self, stage: str, module: str, attr: str, sets_task: bool = False) -> None:
        owner: Any = importlib.import_module(module)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = getattr(owner, name, None)
        if original is None:
            self.missing.append(f"{module}.{attr}")
            return
        stages = self

        @functools.wraps(original)
        def wrapper(*a: Any, **kw: Any) -> Any:
            if sets_task:
                stages.local.task = a[0].instance_id
            return stages._timed(stage, original, a, kw)

        setattr(owner, name, wrapper)
        if not path:  # `from x import f` copies: replace them in every loaded module too
            for mod in list(sys.modules.values()):
                for key, value in list(getattr(mod, "__dict__", {}).items()):
                    if value is original:
                        setattr(mod, key, wrapper)

    def _timed(self, stage: str, fn: Any, a: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        task = getattr(self.local, "task", None)
        if not self.recording or task is None:
            return fn(*a, **kw)
        stack = self.local.__dict__.setdefault("stack", [])
        stack.append(0.0)
        start = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            elapsed = time.perf_counter() - start
            inner = stack.pop()
            if stack:
                stack[-1] += elapsed
            with self.lock:
                per = self.passes[-1][1].setdefault(task, {})
                per[stage] = per.get(stage, 0.0) + elapsed - inner

    def enable(self, label: str = "") -> None:
        self.passes.append((label, {}))
        self.recording = True

    def disable(self) -> None:
        self.recording = False

    def per_task(self, ids: list[str], label: str = "") -> dict[str, dict[str, float]]:
        """task -> stage -> median over the passes of `label` (a stage a pass did not reach
        counts 0)."""
        passes = [p for lbl, p in self.passes if lbl == label]
        names = list(dict.fromkeys(s for p in passes for t in p.values() for s in t))
        return {
            i: {s: median([p.get(i, {}).get(s, 0.0) for p in passes]) for s in names} for i in ids
        }


def task_args(description: str | None) -> argparse.ArgumentParser:
    """The options of a bench over real tasks with warm environments (this one and
    bytecode_cache.py): the dataset, the clones, the cache, which tasks, how many repeats."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--repos-dir", type=Path, required=True, help="clones named owner__name")
    default_cache = Path(os.environ.get("SWEBOUNTY_CACHE", "~/.cache/swebounty"))
    p.add_argument("--cache-dir", type=Path, default=default_cache)
    p.add_argument("-i", "--instance-id", action="append", dest="ids", help="default: 7 tasks")
    p.add_argument("--repeat", type=int, default=3)
    return p


def parse_args() -> argparse.Namespace:
    p = task_args(__doc__)
    p.add_argument("--workers", default="1,2", help="real-task throughput at these workers")
    p.add_argument("--demo-workers", default="1,2,4", help="demo throughput at these workers")
    p.add_argument("--demo-attempts", type=int, default=6, help="gold attempts per demo task")
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument(
        "--json", type=Path, default=Path(__file__).parent / "results/overhead_real.json"
    )
    return p.parse_args()


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def junit_time(path: Path) -> float | None:
    """pytest's own session time (the testsuite's `time`), without interpreter start-up."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    return sum(float(s.get("time", "0")) for s in suites)


def timed_run(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    return time.perf_counter() - start


class Checkout:
    """A task's workspace prepared as the harness prepares one (gold patch, test
    infrastructure of the base, test patch, per-task layer and its install), to run pytest on
    directly, and to time the sandbox's own costs on."""

    def __init__(self, task: Task, ctx: EvalContext, root: Path) -> None:
        mirror = ensure_mirror(task.repo, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir)
        self.scratch = root / f"{task.instance_id}-{uuid.uuid4().hex[:6]}"
        self.scratch.mkdir(mode=0o711, parents=True)
        ws = make_workspace(mirror, task.base_commit, self.scratch / "workspace")
        spec = ctx.envs.spec_for(task, ws, commit_date(mirror, task.base_commit))
        env = ctx.envs.ensure(spec, ws)
        apply_patch(ws, task.patch)
        reset_files(ws, files_in_patch(task.test_patch))
        revert_test_infra(ws)
        apply_patch(ws, task.test_patch)
        self.tenv = ctx.envs.for_task(env, ws, self.scratch / "layer")
        self.workspace = ws
        self.env = dict(self.tenv.env)  # exactly the sandbox's environment, nothing ambient
        if self.tenv.setup_argv:
            subprocess.run(
                self.tenv.setup_argv, cwd=ws, env=self.env, capture_output=True, check=True
            )
        files = test_files(task.test_patch, expected=task.FAIL_TO_PASS + task.PASS_TO_PASS)
        self.junit = self.scratch / "junit.xml"
        self.argv = pytest_command(self.tenv.test_prefix, files, self.junit)
        # The same pytest inside the sandbox writes its XML to the sandbox's private /tmp.
        self.argv_inside = pytest_command(self.tenv.test_prefix, files, Path("/tmp/j.xml"))
        self.collect = [*self.tenv.test_prefix, "--collect-only", "-q", "-p", "no:cacheprovider"]
        self.collect += ["--", *files]


def bare_pytest(task: Task, ctx: EvalContext, root: Path, repeat: int) -> dict[str, Any]:
    co = Checkout(task, ctx, root)
    runs, session = [], []
    for _ in range(repeat + 1):  # the first run also compiles the checkout's bytecode
        runs.append(timed_run(co.argv, co.workspace, co.env))
        session.append(junit_time(co.junit) or float("nan"))
    python = co.tenv.test_prefix[0]
    result = {
        "cold_s": runs[0],
        "median_s": median(runs[1:]),
        "runs_s": runs,
        "session_s": median(session[1:]),
        "python_start_s": median(
            [timed_run([python, "-c", "pass"], co.workspace, co.env) for _ in range(repeat)]
        ),
        "collect_s": median([timed_run(co.collect, co.workspace, co.env) for _ in range(repeat)]),
    }
    # The same inside the sandbox, mounted as the harness mounts it (writes in an overlay).
    with ctx.lease() as sandbox:
        for path in (co.workspace, co.scratch / "layer"):
            sandbox.prepare_workdir(path)
        mounts = [Mount(path=p) for p in co.tenv.ro_paths]
        mounts += [Mount(path=p, ephemeral=True) for p in [co.workspace, *co.tenv.rw_paths]]
        policy = ctx.policy.model_copy(update={"env": co.tenv.env})

        def inside(argv: list[str]) -> float:
            start = time.perf_counter()
            sandbox.run(argv, workdir=co.workspace, mounts=mounts, policy=policy)
            return time.perf_counter() - start

        result["sandbox_true_s"] = median([inside(["true"]) for _ in range(repeat)])
        result["sandbox_python_start_s"] = median(
            [inside([python, "-c", "pass"]) for _ in range(repeat)]
        )
        result["sandbox_collect_s"] = median([inside(co.collect) for _ in range(repeat)])
        result["sandbox_pytest_s"] = median([inside(co.argv_inside) for _ in range(repeat)])
    safefs.remove_tree(co.scratch)
    return result


def harness_pass(
    tasks: list[Task],
    ctx: EvalContext,
    store: Store,
    workers: int,
    stages: Stages | None,
    label: str = "",
) -> tuple[float, dict[str, float], list[Any]]:
    """One evaluate_run over `tasks`: wall time, each task's time (see module doc), verdicts."""
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    pairs = list(zip(tasks, gold_submissions(tasks), strict=True))
    per_task: dict[str, float] = {}
    start = last = time.perf_counter()

    def on_verdict(v: Any) -> None:
        nonlocal last
        now = time.perf_counter()
        per_task[v.instance_id] = now - last
        last = now

    if stages:
        stages.enable(label)
    try:
        verdicts = evaluate_run(
            run_id, pairs, ctx, store, workers=workers, force=True, on_verdict=on_verdict
        )
    finally:
        if stages:
            stages.disable()
    return time.perf_counter() - start, per_task, verdicts


def cli_eval(args: argparse.Namespace, ids: list[str], runs_dir: Path) -> float:
    argv = [sys.executable, "-m", "swebounty", "eval", str(args.dataset), "--gold", "--force"]
    argv += ["--repos-dir", str(args.repos_dir), "--cache-dir", str(args.cache_dir)]
    argv += ["--runs-dir", str(runs_dir), "--run-id", "bench-cli", "--workers", "1"]
    for i in ids:
        argv += ["-i", i]
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True)
    return time.perf_counter() - start


def demo_throughput(workers: list[int], attempts: int, work: Path) -> dict[int, float]:
    mirror, tasks = build_demo(work / "demo")
    ctx = EvalContext.create(
        cache_dir=work / "demo-cache",
        runs_dir=work / "demo-runs",
        repos_dir=mirror.parent,
        workers=max(workers),
    )
    store = Store(work / "demo-runs" / "runs.sqlite")
    harness_pass(tasks, ctx, store, 1, None)  # builds the demo's environment
    pairs = [
        (t, Submission(instance_id=t.instance_id, model_patch=t.patch, attempt=a))
        for a in range(1, attempts + 1)
        for t in tasks
    ]
    rates = {}
    for w in workers:
        start = time.perf_counter()
        evaluate_run(f"demo-{w}", pairs, ctx, store, workers=w, force=True)
        rates[w] = len(pairs) / (time.perf_counter() - start) * 60
    return rates


COLUMNS = ["task", "verdict", "bare s", "bare cold s", "harness s", "overhead s", "ratio"]
COLUMNS += ["overhead s, no bytecode cache", "overhead s, workspaces on disk"]


def table(title: str, columns: list[str], rows: list[list[str]]) -> Table:
    t = Table(title=title)
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*r)
    return t


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

        bare = {}
        for n, t in enumerate(tasks, 1):
            console.print(f"[{n}/{len(tasks)}] bare pytest and the sandbox: {t.instance_id}")
            bare[t.instance_id] = bare_pytest(t, ctx, work / "bare", args.repeat)

        console.print(f"the harness: evaluate_run over all tasks, {args.repeat} times")
        stages = Stages()
        # Each pass with the bytecode cache is followed by one without it, and one with the
        # workspaces on disk, so a change in the machine's load weighs on all alike.
        memory_dir = ctx.memory_dir
        console.print(f"workspaces in memory: {memory_dir or 'no (on the cache disk)'}")
        passes, uncached, on_disk = [], [], []
        for _ in range(args.repeat):
            passes.append(harness_pass(tasks, ctx, store, 1, stages))
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
        statuses = {v.instance_id: v.status for v in passes[-1][2]}
        harness = {i: median([p[1][i] for p in passes]) for i in ids}
        no_cache = {i: median([p[1][i] for p in uncached]) for i in ids}
        disk = {i: median([p[1][i] for p in on_disk]) for i in ids} if on_disk else dict(harness)
        cli = median([cli_eval(args, ids, work / "cli-runs") for _ in range(args.repeat)])

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
    for i in ids:
        b, h = bare[i], harness[i]
        overheads.append(h - b["median_s"])
        overheads_no_cache.append(no_cache[i] - b["median_s"])
        overheads_disk.append(disk[i] - b["median_s"])
        rows.append(
            [
                i,
                statuses.get(i, "?"),
                f"{b['median_s']:.2f}",
                f"{b['cold_s']:.2f}",
                f"{h:.2f}",
                f"{h - b['median_s']:+.2f}",
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
        ("pytest run, warm checkout: inside (unguarded) / outside", "sandbox_pytest_s", "median_s"),
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
