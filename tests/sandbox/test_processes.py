"""Time and processes: timeouts kill whole trees and their daemons, process counts and memory
are bounded, a fork bomb ends at its timeout and leaves nothing.
"""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest

from sandbox.helpers import (
    PYTHON,
    World,
    _attack,
    _require_bwrap,
    _run,
    _submit,
    _survivors,
)
from swebounty.sandbox import (
    BwrapSandbox,
    Policy,
    RunResult,
    Sandbox,
    UnsafeSandbox,
)
from swebounty.sandbox._cgroups import RunCgroups

DAEMON = """
import signal, subprocess, time
marker, mode = sys.argv[2], sys.argv[3]
daemon = '''
import os, sys, time
parent = os.getppid()
os.write(1, b"daemon up\\\\n")
while os.getppid() == parent:
    time.sleep(0.02)
time.sleep(0.3)
open(sys.argv[1], "w").write("survived")
'''
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", daemon, marker, sys.argv[1]],
                         start_new_session=True, stdout=subprocess.PIPE)
print(child.stdout.readline().decode().strip(), flush=True)
if mode == "hang":
    while True:
        time.sleep(1)
"""


def _daemon_attack(world: World, sb: Sandbox, mode: str, timeout_s: float) -> RunResult:
    _submit(world, sb, "attack.py", DAEMON)
    marker = world.ws / "marker.txt"
    result = _run(
        world, sb, [PYTHON, "attack.py", world.token, str(marker), mode], timeout_s=timeout_s
    )
    assert "daemon up" in result.stdout, result.stderr
    # Nothing of the run is left, so nothing can write the marker later.
    assert _survivors(world.token) == []
    assert not marker.exists()
    return result


@pytest.mark.sandbox
def test_timeout_kills_a_command_that_ignores_sigterm_and_its_setsid_daemon(
    world: World, bwrap: BwrapSandbox
) -> None:
    result = _daemon_attack(world, bwrap, "hang", timeout_s=1.5)
    assert result.timed_out
    assert 1.5 <= result.seconds < 5


@pytest.mark.sandbox
def test_a_daemon_does_not_outlive_its_command(world: World, bwrap: BwrapSandbox) -> None:
    result = _daemon_attack(world, bwrap, "exit", timeout_s=30)
    assert not result.timed_out
    assert result.returncode == 0
    assert result.seconds < 5


def _can_track_trees() -> bool:
    groups = RunCgroups(max_procs=10, memory_bytes=1 << 30)
    try:
        return bool(groups.dirs)
    finally:
        groups.remove()


def test_unsafe_timeout_kills_the_whole_tree(world: World) -> None:
    if not _can_track_trees():
        pytest.skip("without cgroups (root) the unsafe backend cannot find setsid'd children")
    result = _daemon_attack(world, UnsafeSandbox(), "hang", timeout_s=1.5)
    assert result.timed_out
    assert result.seconds < 5


def test_unsafe_kills_leftovers_when_the_command_exits(world: World) -> None:
    if not _can_track_trees():
        pytest.skip("without cgroups (root) the unsafe backend cannot find setsid'd children")
    result = _daemon_attack(world, UnsafeSandbox(), "exit", timeout_s=30)
    assert result.returncode == 0
    assert not result.timed_out


FORK_TEST_SLOT = 7

FORK_COUNT = """
import time
reader, writer = os.pipe()
count, failure = 0, None
while count < 10_000:
    try:
        pid = os.fork()
    except OSError as e:
        failure = e.errno
        break
    if pid == 0:
        os.read(reader, 1)  # blocks until the sandbox is torn down
        os._exit(0)
    count += 1
print("RESULTS=" + json.dumps({"count": count, "errno": failure}), flush=True)
"""

FORK_BOMB = """
import time
print("bombing", flush=True)
while True:
    try:
        os.fork()
    except OSError:
        pass
"""


@pytest.fixture
def private_uid_bwrap() -> BwrapSandbox:
    """A sandbox uid no other test of this process is using (RLIMIT_NPROC counts the uid
    machine-wide); other processes never use it: the uid is leased (sandbox/_lease.py)."""
    _require_bwrap()
    return BwrapSandbox(slot=FORK_TEST_SLOT)


@pytest.mark.sandbox
def test_process_count_is_bounded(world: World, private_uid_bwrap: BwrapSandbox) -> None:
    res = _attack(world, private_uid_bwrap, FORK_COUNT, max_procs=40)
    assert res["errno"] == errno.EAGAIN
    assert 0 < res["count"] < 40


@pytest.mark.sandbox
def test_fork_bomb_ends_at_its_timeout_and_leaves_nothing(
    world: World, private_uid_bwrap: BwrapSandbox
) -> None:
    _submit(world, private_uid_bwrap, "attack.py", FORK_BOMB)
    argv = [PYTHON, "attack.py", world.token]
    result = _run(world, private_uid_bwrap, argv, timeout_s=1.5, max_procs=40)
    assert "bombing" in result.stdout
    assert result.timed_out
    assert result.seconds < 5
    assert _survivors(world.token) == []
    assert subprocess.run(["true"], check=False).returncode == 0  # the host still forks


MEMORY = """
attempt("allocate", lambda: len(bytearray(1 << 30)))
report()
"""


@pytest.mark.sandbox
def test_memory_is_bounded(world: World, bwrap: BwrapSandbox) -> None:
    res = _attack(world, bwrap, MEMORY, memory_bytes=512 << 20)
    assert res["allocate"]["error"] == "MemoryError"


@pytest.mark.parametrize(
    ("stderr", "stdout", "retried"),
    [
        ("bwrap: Creating new namespace failed: Resource temporarily unavailable\n", "", True),
        ("bwrap: Can't fork for pid 1: Resource temporarily unavailable\n", "", True),
        # Output means the command ran: whatever it printed, its run is the result.
        ("bwrap: Can't fork for pid 1: Resource temporarily unavailable\n", "1 passed", False),
        ("bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n", "", False),
    ],
)
def test_bwrap_at_the_uid_s_process_limit_is_retried(
    monkeypatch: pytest.MonkeyPatch, stderr: str, stdout: str, retried: bool
) -> None:
    # As an ordinary user every sandbox shares the uid's process count: right after a fork bomb
    # bwrap may fail to create its namespaces or to fork pid 1 (EAGAIN); it is started again.
    from swebounty.sandbox import bwrap as bwrap_mod

    calls: list[int] = []

    def once(self: object, argv: list[str], **kw: object) -> RunResult:
        calls.append(1)
        if len(calls) == 1:
            return RunResult(returncode=1, stdout=stdout, stderr=stderr)
        return RunResult(returncode=0, stdout="ok")

    monkeypatch.setattr(bwrap_mod.BwrapSandbox, "_run_once", once)
    monkeypatch.setattr(bwrap_mod.time, "sleep", lambda s: None)
    sandbox = object.__new__(bwrap_mod.BwrapSandbox)
    result = sandbox.run(["true"], workdir=Path("/"), mounts=[], policy=Policy())
    assert (len(calls), result.returncode) == ((2, 0) if retried else (1, 1))
