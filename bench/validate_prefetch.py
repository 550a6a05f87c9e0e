"""What prefetching environments saves in `validate` (collect/prefetch.py), on real candidates.

    python bench/validate_prefetch.py CANDIDATES.jsonl --ids ID,ID,... --repos-dir CLONES \
        --out DIR [--workers 1] [--json out.json]

Validates the same candidates twice, each time with an empty environment cache of its own
(as for repositories never met before): first with `--prefetch-envs 1`, then with 0 (or the
other way round, `--without-first`). uv's own download cache is shared, so the second run finds
the downloads the first made: the order favours the second. Prints wall and CPU seconds per candidate for both (CPU
from the funnel's `last_run`, the whole process and every program it ran, sandboxed tests
included) and checks that both runs decided every candidate the same way (same FAIL_TO_PASS and
PASS_TO_PASS, same rejection stages).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def _decisions(out: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for line in out.read_text().splitlines():
        t = json.loads(line)
        found[t["instance_id"]] = ("valid", t["FAIL_TO_PASS"], t["PASS_TO_PASS"])
    rejects = out.with_name(out.stem + ".rejects.jsonl")
    for line in rejects.read_text().splitlines() if rejects.exists() else []:
        r = json.loads(line)
        found[r["instance_id"]] = (r["stage"],)
    return found


def one(candidates: Path, root: Path, prefetch: int, args: argparse.Namespace) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=False)
    out = root / "tasks.jsonl"
    argv = [sys.executable, "-m", "swebounty", "validate", str(candidates), "-o", str(out),
            "--workers", str(args.workers), "--prefetch-envs", str(prefetch),
            "--cache-dir", str(root / "cache"), "--runs-dir", str(root / "runs"),
            "--repos-dir", str(args.repos_dir), "--quiet"]  # fmt: skip
    start = time.monotonic()
    subprocess.run(argv, check=True)
    wall = time.monotonic() - start
    last = json.loads((root / "tasks.funnel.json").read_text())["last_run"]
    n = last["candidates"] - last["resumed"]
    return {
        "prefetch_envs": prefetch,
        "candidates": n,
        "valid": last["valid"],
        "wall_seconds": round(wall, 1),
        "cpu_seconds": last["costs"]["cpu_seconds"],
        "wall_per_candidate": round(wall / n, 1),
        "cpu_per_candidate": round(last["costs"]["cpu_seconds"] / n, 1),
        "environments": last["costs"].get("environments"),
        "decisions": _decisions(out),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("candidates", type=Path)
    parser.add_argument("--ids", required=True, help="comma-separated instance ids")
    parser.add_argument("--repos-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="a new folder for both runs")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--without-first", action="store_true", help="run without prefetching first (the order "
        "favours the second run: it finds uv's downloads)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    wanted = args.ids.split(",")
    lines = {
        json.loads(line)["instance_id"]: line
        for line in args.candidates.read_text().splitlines()
        if line.strip()
    }
    missing = [i for i in wanted if i not in lines]
    if missing:
        sys.exit(f"not in {args.candidates}: {', '.join(missing)}")
    args.out.mkdir(parents=True, exist_ok=False)
    picked = args.out / "candidates.jsonl"
    picked.write_text("".join(lines[i] + "\n" for i in wanted))
    order = (0, 1) if args.without_first else (1, 0)
    results = [one(picked, args.out / f"prefetch-{p}", p, args) for p in order]
    same = results[0]["decisions"] == results[1]["decisions"]
    table = Table(title=f"validate, {len(wanted)} candidates, --workers {args.workers}")
    for col in ("prefetch", "valid", "wall s", "CPU s", "wall s/cand.", "CPU s/cand."):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(str(r["prefetch_envs"]), str(r["valid"]), str(r["wall_seconds"]),
                      str(r["cpu_seconds"]), str(r["wall_per_candidate"]),
                      str(r["cpu_per_candidate"]))  # fmt: skip
    console = Console()
    console.print(table)
    console.print(f"same decisions with and without prefetching: {same}; load {os.getloadavg()}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {"runs": results, "same_decisions": same, "ids": wanted}
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if not same:
        sys.exit("the runs decided differently")


if __name__ == "__main__":
    main()
