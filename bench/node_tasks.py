"""JavaScript/TypeScript tasks through the real harness: gold and empty verdicts, per repo.

    python bench/node_tasks.py --dataset multi_swe_bench_js.jsonl --repos-dir ~/clones \\
        [--workers 2] [-i TASK_ID ...] [--json bench/results/node_tasks.json] \\
        [--base-failures network|strict|all]

Two passes over the tasks (Multi-SWE-bench or SWE-bench records with "ecosystem": "node"):
gold, then empty, each exactly as `swebounty eval` runs them (fresh workspace, the task's Node
environment, sandbox, structured results). Prints one row per task (Node version, environment
build and evaluation seconds, both verdicts, why gold missed) and one per repository (tasks,
gold resolved, empty resolved), and writes them as JSON. The runs grade under --base-failures
(baseline.py; `network` by default) and every count is given for that policy and each narrower
one, from the same verdicts (baseline.status_under): strict (a resolve that needed an excused
test is unresolved), network (one that needed a test excused for anything but the network is
unresolved), all. Each task's excused tests are listed with their base outcome.
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

from swebounty.baseline import DEFAULT_POLICY, POLICIES, status_under
from swebounty.envs.node_build import NodeCache
from swebounty.evalcontext import EvalContext
from swebounty.runs import evaluate_run
from swebounty.store import Store
from swebounty.tasks import empty_submissions, gold_submissions, load_tasks
from swebounty.verdicts import Verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--repos-dir", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("-i", "--instance-id", action="append", default=[])
    parser.add_argument("--cache-dir", type=Path, default=Path("~/.cache/swebounty"))
    parser.add_argument("--runs-dir", type=Path, default=Path("bench/results/node_runs"))
    parser.add_argument("--json", type=Path, default=Path("bench/results/node_tasks.json"))
    parser.add_argument("--base-failures", choices=POLICIES, default=DEFAULT_POLICY,
                        help="the policy the runs grade under (its narrower ones are counted "
                        "from the same verdicts)")  # fmt: skip
    args = parser.parse_args(argv)
    policies = POLICIES[: POLICIES.index(args.base_failures) + 1]  # the run's and narrower ones
    counts = ("tasks", *(f"{kind}_{p}" for kind in ("gold", "empty") for p in policies))
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
        workers=args.workers, base_failures=args.base_failures,
    )  # fmt: skip
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    verdicts: dict[str, dict[str, Verdict]] = {}
    seconds: dict[str, float] = {}
    with Store.open(args.runs_dir / "runs.sqlite") as store:
        for kind, subs in (("gold", gold_submissions(tasks)), ("empty", empty_submissions(tasks))):
            run_id = f"node-{kind}-{args.base_failures}"
            store.ensure_run(run_id, dataset=str(args.dataset.resolve()),
                             config={"kind": kind, "base_failures": args.base_failures},
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
            **{f"{kind}_{p}": status_under(v, p) for p in policies
               for kind, v in (("gold", gold), ("empty", empty))},
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
            why = "; ".join(f"excused {e['test_id']} ({e['base_status']} at base"
                            + (f": {e['network']}" if e["network"] else ", not network") + ")"
                            for e in r["gold_excused"])[:400]  # fmt: skip
        table.add_row(r["task"], r["node"] or "-", str(r["env_build_s"] or "-"), str(r["eval_s"]),
                      r["gold"], r["empty"], why)  # fmt: skip
    console.print(table)
    per_repo: dict[str, dict[str, int]] = {}
    for r in rows:
        c = per_repo.setdefault(r["repo"], dict.fromkeys(counts, 0))
        c["tasks"] += 1
        for key in counts[1:]:
            c[key] += r[key] == "resolved"
    said = " / ".join(policies)
    repo_table = Table(title=f"per repository (resolved with --base-failures {said})")
    for col in ("repo", "tasks", "gold resolved", "empty resolved"):
        repo_table.add_column(col)

    def cells(c: dict[str, int]) -> list[str]:
        return [" / ".join(str(c[f"{kind}_{p}"]) for p in policies) for kind in ("gold", "empty")]

    for repo, c in sorted(per_repo.items()):
        repo_table.add_row(repo, str(c["tasks"]), *cells(c))
    total = {k: sum(c[k] for c in per_repo.values()) for k in counts}
    repo_table.add_row("all", str(total["tasks"]), *cells(total))
    console.print(repo_table)
    console.print(f"wall time: gold {seconds['gold']} s, empty {seconds['empty']} s "
                  f"({args.workers} workers)")  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"tasks": rows, "per_repo": per_repo, "total": total,
                                     "seconds": seconds, "base_failures": args.base_failures},
                                    indent=2))  # fmt: skip
    return 0 if total["tasks"] else 1


if __name__ == "__main__":
    sys.exit(main())
