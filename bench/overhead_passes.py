"""The measurements of overhead_real.py: bare pytest and the sandbox's own costs on a
prepared checkout, one harness pass, the CLI, the demo's throughput."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchkit import junit_time, median, timed_run
from stages import Stages

from swebounty.demo import build_demo
from swebounty.diffs import files_in_patch
from swebounty.evalcontext import EvalContext
from swebounty.integrity import revert_test_infra
from swebounty.patches import apply_patch, reset_files
from swebounty.repos import commit_date, ensure_mirror, make_workspace
from swebounty.runs import evaluate_run
from swebounty.sandbox.base import Mount
from swebounty.store import Store
from swebounty.tasks import Submission, Task, gold_submissions
from swebounty.testing import pytest_command, test_files


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


def sandbox_costs(co: Checkout, ctx: EvalContext, repeat: int) -> dict[str, Any]:
    """Bare pytest's cold run (it compiles the checkout's bytecode), `python -c pass` and the
    collection outside, and the same inside the sandbox, mounted as the harness mounts it
    (writes in an overlay)."""
    start = time.perf_counter()
    subprocess.run(co.argv, cwd=co.workspace, env=co.env, capture_output=True, check=False)
    python = co.tenv.test_prefix[0]
    result: dict[str, Any] = {
        "cold_s": time.perf_counter() - start,
        "python_start_s": median(
            [timed_run([python, "-c", "pass"], co.workspace, co.env) for _ in range(repeat)]
        ),
        "collect_s": median([timed_run(co.collect, co.workspace, co.env) for _ in range(repeat)]),
    }
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
        # Interleaved with the same run outside, so the machine's load weighs on both alike.
        pairs = [
            (inside(co.argv_inside), timed_run(co.argv, co.workspace, co.env))
            for _ in range(repeat)
        ]
        result["sandbox_pytest_s"] = median([a for a, _ in pairs])
        result["outside_pytest_s"] = median([b for _, b in pairs])
    return result


def bare_round(checkouts: dict[str, Checkout]) -> dict[str, tuple[float, float]]:
    """Bare pytest once on every task's warm checkout: (wall s, pytest's session s)."""
    out = {}
    for i, co in checkouts.items():
        wall = timed_run(co.argv, co.workspace, co.env)
        out[i] = (wall, junit_time(co.junit) or float("nan"))
    return out


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
