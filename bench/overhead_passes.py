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

from benchkit import median, timed_run
from stages import Stages

from swebounty import runs
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


def harness_pass(
    tasks: list[Task],
    ctx: EvalContext,
    store: Store,
    workers: int,
    stages: Stages | None,
    label: str = "",
    checkouts: dict[str, Checkout] | None = None,
) -> tuple[float, dict[str, float], list[Any], dict[str, float]]:
    """One evaluate_run over `tasks`: wall time, each task's time (see module doc), verdicts,
    and with `checkouts` (one worker) bare pytest's time on each task's warm checkout, run
    just before the harness evaluates the task (and left out of the task's time), so each
    evaluation is compared with a bare run seconds away, whatever the machine's load does."""
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    pairs = list(zip(tasks, gold_submissions(tasks), strict=True))
    per_task: dict[str, float] = {}
    bare: dict[str, float] = {}
    excluded = 0.0
    start = last = time.perf_counter()

    def on_verdict(v: Any) -> None:
        nonlocal last, excluded
        now = time.perf_counter()
        per_task[v.instance_id] = now - last - excluded
        last, excluded = now, 0.0

    original = runs.evaluate_one

    def paired(task: Task, *a: Any, **kw: Any) -> Any:
        nonlocal excluded
        co = (checkouts or {}).get(task.instance_id)
        if co is not None:
            bare[task.instance_id] = took = timed_run(co.argv, co.workspace, co.env)
            excluded += took
        return original(task, *a, **kw)

    if stages:
        stages.enable(label)
    if checkouts:
        assert workers == 1, "bare runs beside the harness's need one worker"
        runs.evaluate_one = paired  # type: ignore[assignment]
    try:
        verdicts = evaluate_run(
            run_id, pairs, ctx, store, workers=workers, force=True, on_verdict=on_verdict
        )
    finally:
        runs.evaluate_one = original  # type: ignore[assignment]
        if stages:
            stages.disable()
    return time.perf_counter() - start, per_task, verdicts, bare


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
