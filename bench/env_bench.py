"""Environment build times, reuse times and disk, on a small generated repo or on real tasks.

    python bench/env_bench.py                       # a generated pure-Python repo (needs PyPI)
    python bench/env_bench.py DATASET --repos-dir DIR [-i ID ...] [--tests] [--cache DIR]

For each task: infer the spec, build the environment (cold: empty swebounty cache; uv's own
download cache may be warm), reuse it (warm: a new EnvManager on the same cache), make the
per-task layer, and with --tests apply the gold and test patches and run FAIL_TO_PASS and
PASS_TO_PASS *without a sandbox* (a check of the environment, not an evaluation; use
`swebounty eval` for that).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from swebounty.envs import EnvBuildError, EnvManager
from swebounty.tasks import Task, load_tasks


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def make_workspace(repo: Path, commit: str, dest: Path) -> datetime:
    """A history-free checkout of `commit` (like swebounty's workspaces); returns its date."""
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", f"--git-dir={repo}", "archive", commit], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    when = git(f"--git-dir={repo}", "log", "-1", "--format=%cI", commit).strip()
    git("init", "-q", cwd=dest)
    git("add", "-A", cwd=dest)
    git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base", cwd=dest)
    return datetime.fromisoformat(when)


def find_repo(repos: Path, name: str) -> Path:
    for cand in (repos / name.replace("/", "__"), repos / name):
        if (cand / ".git").is_dir():
            return cand / ".git"
        if (cand / "HEAD").is_file():
            return cand
    raise SystemExit(f"no clone of {name} under {repos}")


def run_tests(task: Task, ws: Path, scratch: Path, manager: EnvManager, env_obj: object) -> str:
    for patch in (task.test_patch, task.patch):
        proc = subprocess.run(["git", "apply", "-"], cwd=ws, input=patch, text=True)
        if proc.returncode:
            return "patch failed"
    tenv = manager.for_task(env_obj, ws, scratch)  # type: ignore[arg-type]
    if tenv.setup_argv:
        proc = subprocess.run(tenv.setup_argv, cwd=ws, env=tenv.env, capture_output=True, text=True)
        if proc.returncode:
            return f"setup failed: {proc.stderr[-300:]}"
    files = sorted({t.split("::")[0] for t in task.FAIL_TO_PASS + task.PASS_TO_PASS if "::" in t})
    proc = subprocess.run(
        [*tenv.test_prefix, "-rA", "-v", "-p", "no:cacheprovider", *files],
        cwd=ws,
        env=tenv.env,
        capture_output=True,
        text=True,
    )
    passed: set[str] = set()
    for line in proc.stdout.splitlines():
        if line.startswith(("PASSED ", "XFAIL ")):  # -rA summary (pytest >= 5)
            passed.add(line.split(" ", 1)[1].strip())
        elif " PASSED" in line and "::" in line:  # verbose lines (older pytest, addopts -v)
            passed.add(line.rsplit(" PASSED", 1)[0].strip())

    def ok(test_id: str) -> bool:
        return test_id in passed or any(p.startswith(test_id) for p in passed)

    bad = [t for t in task.FAIL_TO_PASS + task.PASS_TO_PASS if not ok(t)]
    if not bad:
        return "resolved"
    return f"{len(bad)} not passing, e.g. {bad[:2]} (exit {proc.returncode}) {proc.stdout[-300:]}"


def bench_tasks(args: argparse.Namespace) -> None:
    tasks, _ = load_tasks(args.dataset)
    if args.instance:
        tasks = [t for t in tasks if t.instance_id in args.instance]
    cache = Path(args.cache or tempfile.mkdtemp(prefix="swebounty-envcache-"))
    rows: list[dict[str, Any]] = []
    for task in tasks:
        with tempfile.TemporaryDirectory(prefix="swebounty-bench-") as tmp:
            ws = Path(tmp) / "ws"
            try:
                repo = find_repo(Path(args.repos_dir), task.repo)
                when = make_workspace(repo, task.base_commit, ws)
            except (SystemExit, subprocess.CalledProcessError) as exc:
                rows.append({"task": task.instance_id, "error": f"workspace: {exc}"})
                continue
            manager = EnvManager(cache)
            t0 = time.monotonic()
            spec = manager.spec_for(task, ws, when)
            try:
                env = manager.ensure(spec, ws)
            except EnvBuildError as exc:
                rows.append({"task": task.instance_id, "error": str(exc)[-2000:]})
                print(json.dumps(rows[-1], indent=1), flush=True)
                continue
            cold = time.monotonic() - t0
            t0 = time.monotonic()
            warm_mgr = EnvManager(cache)
            warm_env = warm_mgr.ensure(warm_mgr.spec_for(task, ws, when), ws)
            warm = time.monotonic() - t0
            t0 = time.monotonic()
            tenv = warm_mgr.for_task(warm_env, ws, Path(tmp) / "scratch")
            layer = time.monotonic() - t0
            row = {
                "task": task.instance_id,
                "env": env.key,
                "python": env.interpreter,
                "cold_s": round(cold, 1),
                "warm_s": round(warm, 3),
                "layer_s": round(layer, 4),
                "setup": "pip" if tenv.setup_argv else "pth",
                "disk_mb": round((env.size_bytes or 0) / 1e6),
                "own_mb": round((env.own_bytes or 0) / 1e6),
                "why": env.why[-4:],
            }
            if args.tests:
                row["tests"] = run_tests(task, ws, Path(tmp) / "scratch", warm_mgr, warm_env)
            rows.append(row)
            print(json.dumps(row, indent=1), flush=True)
    print(f"\ncache: {cache}")
    for r in rows:
        print(
            f"{r['task']:40} {r.get('python', '-'):8} cold {r.get('cold_s', '-'):>6} "
            f"warm {r.get('warm_s', '-'):>6} {r.get('setup', '')} {r.get('disk_mb', '-')} MB "
            f"({r.get('own_mb', '-')} MB own) "
            f"{r.get('tests', r.get('error', ''))[:100]}"
        )


def bench_generated() -> None:
    """Cold and warm numbers for a generated pure-Python repo with a test extra."""
    with tempfile.TemporaryDirectory(prefix="swebounty-bench-") as tmp:
        ws = Path(tmp) / "ws"
        (ws / "src" / "mini").mkdir(parents=True)
        (ws / "src" / "mini" / "__init__.py").write_text("def f():\n    return 1\n")
        (ws / "tests").mkdir()
        (ws / "tests" / "test_mini.py").write_text(
            "import mini\n\ndef test_f():\n    assert mini.f() == 1\n"
        )
        (ws / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
            '[project]\nname = "mini"\nversion = "1.0"\nrequires-python = ">=3.8"\n'
            'dependencies = ["attrs"]\n[project.optional-dependencies]\ntest = ["pytest"]\n'
        )
        git("init", "-q", cwd=ws)
        git("add", "-A", cwd=ws)
        git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base", cwd=ws)
        task = Task(instance_id="mini-1", repo="bench/mini", base_commit="HEAD")
        when = datetime.fromisoformat("2023-06-01T12:00:00+00:00")
        cache = Path(tmp) / "cache"
        t0 = time.monotonic()
        manager = EnvManager(cache)
        env = manager.ensure(manager.spec_for(task, ws, when), ws)
        cold = time.monotonic() - t0
        warms, layers, runs = [], [], []
        for i in range(3):
            t0 = time.monotonic()
            m = EnvManager(cache)
            e = m.ensure(m.spec_for(task, ws, when), ws)
            warms.append(time.monotonic() - t0)
            t0 = time.monotonic()
            tenv = m.for_task(e, ws, Path(tmp) / f"scratch{i}")
            layers.append(time.monotonic() - t0)
            t0 = time.monotonic()
            subprocess.run(
                [*tenv.test_prefix, "-q", "tests"],
                cwd=ws,
                env=tenv.env,
                check=True,
                capture_output=True,
            )
            runs.append(time.monotonic() - t0)
        print(
            f"interpreter {env.interpreter}; project install: {env.project.mode if env.project else '-'}"
        )
        print(f"cold build (empty swebounty cache): {cold:.1f} s")
        print(f"warm reuse (new manager, spec + ensure), median of 3: {sorted(warms)[1]:.3f} s")
        print(f"per-task layer, median of 3: {sorted(layers)[1] * 1000:.1f} ms")
        print(f"pytest of 1 test through the layer, median of 3: {sorted(runs)[1]:.2f} s")
        print(
            f"disk per environment: {(env.size_bytes or 0) / 1e6:.0f} MB, of which "
            f"{(env.own_bytes or 0) / 1e6:.0f} MB not shared with uv's cache"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("dataset", nargs="?")
    parser.add_argument("--repos-dir")
    parser.add_argument("-i", "--instance", action="append")
    parser.add_argument("--cache")
    parser.add_argument("--tests", action="store_true")
    args = parser.parse_args()
    if args.dataset:
        if not args.repos_dir:
            sys.exit("--repos-dir is needed with a dataset")
        bench_tasks(args)
    else:
        bench_generated()


if __name__ == "__main__":
    main()
