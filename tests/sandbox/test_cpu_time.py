"""The CPU time of a sandboxed command is counted, child processes and all: bwrap's monitor
exits without reaping the sandbox's pid 1, so getrusage() alone misses it (the funnel of issue
28 said 1 CPU-second for six pytest runs); the run's cgroup measures it.
"""

from __future__ import annotations

import os
import resource

import pytest

from sandbox.helpers import PYTHON, World, _run, _submit
from swebounty.collect.costs import Meter, RunMeter
from swebounty.sandbox import BwrapSandbox, UnsafeSandbox
from swebounty.sandbox._process import unseen_cpu

# Burns `seconds` of CPU in the command and as much again in a child process it waits for.
BURN = """
import subprocess, sys, time
def burn(s):
    t = time.process_time()
    while time.process_time() - t < s:
        pass
burn(float(sys.argv[2]))
subprocess.run([sys.executable, "-c",
                "import time\\nt = time.process_time()\\nwhile time.process_time() - t < %s: pass"
                % sys.argv[2]], check=True)
report()
"""

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="per-run cgroups need root")


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@needs_root
def test_bwrap_run_counts_the_whole_tree(world: World, bwrap: BwrapSandbox) -> None:
    _submit(world, bwrap, "attack.py", BURN)
    meter, run_meter = Meter(), RunMeter()
    before = _children()
    result = _run(world, bwrap, [PYTHON, "attack.py", world.token, "0.6"])
    assert result.returncode == 0, result.stderr
    assert result.cpu_seconds is not None and result.cpu_seconds >= 1.15
    # What getrusage() saw plus what it missed is the whole tree's time, once.
    seen = _children() - before
    counted = meter.read()
    assert 1.15 <= counted["cpu_seconds"] <= result.cpu_seconds + seen + 0.5
    assert "cpu_unmeasured_runs" not in counted
    assert run_meter.read()["cpu_seconds"] >= 1.1


@needs_root
def test_unsafe_run_is_not_counted_twice(world: World) -> None:
    # The unsafe backend's command is the harness's own child: getrusage() sees it whole,
    # so nothing is added on top.
    sandbox = UnsafeSandbox()
    _submit(world, sandbox, "attack.py", BURN)
    unseen = unseen_cpu()[0]
    meter = Meter()
    result = _run(world, sandbox, [PYTHON, "attack.py", world.token, "0.4"])
    assert result.returncode == 0, result.stderr
    assert result.cpu_seconds is not None and result.cpu_seconds >= 0.75
    assert unseen_cpu()[0] - unseen < 0.2
    assert 0.75 <= meter.read()["cpu_seconds"] <= result.cpu_seconds + 0.5


@pytest.mark.skipif(ROOT, reason="as root every run has its cgroup")
def test_without_cgroups_a_run_is_said_unmeasured(world: World, bwrap: BwrapSandbox) -> None:
    _submit(world, bwrap, "attack.py", BURN)
    meter = Meter()
    result = _run(world, bwrap, [PYTHON, "attack.py", world.token, "0.1"])
    assert result.returncode == 0, result.stderr
    assert result.cpu_seconds is None
    assert meter.read()["cpu_unmeasured_runs"] >= 1
