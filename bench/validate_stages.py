"""Where one candidate's validation time goes, stage by stage (issue 28).

    python bench/validate_stages.py CANDIDATES.jsonl --ids ID,ID,... --cache-dir CACHE \
        --repos-dir CLONES --runs-dir DIR [--json out.json]

Validates each candidate in turn (one worker, no prefetching) with timers around the harness's
stages: checkout (the workspace), environment spec inference, environment build of a spec not
built before (resolution, install, collection probe), waits on the cache's locks, the sandboxed
runs (each test run's wall and CPU seconds, from its cgroup), patches applied. Prints one table
per candidate and the candidate's total wall and CPU seconds. The timers wrap the harness's own
functions: what they add is negligible next to a test run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import swebounty.envs.build as build
import swebounty.envs.cache as cache
import swebounty.envs.manager as manager
import swebounty.frameworks.pytest as fpytest
import swebounty.frameworks.python as fpython
import swebounty.sandbox._process as process
import swebounty.sandbox.bwrap as bwrap
from swebounty.collect.validate import Rejected, validate_or_reject
from swebounty.evalcontext import EvalContext
from swebounty.tasks import load_tasks

SECONDS: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)
RUNS: list[dict[str, Any]] = []


def _timed(owner: Any, name: str, label: str) -> None:
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.monotonic()
        try:
            return inner(*args, **kwargs)
        finally:
            SECONDS[label] += time.monotonic() - start
            CALLS[label] += 1

    setattr(owner, name, wrapper)


def _instrument() -> None:
    _timed(fpython, "make_workspace", "checkout")
    _timed(fpython, "linked_workspace", "checkout")
    _timed(manager.EnvManager, "spec_for", "environment spec")
    _timed(manager.EnvManager, "ensure", "environment (found or built)")
    _timed(build.Builder, "_build", "environment build, new spec")
    _timed(fpython, "apply_patch", "apply patches")
    _timed(fpytest, "_run_guarded", "sandboxed runs (setup, tests)")
    locked = cache.CacheLayout.lock

    @contextlib.contextmanager
    def lock(self: cache.CacheLayout, name: str) -> Iterator[None]:
        start = time.monotonic()
        with locked(self, name):
            SECONDS["waits on cache locks"] += time.monotonic() - start
            CALLS["waits on cache locks"] += 1
            yield

    cache.CacheLayout.lock = lock  # type: ignore[method-assign]
    launch = process.run_launch

    def run_launch(spec: process.Launch, policy: Any) -> Any:
        start = time.monotonic()
        result = launch(spec, policy)
        what = "test run" if any("run_pytest" in a for a in spec.argv) else "other sandboxed"
        RUNS.append({"what": what, "wall": round(time.monotonic() - start, 2),
                     "cpu": result.cpu_seconds})  # fmt: skip
        return result

    process.run_launch = run_launch
    bwrap.run_launch = run_launch  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("candidates", type=Path)
    parser.add_argument("--ids", required=True)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--repos-dir", type=Path, required=True)
    parser.add_argument("--runs-dir", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    _instrument()
    tasks = {t.instance_id: t for t in load_tasks(args.candidates)[0]}
    ctx = EvalContext.create(cache_dir=args.cache_dir, runs_dir=args.runs_dir,
                             repos_dir=args.repos_dir, sandbox="bwrap", workers=1)  # fmt: skip
    console = Console()
    report: dict[str, Any] = {"load": os.getloadavg(), "candidates": {}}
    with ctx:
        for iid in args.ids.split(","):
            SECONDS.clear()
            CALLS.clear()
            RUNS.clear()
            start = time.monotonic()
            result = validate_or_reject(tasks[iid], ctx, args.runs_dir / "validate" / iid)
            wall = time.monotonic() - start
            if isinstance(result, Rejected):
                outcome, facts = f"rejected ({result.stage})", result.facts
            else:
                outcome, facts = "valid", (result.model_extra or {}).get("validation") or {}
            table = Table(title=f"{iid}: {outcome}, {wall:.1f} s wall, "
                                f"{facts.get('cpu_seconds')} CPU-s")  # fmt: skip
            for col in ("stage", "seconds", "calls"):
                table.add_column(col, justify="left" if col == "stage" else "right")
            for label, seconds in sorted(SECONDS.items(), key=lambda kv: -kv[1]):
                table.add_row(label, f"{seconds:.1f}", str(CALLS[label]))
            for run in RUNS:
                table.add_row(f"  {run['what']} (CPU {run['cpu']})", f"{run['wall']:.1f}", "1")
            console.print(table)
            report["candidates"][iid] = {
                "outcome": outcome, "wall_seconds": round(wall, 1),
                "cpu_seconds": facts.get("cpu_seconds"),
                "stages": {k: round(v, 2) for k, v in SECONDS.items()}, "runs": list(RUNS),
            }  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
