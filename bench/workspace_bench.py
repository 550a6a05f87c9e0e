"""Time history-free workspace creation on a generated 1,000-file repo with 50 commits.

Compares `repos.make_workspace` (pack only the tree's objects) with the `git archive | tar`
+ `git add` + `git commit` alternative. Prints the median of N runs for each.

    python bench/workspace_bench.py [--files 1000] [--commits 50] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from swebounty.repos import isolated_git_env, make_workspace

ENV = isolated_git_env()


def git(repo: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], env=ENV, check=True, **kw)  # type: ignore[call-overload,no-any-return]


def generate(root: Path, files: int, commits: int) -> str:
    """A repo whose first commit adds `files` files and later commits each change 2%."""
    rng = random.Random(0)
    git(root, "init", "-q", "-b", "main")
    names = [f"pkg{i % 25}/mod{i}.py" for i in range(files)]
    for c in range(commits):
        touched = names if c == 0 else rng.sample(names, max(1, files // 50))
        for name in touched:
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            body = "".join(f"VALUE_{c}_{j} = {rng.random()!r}\n" for j in range(40))
            path.write_text(f'"""{name}, revision {c}."""\n{body}')
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"commit {c}")
    git(root, "gc", "-q")  # a real mirror is packed
    out = git(root, "rev-parse", "HEAD~10", capture_output=True).stdout
    return str(out.decode().strip())


def archive_way(mirror: Path, commit: str, dest: Path) -> None:
    dest.mkdir()
    git(dest, "init", "-q", "--template=", "-b", "main")
    archive = subprocess.Popen(
        ["git", "-C", str(mirror), "archive", commit], stdout=subprocess.PIPE, env=ENV
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    archive.wait()
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "--no-gpg-sign", "-m", "base")


def median_seconds(fn: Callable[[Path], object], runs: int, scratch: Path) -> float:
    times = []
    for i in range(runs):
        dest = scratch / f"ws{i}"
        start = time.perf_counter()
        fn(dest)
        times.append(time.perf_counter() - start)
        shutil.rmtree(dest)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        mirror = root / "mirror"
        mirror.mkdir()
        commit = generate(mirror, args.files, args.commits)
        scratch = root / "scratch"
        scratch.mkdir()
        print(f"repo: {args.files} files, {args.commits} commits; median of {args.runs} runs")
        pack = median_seconds(lambda d: make_workspace(mirror, commit, d), args.runs, scratch)
        print(f"  make_workspace (pack tree objects): {pack * 1000:7.1f} ms")
        arch = median_seconds(lambda d: archive_way(mirror, commit, d), args.runs, scratch)
        print(f"  git archive | tar + add + commit:   {arch * 1000:7.1f} ms")
        print(f"  cpus: {os.cpu_count()}")


if __name__ == "__main__":
    main()
