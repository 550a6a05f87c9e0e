"""Throughput of the local executor against Ray on the same tasks, in one run, and Ray's
start-up cost.

The tasks are the demo's reference patches, `--attempts` attempts each (attempt k of a task is
the same patch: every evaluation is a full one, fresh workspace and sandbox). The demo's
environment is built once before anything is timed, in the cache both executors share. Then
each executor evaluates all the attempts with `--workers` slots (threads here, or the worker
processes of a local Ray cluster started for the run):

- start-up: opening the evaluation (the store, the sandboxes; for Ray also starting the local
  cluster and probing its nodes), minus the local executor's;
- tasks/min: attempts evaluated per minute once open, and end to end (start-up and shutdown
  included, as a CLI run pays them).

Prints a table and writes JSON.

    python bench/executors.py [--workers 2] [--attempts 6] [--json bench/results/executors.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from swebounty.demo import build_demo
from swebounty.evaluation import evaluate, open_evaluation
from swebounty.tasks import Submission


def measure(
    kind: str, subs: list[Submission], workers: int, cache: Path, runs: Path
) -> dict[str, Any]:
    """Open, run and close one evaluation of `subs` on executor `kind`: the times and counts."""
    start = time.perf_counter()
    ev = open_evaluation("demo", subs, run_id=kind, workers=workers, executor=kind,
                         cache_dir=cache, runs_dir=runs)  # fmt: skip
    opened = time.perf_counter()
    with ev:
        verdicts = ev.run()
        ran = time.perf_counter()
    closed = time.perf_counter()
    statuses: dict[str, int] = {}
    for v in verdicts:
        statuses[v.status] = statuses.get(v.status, 0) + 1
    nodes = sorted({v.node or "" for v in verdicts})
    n = len(verdicts)
    return {
        "executor": kind,
        "tasks": n,
        "statuses": statuses,
        "nodes": nodes,
        "open_s": opened - start,
        "run_s": ran - opened,
        "close_s": closed - ran,
        "tasks_per_min": 60 * n / (ran - opened),
        "tasks_per_min_end_to_end": 60 * n / (closed - start),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2, help="slots of each executor")
    parser.add_argument("--attempts", type=int, default=6, help="evaluations per demo task")
    parser.add_argument(
        "--json", type=Path, default=Path(__file__).parent / "results/executors.json"
    )
    args = parser.parse_args()
    try:
        import ray  # noqa: F401
    except ImportError:
        sys.exit("needs the ray extra: pip install -e '.[ray]'")
    with tempfile.TemporaryDirectory(prefix="bench-executors-") as tmp:
        cache, runs = Path(tmp) / "cache", Path(tmp) / "runs"
        _, tasks = build_demo(cache / "demo")
        subs = [
            Submission(
                instance_id=t.instance_id, model_name_or_path="gold", model_patch=t.patch, attempt=k
            )
            for t in tasks
            for k in range(1, args.attempts + 1)
        ]
        warm = evaluate("demo", "gold", run_id="warm-up", cache_dir=cache, runs_dir=runs)
        assert all(v.resolved for v in warm), "the demo's gold patches must resolve"
        rows = [measure(kind, subs, args.workers, cache, runs) for kind in ("local", "ray")]
    local, on_ray = rows
    startup = on_ray["open_s"] - local["open_s"]
    print(f"{len(subs)} evaluations ({len(tasks)} demo tasks x {args.attempts}), "
          f"{args.workers} slots, {os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'executor':<9} {'open s':>7} {'run s':>7} {'close s':>8} {'tasks/min':>10} "
          f"{'end-to-end/min':>15}  statuses")  # fmt: skip
    for r in rows:
        print(
            f"{r['executor']:<9} {r['open_s']:>7.2f} {r['run_s']:>7.2f} {r['close_s']:>8.2f} "
            f"{r['tasks_per_min']:>10.1f} {r['tasks_per_min_end_to_end']:>15.1f}  {r['statuses']}"
        )
    ratio = on_ray["tasks_per_min"] / local["tasks_per_min"]
    print(f"ray start-up cost (open, beyond local's): {startup:.2f} s; shutdown "
          f"{on_ray['close_s']:.2f} s; ray/local throughput once open: {ratio:.2f}")  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "rows": rows,
        "ray_startup_s": startup,
        "ray_over_local_throughput": ratio,
        "workers": args.workers,
        "attempts_per_task": args.attempts,
        "evaluations": len(subs),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "ray": sys.modules["ray"].__version__,
    }
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
