"""Yield of the fresh-task pipeline on a real repository, git-only.

    python bench/collect_yield.py CLONE --repo owner/name [--months 12] [--workers 2]

Mines the last N months before the clone's newest commit (or --since/--until), validates every
candidate with the real harness (bubblewrap unless --unsafe), and prints: fixes mined,
candidates (fixes with a test and a code change that pass the filters), validated tasks, yield
(validated / candidates), and wall time per candidate. Outputs and logs go under --out.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from swebounty.collect.batch import validate
from swebounty.collect.pipeline import CollectOptions, collect
from swebounty.collect.repolist import parse_repo_arg
from swebounty.evalcontext import EvalContext
from swebounty.tasks import load_tasks


def newest_commit_date(clone: Path) -> datetime:
    out = subprocess.run(
        ["git", "-C", str(clone), "log", "-1", "--format=%cI", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return datetime.fromisoformat(out).astimezone(timezone.utc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clone", type=Path)
    parser.add_argument("--repo", help="owner/name (default: from the origin remote)")
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--since", help="ISO date; default: --months before the newest commit")
    parser.add_argument("--until", help="ISO date; default: none")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--unsafe", action="store_true", help="no sandbox")
    parser.add_argument("--out", type=Path, default=Path("bench/results/collect_yield"))
    parser.add_argument("--cache-dir", type=Path, default=Path("~/.cache/swebounty"))
    parser.add_argument("--fresh", action="store_true", help="redo earlier validations in --out")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    since = (
        datetime.fromisoformat(args.since).replace(tzinfo=timezone.utc)
        if args.since
        else newest_commit_date(args.clone) - timedelta(days=round(30.44 * args.months))
    )
    until = datetime.fromisoformat(args.until).replace(tzinfo=timezone.utc) if args.until else None
    arg = f"{args.repo}={args.clone}" if args.repo else str(args.clone)
    source = parse_repo_arg(arg, git_only=True)
    args.out.mkdir(parents=True, exist_ok=True)
    candidates_path = args.out / "candidates.jsonl"

    t0 = time.monotonic()
    # Mining takes seconds: always redo it; validation resumes (unless --fresh).
    summary = collect(
        [source], CollectOptions(since=since, until=until), candidates_path, fresh=True
    )
    collect_s = time.monotonic() - t0
    candidates, _ = load_tasks(candidates_path)

    ctx = EvalContext.create(
        cache_dir=args.cache_dir,
        runs_dir=args.out / "runs",
        sandbox="unsafe" if args.unsafe else "bwrap",
    )
    t1 = time.monotonic()

    def on_done(iid: str, outcome: str) -> None:
        print(f"  {iid}: {outcome}", file=sys.stderr, flush=True)

    vsum = validate(
        candidates,
        args.out / "tasks.jsonl",
        ctx,
        runs=args.runs,
        workers=args.workers,
        on_done=on_done,
        fresh=args.fresh,
    )
    validate_s = time.monotonic() - t1
    valid, _ = load_tasks(args.out / "tasks.jsonl")
    rejects = [
        json.loads(line)
        for line in (args.out / "tasks.rejects.jsonl").read_text().splitlines()
        if line.strip()
    ]
    stages: dict[str, int] = {}
    for r in rejects:
        stages[r["stage"]] = stages.get(r["stage"], 0) + 1

    n = len(candidates)
    result = {
        "repo": source.repo or str(args.clone),
        "since": since.date().isoformat(),
        "until": until.date().isoformat() if until else None,
        "fixes_mined": summary.fixes,
        "collect_rejects": dict(summary.rejected),
        "candidates": n,
        "validated": len(valid),
        "yield": round(len(valid) / n, 3) if n else None,
        "validation_rejects": stages,
        "collect_seconds": round(collect_s, 1),
        "validate_seconds": round(validate_s, 1),
        "seconds_per_candidate": round(validate_s / max(1, n - vsum.resumed), 1),
        "resumed": vsum.resumed,
    }
    (args.out / "yield.json").write_text(json.dumps(result, indent=2))
    print(
        f"repo                  {result['repo']} ({result['since']} .. {result['until'] or 'now'})"
    )
    print(f"fixes mined           {summary.fixes}")
    print(f"candidates            {n}")
    print(f"validated             {len(valid)}")
    print(f"yield                 {result['yield']}")
    print(
        f"time per candidate    {result['seconds_per_candidate']} s (validation, {args.workers} workers)"
    )
    print(f"validation rejects    {stages}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
