"""Concurrent workers get sandboxes with different host uids, so they cannot starve each other."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from swebounty.sandbox import Mount, Policy, RunResult, bwrap_available, get_sandbox

OK, WHY = bwrap_available()
pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(not OK, reason=f"no bwrap sandbox: {WHY}")]

PREFIXES = sorted({Path(sys.prefix), Path(sys.base_prefix)})  # a venv and its interpreter
BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
SPAWN = "import subprocess, sys\nsys.exit(subprocess.run(['/bin/true']).returncode)\n"


def _workdir(tmp_path: Path, name: str, code: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "main.py").write_text(code)
    return d


# An ordinary user has one uid: bwrap maps every slot to it (CI's unprivileged pass runs these).
root_only = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root can give each worker its own host uid"
)


@root_only
def test_slots_have_distinct_uids() -> None:
    uids = {getattr(get_sandbox("bwrap", slot), "uid", None) for slot in range(3)}
    assert len(uids) == 3 and 0 not in uids


@root_only
def test_a_fork_bomb_starves_its_own_uid_but_not_the_next_slot(tmp_path: Path) -> None:
    bomber, same, other = get_sandbox("bwrap", 0), get_sandbox("bwrap", 0), get_sandbox("bwrap", 1)
    policy = Policy(timeout_s=12, max_procs=64)
    bomb_dir = _workdir(tmp_path, "bomb", BOMB)
    bomber.prepare_workdir(bomb_dir)
    done: list[RunResult] = []

    def bomb() -> None:
        done.append(
            bomber.run(
                [sys.executable, "main.py"],
                workdir=bomb_dir,
                mounts=[Mount(path=p) for p in PREFIXES],
                policy=policy,
            )
        )

    thread = threading.Thread(target=bomb)
    thread.start()
    time.sleep(3)  # the bomb fills its uid's process budget within milliseconds
    results = {}
    for name, sandbox in (("same", same), ("other", other)):
        d = _workdir(tmp_path, name, SPAWN)
        sandbox.prepare_workdir(d)
        try:
            res = sandbox.run(
                [sys.executable, "main.py"],
                workdir=d,
                mounts=[Mount(path=p) for p in PREFIXES],
                policy=Policy(timeout_s=3, max_procs=64),
            )
            results[name] = res.returncode
        except Exception:  # a launch that cannot even fork is a failure too
            results[name] = -1
    thread.join()
    assert done and done[0].timed_out
    assert results["other"] == 0, "a worker with its own uid must not be starved"
    assert results["same"] != 0, "control: the same uid is starved (else this test proves nothing)"


LEASE_HOLDER = """
import sys
from swebounty.sandbox._lease import leased_uid
print(leased_uid(0), leased_uid(1), flush=True)
sys.stdin.read()  # hold the leases until the test closes stdin
"""


def test_concurrent_processes_lease_distinct_uids_and_release_them_on_exit() -> None:
    if os.geteuid() != 0:
        pytest.skip("only root leases uids: an ordinary user's sandboxes run as that user")
    from swebounty.sandbox._lease import LEASE_BASE, LEASE_COUNT, leased_uids

    mine = {get_sandbox("bwrap", slot).uid for slot in range(2)}  # type: ignore[attr-defined]
    holders = [
        subprocess.Popen(
            [sys.executable, "-c", LEASE_HOLDER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        theirs = [set(map(int, p.stdout.readline().split())) for p in holders]  # type: ignore[union-attr]
    finally:
        for p in holders:
            p.communicate("")
    everyone = [mine, *theirs]
    assert all(len(s) == 2 for s in everyone)
    assert len(set().union(*everyone)) == 8, "no two processes (or slots) share a uid"
    assert all(LEASE_BASE <= u < LEASE_BASE + LEASE_COUNT for u in set().union(*everyone))
    assert mine <= set(leased_uids().values())
    # The holders are gone, so their leases are free again: a lock is never stale.
    from swebounty.sandbox._lease import LOCK_DIRS

    for uid in set().union(*theirs):
        lock = next(d for d in LOCK_DIRS if (d / f"uid-{uid}.lock").exists()) / f"uid-{uid}.lock"
        with open(lock) as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held


def test_a_forked_child_leases_its_own_uid() -> None:
    if os.geteuid() != 0:
        pytest.skip("only root leases uids")
    parent = get_sandbox("bwrap", 0).uid  # type: ignore[attr-defined]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.write(write, str(get_sandbox("bwrap", 0).uid).encode())  # type: ignore[attr-defined]
        finally:
            os._exit(0)
    os.close(write)
    child = int(os.read(read, 100))
    os.close(read)
    os.waitpid(pid, 0)
    assert child != parent


SLEEPER = """
import sys, tempfile
from pathlib import Path
from swebounty.sandbox import Mount, Policy, get_sandbox
sandbox = get_sandbox("bwrap", 0)
print(getattr(sandbox, "uid", -1), flush=True)
with tempfile.TemporaryDirectory() as tmp:
    sandbox.prepare_workdir(Path(tmp))
    sandbox.run(["/bin/sleep", "300"], workdir=Path(tmp), mounts=[], policy=Policy(timeout_s=300))
"""


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            ppid = next(line for line in status.splitlines() if line.startswith("PPid:"))
            parents[int(entry.name)] = int(ppid.split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_killed_harness_takes_its_sandbox_and_its_uid_with_it() -> None:
    """A harness killed mid-run (a Ray worker, a SIGKILLed CLI) leaves no sandbox running: no
    process outlives the timeout nobody enforces any more, nor keeps the uid busy."""
    harness = subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
    with harness.stdout:  # type: ignore[union-attr]
        uid = int(harness.stdout.readline())  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            _cmdline(p).startswith("/bin/sleep") for p in _descendants(harness.pid)
        ):
            time.sleep(0.05)
        sandbox = _descendants(harness.pid)
        assert sandbox, "the sandbox never started"
        harness.kill()
        harness.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in sandbox):
        time.sleep(0.05)
    assert not [p for p in sandbox if _alive(p)], "the sandbox outlived its harness"
    if os.geteuid() == 0 and uid >= 0:  # a leased uid: no process keeps it busy once reaped
        from swebounty.sandbox._lease import _uids_with_processes

        while time.monotonic() < deadline and uid in _uids_with_processes():
            time.sleep(0.05)
        assert uid not in _uids_with_processes()


def test_the_groups_of_a_dead_harness_are_emptied_and_removed() -> None:
    """What raced the parent-death signal (a sandbox still starting when its harness died) is
    found by its cgroup, named for the dead harness, and killed by the next harness."""
    from swebounty.sandbox import _cgroups

    mounts, own = _cgroups._mounts(), _cgroups._own_paths()
    if os.geteuid() != 0 or "pids" not in mounts:
        pytest.skip("needs root and a cgroup v1 pids hierarchy")
    parent = mounts["pids"] / own.get("pids", "/").lstrip("/")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    tag = f"h{_cgroups._pid_namespace()}.{int(dead.stdout)}"
    group = parent / f"swebounty-{tag}-0123456789ab"
    group.mkdir()
    left = subprocess.Popen(["sleep", "300"])
    try:
        (group / "cgroup.procs").write_text(str(left.pid))
        _cgroups.sweep_orphans(parent)
        assert left.wait(timeout=10) == -9
        assert not group.exists()
    finally:
        left.kill()
        left.wait()
        if group.exists():
            group.rmdir()
