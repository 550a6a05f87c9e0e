"""JavaScript/TypeScript tasks through the real harness: gold and empty verdicts, per repo.

    python bench/node_tasks.py --dataset multi_swe_bench_js.jsonl --repos-dir ~/clones \\
        [--workers 2] [-i TASK_ID ...] [--json bench/results/node_tasks.json] \\
        [--excuse-base-failures]

Two passes over the tasks (Multi-SWE-bench or SWE-bench records with "ecosystem": "node"):
gold, then empty, each exactly as `swebounty eval` runs them (fresh workspace, the task's Node
environment, sandbox, structured results). Prints one row per task (Node version, environment
build and evaluation seconds, both verdicts, why gold missed) and one per repository (tasks,
gold resolved, empty resolved), and writes them as JSON. With --excuse-base-failures the runs
grade under that policy (baseline.py) and every count is given twice from the same verdicts:
strict (a verdict resolved only thanks to an excused test counts as unresolved, as without
the policy) and with the policy; each task's excused tests are listed with their base outcome.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swebounty.envs.node_build import NodeCache
from swebounty.evalcontext import EvalContext
from swebounty.runs import evaluate_run
from swebounty.store import Store
from swebounty.tasks import Verdict, empty_submissions, gold_submissions, load_tasks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--repos-dir", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("-i", "--instance-id", action="append", default=[])
    parser.add_argument("--cache-dir", type=Path, default=Path("~/.cache/swebounty"))
    parser.add_argument("--runs-dir", type=Path, default=Path("bench/results/node_runs"))
    parser.add_argument("--json", type=Path, default=Path("bench/results/node_tasks.json"))
    parser.add_argument("--excuse-base-failures", action="store_true",
                        help="grade with the policy that excuses PASS_TO_PASS tests failing on "
                        "the unpatched base")  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    console = Console()

    tasks, errors = load_tasks(args.dataset)
    for err in errors:
        console.print(f"[yellow]skipped[/] {err.where}: {err.message}")
    tasks = [t for t in tasks if t.ecosystem == "node"]
    if args.instance_id:
        tasks = [t for t in tasks if t.instance_id in set(args.instance_id)]
    ctx = EvalContext.create(
        cache_dir=args.cache_dir, runs_dir=args.runs_dir, repos_dir=args.repos_dir,
        workers=args.workers, excuse_base_failures=args.excuse_base_failures,
    )  # fmt: skip
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    verdicts: dict[str, dict[str, Verdict]] = {}
    seconds: dict[str, float] = {}
    with Store.open(args.runs_dir / "runs.sqlite") as store:
        for kind, subs in (("gold", gold_submissions(tasks)), ("empty", empty_submissions(tasks))):
            policy = args.excuse_base_failures
            run_id = f"node-{kind}" + ("-excused" if policy else "")
            store.ensure_run(run_id, dataset=str(args.dataset.resolve()),
                             config={"kind": kind, "excuse_base_failures": policy},
                             sandbox=ctx.sandbox.name, unsafe=False)  # fmt: skip
            start = time.monotonic()
            done = evaluate_run(run_id, list(zip(tasks, subs, strict=True)), ctx, store,
                                workers=args.workers, force=True,
                                on_verdict=lambda v: console.print(f"  {v.instance_id}: {v.status}",
                                                                   highlight=False))  # fmt: skip
            seconds[kind] = round(time.monotonic() - start, 1)
            verdicts[kind] = {v.instance_id: v for v in done}

    envs = {e.key: e for e in NodeCache(args.cache_dir.expanduser().resolve() / "node").list()}
    rows: list[dict[str, Any]] = []
    for task in tasks:
        gold, empty = verdicts["gold"][task.instance_id], verdicts["empty"][task.instance_id]
        env = envs.get(gold.env_key or "")
        rows.append({
            "task": task.instance_id,
            "repo": task.repo,
            "node": env.node_version if env else None,
            "installer": Path(env.manager_cli[-1]).parts[-3] if env else None,
            "env_build_s": env.build_seconds if env else None,
            "eval_s": round(gold.seconds, 1),
            "gold": gold.status,
            "empty": empty.status,
            "gold_strict": _strict(gold),
            "empty_strict": _strict(empty),
            "gold_reason": gold.reason,
            "gold_not_passing": [t.test_id for t in gold.tests if t.status != "passed"],
            "gold_excused": [e.model_dump() for e in gold.excused_tests],
            "empty_excused": [e.model_dump() for e in empty.excused_tests],
        })  # fmt: skip
    table = Table(title=f"{args.dataset.name}: gold and empty")
    for col in ("task", "node", "env s", "eval s", "gold", "empty", "why gold missed / excused"):
        table.add_column(col, overflow="fold")
    for r in rows:
        why = "" if r["gold"] == "resolved" else r["gold_reason"][:120]
        if r["gold_excused"]:
            why = "; ".join(f"excused {e['test_id']} ({e['base_status']} at base)"
                            for e in r["gold_excused"])[:300]  # fmt: skip
        table.add_row(r["task"], r["node"] or "-", str(r["env_build_s"] or "-"), str(r["eval_s"]),
                      r["gold"], r["empty"], why)  # fmt: skip
    console.print(table)
    per_repo: dict[str, dict[str, int]] = {}
    for r in rows:
        c = per_repo.setdefault(r["repo"], dict.fromkeys(COUNTS, 0))
        c["tasks"] += 1
        for kind in ("gold", "empty"):
            c[kind] += r[kind] == "resolved"
            c[f"{kind}_strict"] += r[f"{kind}_strict"] == "resolved"
    policy = args.excuse_base_failures
    repo_table = Table(title="per repository" + (" (strict / excused base failures)" if policy
                                                 else ""))  # fmt: skip
    for col in ("repo", "tasks", "gold resolved", "empty resolved"):
        repo_table.add_column(col)

    def cells(c: dict[str, int]) -> list[str]:
        if not policy:
            return [str(c["gold"]), str(c["empty"])]
        return [f"{c['gold_strict']} / {c['gold']}", f"{c['empty_strict']} / {c['empty']}"]

    for repo, c in sorted(per_repo.items()):
        repo_table.add_row(repo, str(c["tasks"]), *cells(c))
    total = {k: sum(c[k] for c in per_repo.values()) for k in COUNTS}
    repo_table.add_row("all", str(total["tasks"]), *cells(total))
    console.print(repo_table)
    console.print(f"wall time: gold {seconds['gold']} s, empty {seconds['empty']} s "
                  f"({args.workers} workers)")  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"tasks": rows, "per_repo": per_repo, "total": total,
                                     "seconds": seconds, "excuse_base_failures": policy},
                                    indent=2))  # fmt: skip
    return 0 if total["tasks"] else 1


COUNTS = ("tasks", "gold", "empty", "gold_strict", "empty_strict")


def _strict(v: Verdict) -> str:
    """The verdict without the excused-base-failures policy: a resolve that needed an excused
    test is unresolved (the policy changes nothing else)."""
    return "unresolved" if v.status == "resolved" and v.excused_tests else v.status


if __name__ == "__main__":
    sys.exit(main())
