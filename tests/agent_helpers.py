"""Helpers for the agent tests: the demo tasks, an evaluation context and a store in tmp dirs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from swebounty.agents import Agent
from swebounty.attempts import AttemptOptions, run_agent
from swebounty.demo import build_demo
from swebounty.evalcontext import EvalContext
from swebounty.sandbox import bwrap_available
from swebounty.store import Store
from swebounty.tasks import Attempt, Task
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")


@dataclass
class Demo:
    cache: Path
    mirror: Path
    tasks: list[Task]

    def task(self, n: int) -> Task:
        return self.tasks[n - 1]


def demo_in(cache: Path) -> Demo:
    mirror, tasks = build_demo(cache / "demo")
    return Demo(cache, mirror, tasks)


@contextmanager
def context(demo: Demo, runs: Path, *, workers: int = 1) -> Iterator[tuple[EvalContext, Store]]:
    ctx = EvalContext.create(
        cache_dir=demo.cache,
        runs_dir=runs,
        repos_dir=demo.mirror.parent,
        workers=workers,
        timeout_s=300,
    )
    runs.mkdir(parents=True, exist_ok=True)
    with Store.open(runs / "runs.sqlite") as store:
        store.ensure_run("r", "demo", {}, sandbox=ctx.sandbox.name, unsafe=False)
        yield ctx, store


def run_one(
    demo: Demo,
    runs: Path,
    task: Task,
    agent: Agent,
    *,
    attempts: int = 1,
    time_limit_s: float = 120.0,
) -> list[tuple[Attempt, Verdict]]:
    """Run `agent` on one task in run "r"; return the stored attempts with their verdicts."""
    with context(demo, runs) as (ctx, store):
        opts = AttemptOptions(time_limit_s=time_limit_s)
        run_agent("r", [task], agent, ctx, store, attempts=attempts, opts=opts)
        verdicts = {(v.instance_id, v.attempt): v for v in store.verdicts("r")}
        stored = store.attempts("r", trajectories=True)
    return [(a, verdicts[a.instance_id, a.attempt]) for a in stored]
