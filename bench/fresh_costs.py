"""What collecting a fresh benchmark costs, from the funnel `validate` wrote (issue 28).

    python bench/fresh_costs.py TASKS.funnel.json [--cache-dir CACHE] [--json out.json]

Prints, per repository and overall: candidates validated, valid tasks, CPU-seconds and wall
seconds in total, per candidate and per valid task, distinct environments, and how many
candidates' CPU-seconds miss their sandboxed tests (recorded before they were measured: too
low); with --cache-dir, the environments' size on disk. CPU-seconds per candidate are exact
for a run with --workers 1 and an upper bound with more (collect/costs.py); the run's own total
(`last_run`) is exact.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swebounty.collect.costs import tree_bytes


def _n(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def rows(funnel: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for name, row in [*funnel["repos"].items(), ("overall", funnel["overall"])]:
        c = row["costs"]
        out.append(
            {
                "repo": name,
                "validated": c["validated"],
                "valid": row["valid"],
                "cpu_seconds": c["cpu_seconds"],
                "wall_seconds": c["wall_seconds"],
                "cpu_per_candidate": c["cpu_seconds_per_candidate"],
                "wall_per_candidate": c["wall_seconds_per_candidate"],
                "cpu_per_valid": c["cpu_seconds_per_valid"],
                "environments": c["environments"],
                # candidates whose CPU-seconds miss their sandboxed tests (recorded before
                # 24fec32, or without a cgroup): their CPU figures are too low
                "cpu_incomplete": c.get("cpu_incomplete"),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("funnel", type=Path, help="<tasks stem>.funnel.json from validate")
    parser.add_argument("--cache-dir", type=Path, help="the validation's cache (for disk use)")
    parser.add_argument("--json", type=Path, help="write the table as JSON here")
    args = parser.parse_args(argv)
    funnel = json.loads(args.funnel.read_text(encoding="utf-8"))
    table = Table(title=f"fresh collection costs ({args.funnel})")
    for col in ("repository", "validated", "valid", "CPU-s", "wall-s", "CPU-s/cand",
                "wall-s/cand", "CPU-s/valid", "envs", "CPU incomplete"):  # fmt: skip
        table.add_column(col, justify="left" if col == "repository" else "right")
    result = rows(funnel)
    for r in result:
        if not r["validated"] and r["repo"] != "overall":
            continue
        table.add_row(
            r["repo"], str(r["validated"]), str(r["valid"]), _n(r["cpu_seconds"]),
            _n(r["wall_seconds"]), _n(r["cpu_per_candidate"], 1), _n(r["wall_per_candidate"], 1),
            _n(r["cpu_per_valid"], 1), str(r["environments"]), _n(r["cpu_incomplete"]),
        )  # fmt: skip
    console = Console()
    console.print(table)
    extra: dict[str, Any] = {"last_run": funnel.get("last_run", {}).get("costs")}
    if args.cache_dir is not None:
        envs = args.cache_dir.expanduser() / "envs"
        extra["env_cache_bytes"] = tree_bytes(envs) if envs.is_dir() else 0
        console.print(f"environment cache: {extra['env_cache_bytes'] / 2**30:.2f} GiB in {envs}")
    if extra["last_run"]:
        console.print(f"last validate run: {extra['last_run']}", highlight=False)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": result, **extra}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
