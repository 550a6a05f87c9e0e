"""A whole-dataset gold run from a cold cache, as a user runs it, beside SWE-bench's figures.

    python bench/cold_lite.py --dataset ../shared/data/swebench_lite_test.jsonl \\
        --repos-dir ~/clones [--repos psf/requests,pallets/flask] [--per-repo N] \\
        [--workers 2] [--home DIR] [--json bench/results/cold_lite.json]

Runs exactly `swebounty eval SUBSET --gold --run-id cold --workers W` in a fresh home (an
empty environment cache) with an empty uv cache of its own (so every download and build is
counted), as a child process, and then reports:
- wall time, and CPU-seconds (user + system of the run and everything it waited for: uv,
  compilers, the sandboxed tests) in total and per task;
- distinct environments built, the specs that chose them, projects that install per task
  (compiled: `pip` mode), any other build store the cache keeps, failed builds by class;
- disk: the environment cache, uv's cache, the runs folder, and per environment;
- resolved of evaluated, and every miss by class (report.json: misses);
beside SWE-bench's published figures: one Docker image of ~1.7 GB per instance, and Lite in
~15 minutes on 12 workers once every image is built (~36 worker-seconds per task, warm).
`--repos`/`--per-repo` take a subset (the whole of Lite from cold takes many hours on two
cores); the JSON says which tasks were run, so a figure is never read as the whole dataset's.

`--resume` continues a run that was stopped (Ctrl-C, SIGTERM, a session's end) in the same
`--home`: the same tasks, the same run id, its verdicts kept. Each stretch of running is a
segment in HOME/segments.json (start, wall, CPU, load, the code); the wall and CPU figures are their sums,
and the JSON lists them, so a figure measured in pieces says so. A stop is recorded when it
comes through this script (SIGINT or SIGTERM to it, or to its process group). A segment is
written as it runs (every BEAT_S), so one ended by SIGKILL (a session's end kills everything)
is kept, `killed`, with its figures up to its last beat: they undercount it by up to BEAT_S.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swebounty.envs.cache import dir_sizes, read_json

BEAT_S = 30.0  # how often a running segment's figures are written down
SWE_BENCH_IMAGE_BYTES = 1.7e9  # one instance image (SWE-bench harness docs)
SWE_BENCH_LITE_WARM = {"minutes": 15, "workers": 12, "tasks": 300}  # once images are built
out = Console(width=160)


def args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--dataset",
        type=Path,
        required=True,
        help="a SWE-bench .json/.jsonl file (a --resume reads HOME's)",
    )
    p.add_argument("--repos-dir", type=Path, required=True, help="clones named owner__name")
    p.add_argument("--repos", default="", help="comma-separated owner/name: only these")
    p.add_argument("--per-repo", type=int, default=0, help="at most N tasks per repository")
    p.add_argument("-i", "--instance-id", action="append", dest="ids", default=[])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--home", type=Path, help="default: a new temporary folder (kept)")
    p.add_argument("--keep-uv-cache", action="store_true", help="use uv's usual cache (warm)")
    p.add_argument("--json", type=Path, default=Path("bench/results/cold_lite.json"))
    p.add_argument(
        "--report-only", action="store_true", help="report a finished run in --home again"
    )
    p.add_argument("--resume", action="store_true", help="continue the stopped run in --home")
    return p.parse_args()


def subset(dataset: Path, repos: set[str], per_repo: int, ids: set[str]) -> list[dict[str, Any]]:
    text = dataset.read_text(encoding="utf-8")
    records = (
        json.loads(text)
        if text.lstrip().startswith("[")
        else [json.loads(line) for line in text.splitlines() if line.strip()]
    )
    seen: Counter[str] = Counter()
    chosen = []
    for r in records:
        if (ids and r["instance_id"] not in ids) or (repos and r["repo"] not in repos):
            continue
        if per_repo and seen[r["repo"]] >= per_repo:
            continue
        seen[r["repo"]] += 1
        chosen.append(r)
    return chosen


def run_eval(
    data: Path,
    home: Path,
    repos_dir: Path,
    workers: int,
    env: dict[str, str],
    beat: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the user's command; its wall time and the CPU time of it and all it waited for.
    A SIGINT or SIGTERM to this script is passed on to the run, which stops with its verdicts
    committed; the segment is still measured. `beat` is given the segment so far (`open`)
    every BEAT_S while the run goes on."""
    argv = [sys.executable, "-m", "swebounty", "eval", str(data), "--gold", "--run-id", "cold",
            "--home", str(home), "--repos-dir", str(repos_dir), "--workers", str(workers)]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine_before = machine_busy_s()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    load = os.getloadavg()
    start = time.monotonic()
    stopped: list[int] = []
    identity = code_identity()

    def segment(code: int | None, cpu: float) -> dict[str, Any]:
        return {"started": started, "exit_code": code,
                "wall_s": round(time.monotonic() - start, 1), "cpu_s": round(cpu, 1),
                "machine_busy_s": round(machine_busy_s() - machine_before, 1),
                "load_before": load, "load_after": os.getloadavg(),
                "stopped": bool(stopped), "code": identity}  # fmt: skip

    with (home / "eval.log").open("a") as log:
        child = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)

        def forward(signum: int, _frame: object) -> None:
            stopped.append(signum)
            child.send_signal(signal.SIGINT)  # the run's own graceful stop

        old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            while True:
                try:
                    code = child.wait(timeout=BEAT_S)
                    break
                except subprocess.TimeoutExpired:
                    if beat is not None:  # CPU of the children is known only once reaped
                        beat({**segment(None, 0.0), "open": True})
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return segment(code, cpu)


def closed(segments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The segments of earlier stretches: one still `open` was ended by SIGKILL before it
    could write its end; it is kept, `killed`, with its figures up to its last beat (its CPU
    unknown: 0, an undercount; machine_busy_s bounds it)."""
    return [
        {**{k: v for k, v in s.items() if k != "open"}, "killed": True, "stopped": True}
        if s.get("open")
        else s
        for s in segments
    ]


def code_identity() -> str:
    """Which swebounty the run's child imports (the same interpreter): the commit of its
    checkout when it is one (an editable install), and a digest of its sources either way, so
    segments graded with different code say so."""
    import hashlib
    import importlib.util

    spec = importlib.util.find_spec("swebounty")
    if spec is None or spec.origin is None:
        return "unknown"
    package = Path(spec.origin).parent
    sha = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        sha.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    head = subprocess.run(["git", "-C", str(package), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    commit = head.stdout.strip() + " " if head.returncode == 0 else ""
    return f"{commit}sources {sha.hexdigest()[:12]}"


def machine_busy_s() -> float:
    """CPU-seconds the whole machine spent busy since boot (/proc/stat: all but idle and
    iowait), 0 where there is no /proc/stat. The run's own figure (cpu_s) counts only what it
    waited for, a lower bound; this one counts everything else running too, an upper bound on
    a machine that is not idle."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except (OSError, IndexError):
        return 0.0
    ticks = [int(f) for f in fields]
    busy = sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def segments_total(segments: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's figures from its segments: wall and CPU summed, the last exit code."""
    return {
        "exit_code": segments[-1]["exit_code"],
        "wall_s": round(sum(s["wall_s"] for s in segments), 1),
        "cpu_s": round(sum(s["cpu_s"] for s in segments), 1),
        "machine_busy_s": round(sum(s.get("machine_busy_s", 0.0) for s in segments), 1),
        "segments": segments,
    }


def environments(cache: Path) -> dict[str, Any]:
    """What the cache holds after the run: HOME/cache/envs is the environment cache
    (envs/, specs/), the rest are the harness's other stores (bytecode, natives, ...)."""
    root = cache / "envs"
    envs = [d for d in (root / "envs").glob("*") if (d / "ready.json").exists()]
    specs = list((root / "specs").glob("*"))
    records = [r for s in specs if (r := read_json(s / "record.json"))]
    failed = [f for s in specs if (f := read_json(s / "failed.json"))]
    per_task = [r for r in records if (r.get("project") or {}).get("mode") == "pip"]
    sizes = [read_json(d / "ready.json") or {} for d in envs]
    own = [int(s.get("own_bytes") or 0) for s in sizes]
    others = {
        d.name: dir_sizes(d)[0]
        for d in cache.iterdir()
        if d.is_dir() and d.name not in ("envs", "work")
    }
    return {
        "environments": len(envs),
        "specs": len(records),
        "projects_built_per_task": len(per_task),
        "failed_builds": dict(Counter(str(f.get("kind")) for f in failed)),
        "env_own_bytes_mean": int(sum(own) / len(own)) if own else 0,
        "env_build_seconds": [round(float(s.get("build_seconds") or 0), 1) for s in sizes],
        "other_stores_bytes": others,
    }


def given(home: Path) -> dict[str, str]:
    """Each task's verdict so far, from the run's store (a stopped run writes no report)."""
    runs = home / "runs"
    if not (runs / "runs.sqlite").exists():
        return {}
    from swebounty.store import Store

    with Store.open(runs) as store:
        return {v.instance_id: v.status for v in store.verdicts("cold")}


def per_repo(tasks: list[dict[str, Any]], status: dict[str, str]) -> dict[str, dict[str, int]]:
    """Per repository: its tasks, and how many were resolved, unresolved, error or not yet
    given a verdict (a run stopped part-way)."""
    table: dict[str, dict[str, int]] = {}
    for t in tasks:
        row = table.setdefault(
            t["repo"], {"tasks": 0, "resolved": 0, "unresolved": 0, "error": 0, "not run": 0}
        )
        row["tasks"] += 1
        got = status.get(t["instance_id"], "not run")
        row[got if got in row else "unresolved"] += 1  # patch_failed: the patch's doing
    return table


def main() -> None:
    a = args()
    repos = {r.strip() for r in a.repos.split(",") if r.strip()}
    home = a.home or Path(tempfile.mkdtemp(prefix="swebounty-cold-"))
    uv_cache = home / "uv-cache"
    seg_file = home / "segments.json"
    segments = closed((read_json(seg_file) or {}).get("segments", []))
    if a.report_only or a.resume:
        if not segments:
            raise SystemExit(f"{home} holds no segments.json: no run of this script to continue")
        lines = (home / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
        tasks = [json.loads(line) for line in lines if line.strip()]
    else:
        tasks = subset(a.dataset, repos, a.per_repo, set(a.ids))
        if not tasks:
            raise SystemExit("no task of the dataset matches --repos / --instance-id")
    if not a.report_only:
        if a.resume:
            uv_kept = (read_json(home / "options.json") or {}).get("keep_uv_cache", False)
            if uv_kept != a.keep_uv_cache:
                raise SystemExit("--keep-uv-cache must be as in the run's first segment")
        elif (home / "cache").exists():
            raise SystemExit(
                f"{home} already holds a cache: give an empty --home (a cold run), "
                "or --resume to continue the run stopped there"
            )
        else:
            home.mkdir(parents=True, exist_ok=True)
            (home / "tasks.jsonl").write_text(
                "".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8"
            )
            (home / "options.json").write_text(json.dumps({"keep_uv_cache": a.keep_uv_cache}))
        env = dict(os.environ)
        if not a.keep_uv_cache:
            env["UV_CACHE_DIR"] = str(uv_cache)
        verb = "continuing" if a.resume else "swebounty eval --gold"
        out.print(f"{len(tasks)} tasks, {a.workers} workers, home {home}: {verb}")
        if any(s.get("killed") for s in segments):
            out.print("an earlier segment was killed: kept, with its figures up to its last beat")

        def write(running: list[dict[str, Any]]) -> None:
            tmp = seg_file.with_suffix(".tmp")  # atomic: a kill mid-write loses no segment
            tmp.write_text(json.dumps({"segments": segments + running}, indent=2), "utf-8")
            os.replace(tmp, seg_file)

        segments.append(run_eval(home / "tasks.jsonl", home, a.repos_dir, a.workers, env,
                                 beat=lambda seg: write([seg])))  # fmt: skip
        write([])
        if segments[-1]["stopped"]:
            out.print(f"stopped; continue with --resume --home {home}")
    timing = segments_total(segments)
    load_before = segments[0]["load_before"]
    load_after = segments[-1]["load_after"]
    report = read_json(home / "runs" / "cold" / "report.json") or {}
    verdicts = {
        i: st for st in ("resolved", "unresolved", "error") for i in report.get(f"{st}_ids", [])
    }
    verdicts = verdicts or given(home)  # the report's, else the store's (a stopped run)
    cache = home / "cache"
    disk = {
        "cache_bytes": dir_sizes(cache)[0] if cache.exists() else 0,
        "uv_cache_bytes": dir_sizes(uv_cache)[0] if uv_cache.exists() else None,
        "runs_bytes": dir_sizes(home / "runs")[0] if (home / "runs").exists() else 0,
    }
    envs = environments(cache) if cache.exists() else {}
    n = len(tasks)
    result = {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_before": load_before,
            "load_after": load_after,
        },
        "dataset": str(a.dataset),
        "tasks": [t["instance_id"] for t in tasks],
        "repos": dict(Counter(t["repo"] for t in tasks)),
        "workers": a.workers,
        "cold_uv_cache": not (read_json(home / "options.json") or {}).get("keep_uv_cache"),
        **timing,
        "cpu_s_per_task": round(timing["cpu_s"] / n, 1),
        "wall_s_per_task": round(timing["wall_s"] / n, 1),
        # a stopped run has no report yet: its verdicts so far
        "resolved": report.get(
            "resolved_instances", sum(v == "resolved" for v in verdicts.values())
        ),
        "evaluated": report.get("total_instances", len(verdicts)),
        "misses": report.get("misses", []),
        "per_repo": per_repo(tasks, verdicts),
        "verdicts": verdicts,
        "disk": disk,
        **envs,
        "swe_bench": {
            "image_bytes": SWE_BENCH_IMAGE_BYTES,
            "images_for_these_tasks_bytes": SWE_BENCH_IMAGE_BYTES * n,
            "warm_worker_s_per_task": SWE_BENCH_LITE_WARM["minutes"]
            * 60
            * SWE_BENCH_LITE_WARM["workers"]
            / SWE_BENCH_LITE_WARM["tasks"],
        },
    }
    show(result)
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    out.print(f"JSON: {a.json}; the run's log: {home / 'eval.log'}")


def show(r: dict[str, Any]) -> None:
    gb = 1e9
    sb = r["swe_bench"]
    t = Table(
        title=f"cold gold run: {len(r['tasks'])} tasks of {r['dataset']}, {r['workers']} workers"
    )
    for col in ("figure", "swebounty (measured)", "SWE-bench (published)"):
        t.add_column(col, justify="left" if col == "figure" else "right")
    per_env = r.get("env_own_bytes_mean", 0) / gb
    n_segments = len(r.get("segments", []))
    pieces = f" ({n_segments} segments)" if n_segments > 1 else ""
    rows = [
        ("wall time", f"{r['wall_s'] / 60:.1f} min{pieces}", "images: build first; then ~15 min / 300 on 12"),
        ("CPU-seconds per task (cold)", f"{r['cpu_s_per_task']:.0f}", "—"),
        ("machine busy CPU-seconds (all work)", f"{r.get('machine_busy_s', 0):.0f}", "—"),
        ("worker-seconds per task", f"{r['wall_s'] * r['workers'] / len(r['tasks']):.0f} (cold)",
         f"{sb['warm_worker_s_per_task']:.0f} (warm, images built)"),
        ("distinct environments", str(r.get("environments", 0)), f"{len(r['tasks'])} instance images"),
        ("projects built per task (compiled)", str(r.get("projects_built_per_task", 0)), "in image"),
        ("disk: swebounty cache", f"{r['disk']['cache_bytes'] / gb:.2f} GB",
         f"{sb['images_for_these_tasks_bytes'] / gb:.0f} GB ({sb['image_bytes'] / gb:.1f} GB each)"),
        ("disk: uv cache", f"{(r['disk']['uv_cache_bytes'] or 0) / gb:.2f} GB", "—"),
        ("disk per environment (own)", f"{per_env:.2f} GB", f"{sb['image_bytes'] / gb:.1f} GB"),
        ("resolved (gold)", f"{r['resolved']}/{r['evaluated']}", "—"),
    ]  # fmt: skip
    for row in rows:
        t.add_row(*row)
    out.print(t)
    repos = Table(title="per repository")
    for col in ("repository", "tasks", "resolved", "unresolved", "error", "not run"):
        repos.add_column(col, justify="left" if col == "repository" else "right")
    for repo, row in sorted(r.get("per_repo", {}).items(), key=lambda kv: -kv[1]["tasks"]):
        repos.add_row(
            repo, *(str(row[k]) for k in ("tasks", "resolved", "unresolved", "error", "not run"))
        )
    out.print(repos)
    if r["misses"]:
        m = Table(title="not resolved, by class")
        m.add_column("class")
        m.add_column("tasks", justify="right")
        m.add_column("instances")
        for miss in r["misses"]:
            m.add_row(miss["class"], str(miss["count"]), ", ".join(miss["instances"]))
        out.print(m)


if __name__ == "__main__":
    main()
