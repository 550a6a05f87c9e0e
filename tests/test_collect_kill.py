"""SIGKILL in the middle of `validate`, twice: the resumed run ends with the same tasks as an
uninterrupted one, and no candidate decided before a kill is validated again.

The validation runs in a real subprocess (killed with SIGKILL, no cleanup of any kind), with a
scripted test runner that takes a little time per run, so the kills land mid-run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from repo_helpers import base_clones

SCRIPT = r"""
import json, sys, time
from dataclasses import dataclass, field
from pathlib import Path
from swebounty.collect.batch import validate
from swebounty.tasks import Task

out, calls, n, repos = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])

@dataclass
class Outcome:
    status: str
    message: str = ""

@dataclass
class Run:
    outcomes: dict = field(default_factory=dict)
    exit_code: int = 0
    error: str = None
    patch_error: str = None
    env_key: str = "env"

@dataclass
class Ctx:
    runs_dir: Path
    repos_dir: Path = None
    cache_dir: Path = Path("/nonexistent")
    envs: object = field(default_factory=lambda: type("Envs", (), {"overrides": []})())

TEST_PATCH = ("diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n"
              "@@ -1 +1,2 @@\n x = 1\n+def test_a(): pass\n")

def runner(task, patch, ctx, log_dir):
    with calls.open("a") as fh:
        fh.write(f"{task.instance_id} {log_dir.name}\n")
    time.sleep(0.05)
    k = int(task.instance_id.split("-")[1])
    if k % 3 == 0:  # no test fails before: rejected after one run each
        return Run({"tests/t.py::test_a": Outcome("passed")})
    before = {"tests/t.py::test_a": Outcome("failed"), "tests/t.py::test_b": Outcome("passed")}
    after = {"tests/t.py::test_a": Outcome("passed"), "tests/t.py::test_b": Outcome("passed")}
    return Run(after if patch else before)

tasks = [Task(instance_id=f"r{i % 4}__x-{i}", repo=f"r{i % 4}/x", base_commit="abc",
              patch="diff", test_patch=TEST_PATCH, ecosystem="python")
         for i in range(n)]
validate(tasks, out, Ctx(out.parent, repos), runner=runner, workers=2)
"""

N = 24


def _start(root: Path) -> subprocess.Popen[bytes]:
    script = root.parent / "validate_script.py"
    script.write_text(SCRIPT)
    root.mkdir(exist_ok=True)
    repos = base_clones(root.parent / "repos", [f"r{i}/x" for i in range(4)])
    return subprocess.Popen(
        [
            sys.executable,
            str(script),
            str(root / "tasks.jsonl"),
            str(root / "calls.txt"),
            str(N),
            str(repos),
        ],
        start_new_session=True,
    )


def _decided(root: Path) -> set[str]:
    ids = set()
    for name in ("tasks.jsonl.partial", "tasks.rejects.jsonl.partial"):
        path = root / name
        if path.exists():
            for line in path.read_text().splitlines():
                with contextlib.suppress(json.JSONDecodeError, KeyError):  # a torn line
                    ids.add(json.loads(line)["instance_id"])
    return ids


def _kill_when(root: Path, proc: subprocess.Popen[bytes], decided: int) -> set[str]:
    deadline = time.monotonic() + 120
    while len(_decided(root)) < decided:
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return _decided(root)


def _result(root: Path) -> tuple[dict[str, object], dict[str, str]]:
    tasks = {}
    for line in (root / "tasks.jsonl").read_text().splitlines():
        t = json.loads(line)
        tasks[t["instance_id"]] = (t["FAIL_TO_PASS"], t["PASS_TO_PASS"])
    rejects = {}
    for line in (root / "tasks.rejects.jsonl").read_text().splitlines():
        r = json.loads(line)
        rejects[r["instance_id"]] = r["stage"]
    return tasks, rejects


@pytest.mark.slow
def test_validate_killed_twice_ends_as_an_uninterrupted_run(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    assert _start(whole).wait() == 0
    expected = _result(whole)
    assert len(expected[0]) + len(expected[1]) == N

    killed = tmp_path / "killed"
    calls = killed / "calls.txt"
    first = _kill_when(killed, _start(killed), 4)
    after_first = len(calls.read_text().splitlines())
    second = _kill_when(killed, _start(killed), len(first) + 5)
    after_second = len(calls.read_text().splitlines())
    assert len(first) < len(second) < N
    assert not (killed / "tasks.jsonl").exists()  # never finished before the last run
    assert _start(killed).wait() == 0

    assert _result(killed) == expected
    lines = (killed / "tasks.jsonl").read_text().splitlines()
    lines += (killed / "tasks.rejects.jsonl").read_text().splitlines()
    assert len(lines) == N  # each candidate once, no torn or repeated line
    # A validation starts with its first before-run. A candidate decided before a kill never
    # starts again; only those the kill caught mid-way do (at most one per worker).
    log = calls.read_text().splitlines()

    def starts(segment: list[str]) -> Counter[str]:
        return Counter(x.split()[0] for x in segment if x.endswith(" before-1"))

    assert set(starts(log)) == {f"r{i % 4}__x-{i}" for i in range(N)}
    assert not set(starts(log[after_first:])) & first
    assert not set(starts(log[after_second:])) & second
    assert sum(starts(log).values()) - N <= 4
