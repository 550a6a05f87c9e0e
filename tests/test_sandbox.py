"""The sandbox holds against code from a submitted patch, run at test time.

Every attack is a file added by a patch (`git apply` in a real workspace repo) and executed
inside the sandbox with the harness's own interpreter, the way a test suite would run it. Where
an attack could succeed harmlessly without a sandbox, the same patch is also run under the
unsafe backend as a control: it proves the attack code really works, so a blocked attempt means
the sandbox blocked it.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import swebounty.sandbox as sandbox_pkg
from swebounty.sandbox import (
    BwrapSandbox,
    Mount,
    Policy,
    RunResult,
    Sandbox,
    SandboxError,
    UnsafeSandbox,
    bwrap_available,
    get_sandbox,
)
from swebounty.sandbox._cgroups import RunCgroups, sweep_stale
from swebounty.sandbox._process import CappedBuffer

PYTHON = sys.executable
PREFIXES = sorted({Path(sys.prefix), Path(sys.base_prefix)})
GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": "/nonexistent",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}

# Prepended to every attack: records each attempt's outcome and prints them as one JSON line.
PRELUDE = """\
import ctypes, errno, json, os, socket, sys
RESULTS = {}
def attempt(name, fn):
    try:
        RESULTS[name] = {"ok": True, "value": fn()}
    except BaseException as e:
        RESULTS[name] = {"ok": False, "error": type(e).__name__, "errno": getattr(e, "errno", None)}
def report():
    print("RESULTS=" + json.dumps(RESULTS, default=repr), flush=True)
LIBC = ctypes.CDLL(None, use_errno=True)
def checked(ret):
    if ret < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return ret
"""


def _require_bwrap() -> None:
    ok, why = bwrap_available()
    if not ok:
        pytest.skip(why)


@dataclass
class World:
    """A workspace next to things the sandboxed code must not reach."""

    ws: Path
    other_ws: Path
    dataset: Path
    store: Path
    outside: Path
    env_dir: Path
    out_dir: Path
    token: str

    def mounts(self) -> list[Mount]:
        return [
            *(Mount(path=p) for p in PREFIXES),
            Mount(path=self.env_dir),
            Mount(path=self.out_dir, writable=True),
        ]


def _git(repo: Path, *args: str, stdin: str | None = None) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args], env=GIT_ENV, input=stdin, text=True, check=True,
        capture_output=True,
    )  # fmt: skip


def _new_file_patch(name: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


@pytest.fixture
def world(tmp_path: Path) -> World:
    token = f"swebounty-attack-{uuid.uuid4().hex[:10]}"
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", "-b", "main")
    (ws / "README").write_text("a task's repo\n")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "base")
    other = tmp_path / "other-ws"
    other.mkdir()
    (other / "secret.txt").write_text("another task's workspace\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tasks.jsonl").write_text('{"instance_id": "x", "patch": "hidden"}\n')
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "runs.sqlite").write_bytes(b"SQLite format 3\x00 hidden verdicts")
    outside = tmp_path / "outside"
    env_dir = tmp_path / "env"
    out_dir = tmp_path / "out"
    for d in (outside, env_dir, out_dir):
        d.mkdir()
        # World-writable: only the sandbox's mounts may stop a write here, not permissions.
        d.chmod(0o777)
    (env_dir / "lib.py").write_text("VALUE = 1\n")
    return World(ws, other, tmp_path / "data" / "tasks.jsonl", tmp_path / "runs" / "runs.sqlite",
                 outside, env_dir, out_dir, token)  # fmt: skip


@pytest.fixture
def bwrap() -> BwrapSandbox:
    _require_bwrap()
    return BwrapSandbox()


def _submit(world: World, sb: Sandbox, name: str, code: str) -> None:
    """Apply a patch adding `name` to the workspace, then hand the workspace to the sandbox."""
    text = PRELUDE + textwrap.dedent(code) if name.endswith(".py") else textwrap.dedent(code)
    _git(world.ws, "apply", "-", stdin=_new_file_patch(name, text))
    sb.prepare_workdir(world.ws)
    sb.prepare_workdir(world.out_dir)


def _run(world: World, sb: Sandbox, argv: list[str], **policy: Any) -> RunResult:
    policy.setdefault("timeout_s", 30)
    return sb.run(argv, workdir=world.ws, mounts=world.mounts(), policy=Policy(**policy))


def _attack(world: World, sb: Sandbox, code: str, *args: str, **policy: Any) -> dict[str, Any]:
    _submit(world, sb, "attack.py", code)
    result = _run(world, sb, [PYTHON, "attack.py", world.token, *args], **policy)
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("RESULTS=")]
    assert lines, f"attack did not report (rc {result.returncode}): {result.stderr[-2000:]}"
    outcomes: dict[str, Any] = json.loads(lines[-1].removeprefix("RESULTS="))
    return outcomes


def _survivors(token: str) -> list[int]:
    """Host pids whose command line carries `token`, zombies excluded."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(entry.name))
    return found


def _blocked(outcome: dict[str, Any], *errnos: int) -> bool:
    return not outcome["ok"] and (not errnos or outcome["errno"] in errnos)


# --- identity and privileges ------------------------------------------------------------------

IDENTITY = """
status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines()
              if ":\\t" in line)
attempt("uid", os.getuid)
attempt("status", lambda: {k: status[k].strip() for k in
                           ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")})
attempt("home", lambda: os.environ["HOME"])
attempt("write_ws", lambda: open("made-inside.txt", "w").write("x"))
attempt("pid1", lambda: open("/proc/1/cmdline").read().split("\\0"))
report()
"""


@pytest.mark.sandbox
def test_runs_as_an_unprivileged_host_uid_without_capabilities(
    world: World, bwrap: BwrapSandbox
) -> None:
    res = _attack(world, bwrap, IDENTITY)
    status = res["status"]["value"]
    assert status["CapEff"] == status["CapPrm"] == status["CapBnd"] == "0000000000000000"
    assert status["CapAmb"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"
    assert status["Seccomp"] == "2"
    assert res["home"]["value"] == "/tmp"
    # The host sees what the sandbox wrote as owned by a non-root uid.
    owner = (world.ws / "made-inside.txt").stat().st_uid
    assert owner == bwrap.uid
    assert owner != 0
    # Host paths in bwrap's command line are visible inside; the staging dir holds no secret
    # and is gone once the run is over.
    stage = [Path(a) for a in res["pid1"]["value"] if "swebounty-stage-" in a]
    assert all(not p.exists() for p in stage)
    assert str(world.ws) not in res["pid1"]["value"], "mount paths go through --args, not argv"


# --- network ----------------------------------------------------------------------------------

NETWORK_TEST = """
import json, socket, sys
from pathlib import Path

TCP_PORT, UDP_PORT, MODE, OUT = {tcp}, {udp}, "{mode}", "{out}"

def test_reach_the_network():
    def tcp_host():
        with socket.create_connection(("127.0.0.1", TCP_PORT), timeout=3):
            return "connected"
    def udp_host():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            return s.sendto(b"{token}", ("127.0.0.1", UDP_PORT))
    def dns():
        return socket.getaddrinfo("pypi.org", 443)
    def tcp_internet():
        with socket.create_connection(("1.1.1.1", 53), timeout=3):
            return "connected"
    def udp_internet():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            return s.sendto(b"x", ("8.8.8.8", 53))
    def localhost_inside():
        with socket.socket() as srv:
            srv.bind(("localhost", 0))
            srv.listen()
            with socket.create_connection(("localhost", srv.getsockname()[1]), timeout=3):
                return "ok"
    attempts = dict(tcp_host=tcp_host, udp_host=udp_host, localhost_inside=localhost_inside)
    if MODE == "sandbox":
        attempts.update(dns=dns, tcp_internet=tcp_internet, udp_internet=udp_internet)
    results = {{}}
    for name, fn in attempts.items():
        try:
            results[name] = {{"ok": True, "value": repr(fn())}}
        except OSError as e:
            results[name] = {{"ok": False, "error": type(e).__name__, "errno": e.errno}}
    Path(OUT).write_text(json.dumps(results))
"""


def _network_attack(world: World, sb: Sandbox, mode: str) -> tuple[dict[str, Any], bytes | None]:
    with (
        socket.socket() as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        udp.bind(("127.0.0.1", 0))
        out = world.out_dir / "network.json"
        code = NETWORK_TEST.format(
            tcp=tcp.getsockname()[1], udp=udp.getsockname()[1], mode=mode, out=out,
            token=world.token,
        )  # fmt: skip
        _submit(world, sb, "test_network.py", code)
        junit = world.out_dir / "junit.xml"
        result = _run(
            world, sb,
            [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
             "test_network.py"],
        )  # fmt: skip
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert junit.exists()
        # Loopback delivery is synchronous: whatever was sent has arrived by now.
        udp.setblocking(False)
        try:
            received: bytes | None = udp.recv(100)
        except BlockingIOError:
            received = None
        results: dict[str, Any] = json.loads(out.read_text())
        return results, received


@pytest.mark.sandbox
def test_a_patched_test_cannot_reach_the_network(world: World, bwrap: BwrapSandbox) -> None:
    res, udp_received = _network_attack(world, bwrap, "sandbox")
    assert _blocked(res["tcp_host"], errno.ECONNREFUSED)  # the sandbox's own empty loopback
    assert udp_received is None
    assert _blocked(res["dns"])
    assert _blocked(res["tcp_internet"], errno.ENETUNREACH)
    assert _blocked(res["udp_internet"], errno.ENETUNREACH)
    assert res["localhost_inside"]["ok"], "tests that serve on localhost must still work"


def test_network_attack_control_succeeds_without_sandbox(world: World) -> None:
    res, udp_received = _network_attack(world, UnsafeSandbox(), "control")
    assert res["tcp_host"]["ok"]
    assert udp_received == world.token.encode()


VSOCK = """
AF_VSOCK = 40
def raw_socket(domain):
    LIBC.syscall.restype = ctypes.c_long
    return checked(LIBC.syscall(ctypes.c_long(41), ctypes.c_long(domain), ctypes.c_long(1),
                                ctypes.c_long(0)))
attempt("vsock", lambda: socket.socket(AF_VSOCK, socket.SOCK_STREAM).fileno())
attempt("vsock_high_bits", lambda: raw_socket(0x1_00000028))
attempt("vsock_pair", lambda: socket.socketpair(AF_VSOCK, socket.SOCK_STREAM))
params = ctypes.create_string_buffer(120)
attempt("io_uring", lambda: checked(LIBC.syscall(ctypes.c_long(425), ctypes.c_long(4), params)))
report()
"""


def _host_has_vsock() -> bool:
    try:
        socket.socket(40, socket.SOCK_STREAM).close()
        return True
    except OSError:
        return False


@pytest.mark.sandbox
def test_vsock_and_io_uring_are_refused(world: World, bwrap: BwrapSandbox) -> None:
    res = _attack(world, bwrap, VSOCK)
    assert _blocked(res["vsock"], errno.EAFNOSUPPORT)
    assert _blocked(res["vsock_high_bits"], errno.EAFNOSUPPORT)
    assert _blocked(res["vsock_pair"], errno.EAFNOSUPPORT)
    assert _blocked(res["io_uring"], errno.ENOSYS)


def test_vsock_attack_control_succeeds_without_sandbox(world: World) -> None:
    if not _host_has_vsock():
        pytest.skip("this kernel has no AF_VSOCK: nothing to control")
    res = _attack(world, UnsafeSandbox(), VSOCK)
    assert res["vsock"]["ok"]
    assert res["vsock_high_bits"]["ok"], "the kernel truncates the domain to 32 bits"


# 32-bit `int 0x80` socket(domain, SOCK_STREAM, 0) from x86_64 code (i386 socket is 359).
INT80 = """
import mmap
code = bytes.fromhex("53" "b867010000" "89fb" "b901000000" "31d2" "cd80" "5b" "c3")
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
print("before", flush=True)
attempt("int80_socket", lambda: fn(int(sys.argv[2])))
report()
"""


def _host_runs_int80() -> bool:
    """The control: without a sandbox, the 32-bit socket() call works on this kernel."""
    if platform.machine() != "x86_64":
        return False
    code = PRELUDE + textwrap.dedent(INT80)
    host = subprocess.run(
        [PYTHON, "-c", code, "token", str(int(socket.AF_INET))], capture_output=True, text=True
    )
    return host.returncode == 0 and '"int80_socket": {"ok": true' in host.stdout


@pytest.mark.sandbox
def test_32bit_system_calls_kill_the_process(world: World, bwrap: BwrapSandbox) -> None:
    if not _host_runs_int80():
        pytest.skip("no 32-bit system calls on this machine: nothing to bypass the filter with")
    _submit(world, bwrap, "attack.py", INT80)
    result = _run(world, bwrap, [PYTHON, "attack.py", world.token, "40"])
    assert "before" in result.stdout
    assert "RESULTS=" not in result.stdout
    assert result.returncode == 128 + signal.SIGSYS


# --- files ------------------------------------------------------------------------------------

WRITE_OUTSIDE = """
def write(path):
    with open(path, "w") as f:
        return f.write("pwned")
token = sys.argv[1]
attempt("outside", lambda: write(sys.argv[2]))
attempt("env", lambda: write(sys.argv[3]))
attempt("prefix", lambda: write(os.path.join(sys.base_prefix, token)))
attempt("usr", lambda: write("/usr/" + token))
attempt("etc_hosts", lambda: write("/etc/hosts"))
attempt("tmp", lambda: write("/tmp/" + token))
attempt("workspace", lambda: write("inside.txt"))
attempt("out_dir", lambda: write(sys.argv[4]))
report()
"""


@pytest.mark.sandbox
def test_cannot_write_outside_its_workspace(world: World, bwrap: BwrapSandbox) -> None:
    outside, env_file = world.outside / "pwned.txt", world.env_dir / "pwned.txt"
    out_file = world.out_dir / "results.txt"
    hosts_before = Path("/etc/hosts").read_bytes()
    try:
        res = _attack(world, bwrap, WRITE_OUTSIDE, str(outside), str(env_file), str(out_file))
        # The environment is world-writable on the host: only the read-only mount stops it.
        assert _blocked(res["env"], errno.EROFS)
        assert _blocked(res["prefix"], errno.EROFS, errno.EACCES)
        assert _blocked(res["usr"], errno.EROFS, errno.EACCES)
        assert _blocked(res["etc_hosts"], errno.EROFS, errno.EACCES)
        for path in (outside, env_file, Path(sys.base_prefix) / world.token,
                     Path("/usr") / world.token, Path("/tmp") / world.token):  # fmt: skip
            assert not path.exists(), path
        assert Path("/etc/hosts").read_bytes() == hosts_before
        # What it may write, it writes, and the harness reads it.
        assert res["workspace"]["ok"] and res["tmp"]["ok"] and res["out_dir"]["ok"]
        assert (world.ws / "inside.txt").read_text() == "pwned"
        assert out_file.read_text() == "pwned"
    finally:
        for path in (Path(sys.base_prefix) / world.token, Path("/usr") / world.token):
            path.unlink(missing_ok=True)


READ_SECRETS = """
paths = dict(zip(["other_ws", "dataset", "store"], sys.argv[2:5]))
for name, path in paths.items():
    attempt(name, lambda path=path: open(path).read())
for directory in json.loads(sys.argv[5]):
    attempt("ls " + directory, lambda d=directory: sorted(os.listdir(d)))
report()
"""

# What bwrap itself puts at the sandbox's root besides the mounts (see bwrap.py): host system
# dirs bound whole, fresh /proc and /dev, and a private, empty /tmp.
HOST_DIRS = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev"}
SANDBOX_ROOT = {*HOST_DIRS, "tmp"}


def _ancestors(paths: list[Path]) -> dict[str, set[str]]:
    """Every proper ancestor of `paths`, with the entries it must hold: the next component on
    the way to a mounted path, nothing else (the root also holds the system dirs)."""
    holds: dict[str, set[str]] = {"/": set()}
    for path in paths:
        parts = path.parts
        for i in range(1, len(parts)):
            holds.setdefault(str(Path(*parts[:i])), set()).add(parts[i])
    mounted = {str(p) for p in paths}
    # A mounted path's own listing is its host content, and so is a system dir's (a venv
    # under /usr/local): not the sandbox's to explain.
    return {
        d: entries
        for d, entries in holds.items()
        if d not in mounted and (d == "/" or Path(d).parts[1] not in HOST_DIRS)
    }


def _read_secrets(world: World, sb: Sandbox) -> dict[str, Any]:
    paths = [world.other_ws / "secret.txt", world.dataset, world.store]
    mounted = [world.ws, *(m.path for m in world.mounts())]
    return _attack(world, sb, READ_SECRETS, *map(str, paths), json.dumps(list(_ancestors(mounted))))


@pytest.mark.sandbox
def test_cannot_read_other_workspaces_the_dataset_or_the_store(
    world: World, bwrap: BwrapSandbox
) -> None:
    res = _read_secrets(world, bwrap)
    for name in ("other_ws", "dataset", "store"):
        assert _blocked(res[name], errno.ENOENT), name  # not denied: not there at all
    # Nothing exists but the mounted paths and their ancestors, and an ancestor holds nothing
    # but the way to a mounted path: wherever the clone, the venv or the workspaces live.
    mounted = [world.ws, *(m.path for m in world.mounts())]
    expected = _ancestors(mounted)
    expected["/"] |= SANDBOX_ROOT
    assert str(world.ws.parent) in expected  # the test would prove nothing otherwise
    for directory, entries in expected.items():
        listing = res[f"ls {directory}"]
        assert listing["ok"], (directory, listing)
        if directory == "/":
            assert set(listing["value"]) <= entries, sorted(set(listing["value"]) - entries)
            assert {p.parts[1] for p in mounted} <= set(listing["value"])
        else:
            assert set(listing["value"]) == entries, directory


def test_read_attack_control_succeeds_without_sandbox(world: World) -> None:
    res = _read_secrets(world, UnsafeSandbox())
    assert res["other_ws"]["ok"] and res["dataset"]["ok"] and res["store"]["ok"]


MOUNTS = """
MS_RDONLY, MS_REMOUNT, MS_BIND = 0x1, 0x20, 0x1000
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
def mount(src, target, fstype, flags):
    return checked(LIBC.mount(src, target.encode(), fstype, ctypes.c_ulong(flags), None))
env = sys.argv[2]
attempt("tmpfs", lambda: mount(b"tmpfs", env, b"tmpfs", 0))
attempt("remount_env_rw", lambda: mount(None, env, None, MS_REMOUNT | MS_BIND))
attempt("remount_usr_rw", lambda: mount(None, "/usr", None, MS_REMOUNT | MS_BIND))
attempt("remount_root", lambda: mount(None, "/", None, MS_REMOUNT))
attempt("bind_env", lambda: mount(env.encode(), "/tmp", None, MS_BIND))
attempt("unshare_mount", lambda: checked(LIBC.unshare(CLONE_NEWNS)))
attempt("unshare_user", lambda: checked(LIBC.unshare(CLONE_NEWUSER)))
attempt("write_env_after", lambda: open(os.path.join(env, "pwned"), "w").write("x"))
def sysctl():
    path = "/proc/sys/vm/overcommit_ratio"
    value = open(path).read()
    with open(path, "w") as f:  # the same value: harmless even if it got through
        return f.write(value)
attempt("proc_sys", sysctl)
report()
"""


@pytest.mark.sandbox
def test_cannot_mount_remount_or_write_proc_sys(world: World, bwrap: BwrapSandbox) -> None:
    res = _attack(world, bwrap, MOUNTS, str(world.env_dir))
    for name in ("tmpfs", "remount_env_rw", "remount_usr_rw", "remount_root", "bind_env",
                 "unshare_mount"):  # fmt: skip
        assert _blocked(res[name], errno.EPERM), (name, res[name])
    assert _blocked(res["unshare_user"])
    assert _blocked(res["write_env_after"], errno.EROFS)
    assert _blocked(res["proc_sys"], errno.EACCES, errno.EROFS, errno.EPERM)
    assert not (world.env_dir / "pwned").exists()


# --- time and processes -----------------------------------------------------------------------

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


# --- output, environments, errors -------------------------------------------------------------

FLOOD = """
sys.stdout.write("HEAD" + "o" * (3 << 20) + "TAIL\\n")
sys.stdout.flush()
sys.stderr.write("e" * (3 << 20))
"""


@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=pytest.mark.sandbox), "unsafe"])
def test_output_is_capped(world: World, backend: str) -> None:
    if backend == "bwrap":
        _require_bwrap()
    sb = get_sandbox(backend)
    _submit(world, sb, "attack.py", FLOOD)
    result = _run(world, sb, [PYTHON, "attack.py"], output_limit_bytes=64 << 10)
    assert result.returncode == 0
    assert result.truncated
    assert result.stdout.startswith("HEADooo") and result.stdout.endswith("oooTAIL\n")
    assert "bytes of output omitted" in result.stdout
    assert len(result.stdout) < (64 << 10) + 200
    assert len(result.stderr) < (64 << 10) + 200


def test_capped_buffer_keeps_head_and_tail_within_its_limit() -> None:
    buf = CappedBuffer(1000)
    for i in range(10_000):
        buf.feed(f"{i:05d}\n".encode())
        assert len(buf.head) + len(buf.tail) <= 3 * 500
    text = buf.text()
    assert text.startswith("00000\n") and text.endswith("09999\n")
    assert buf.truncated and buf.total == 60_000
    small = CappedBuffer(1000)
    small.feed(b"short")
    assert small.text() == "short" and not small.truncated


@pytest.mark.sandbox
def test_a_uv_venv_runs_inside_with_its_interpreter_mounted(
    world: World, bwrap: BwrapSandbox, tmp_path: Path
) -> None:
    from uv import find_uv_bin

    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    interpreter = Path(sys.base_prefix) / "bin" / f"python{version}"
    venv = tmp_path / "venv"
    subprocess.run(
        [find_uv_bin(), "venv", "-q", "-p", str(interpreter), str(venv)],
        check=True, env={**os.environ, "UV_NO_CONFIG": "1"},
    )  # fmt: skip
    _submit(world, bwrap, "test_in_venv.py", """\
        import sys, unittest
        class InVenv(unittest.TestCase):
            def test_prefix(self):
                self.assertEqual(sys.prefix, "{venv}")
                self.assertNotEqual(sys.prefix, sys.base_prefix)
        """.replace("{venv}", str(venv)))  # fmt: skip
    result = bwrap.run(
        [str(venv / "bin" / "python"), "-m", "unittest", "-v", "test_in_venv"],
        workdir=world.ws,
        mounts=[Mount(path=venv), Mount(path=Path(sys.base_prefix))],
        policy=Policy(timeout_s=30),
    )
    assert result.returncode == 0, result.stderr
    assert "test_prefix" in result.stderr and "OK" in result.stderr


@pytest.mark.sandbox
def test_a_missing_mount_is_a_sandbox_error(world: World, bwrap: BwrapSandbox) -> None:
    with pytest.raises(SandboxError, match="does not exist"):
        bwrap.run(["true"], workdir=world.ws, mounts=[Mount(path=world.ws / "nope")],
                  policy=Policy())  # fmt: skip


def test_a_launch_failure_is_a_sandbox_error_not_an_exit_code(world: World) -> None:
    with pytest.raises(SandboxError, match="exec"):
        UnsafeSandbox().run(["/nonexistent/python"], workdir=world.ws, mounts=[],
                            policy=Policy())  # fmt: skip


def test_a_command_cannot_fake_a_launch_failure(world: World) -> None:
    code = 'sys.stderr.write("swebounty launcher: exec failed\\n"); sys.exit(125)\n'
    _submit(world, UnsafeSandbox(), "attack.py", code)
    result = _run(world, UnsafeSandbox(), [PYTHON, "attack.py"])
    assert result.returncode == 125


def test_get_sandbox_names_its_backends() -> None:
    unsafe = get_sandbox("unsafe")
    assert isinstance(unsafe, Sandbox)
    assert unsafe.isolated is False
    with pytest.raises(ValueError, match="bwrap, unsafe"):
        get_sandbox("docker-please")


def test_public_api_is_all() -> None:
    assert set(sandbox_pkg.__all__) == {
        "BwrapSandbox", "Mount", "Policy", "RunResult", "Sandbox", "SandboxError",
        "UnsafeSandbox", "bwrap_available", "get_sandbox",
    }  # fmt: skip
    for name in sandbox_pkg.__all__:
        assert hasattr(sandbox_pkg, name), name


@pytest.mark.sandbox
def test_bwrap_start_cost_is_small(world: World, bwrap: BwrapSandbox) -> None:
    bwrap.prepare_workdir(world.ws)
    times = []
    for _ in range(5):
        start = time.monotonic()
        result = bwrap.run(["true"], workdir=world.ws, mounts=[], policy=Policy())
        times.append(time.monotonic() - start)
        assert result.returncode == 0
    assert sorted(times)[2] < 0.5, times


@pytest.mark.sandbox
def test_prepare_workdir_hands_the_tree_to_the_sandbox_uid(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root hands workspaces to another uid")
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.py").write_text("x")
    (tmp_path / "a" / "link").symlink_to("/etc/passwd")
    _require_bwrap()
    sb = BwrapSandbox(uid=64_321, gid=64_321)
    sb.prepare_workdir(tmp_path)
    for path in [tmp_path, *tmp_path.rglob("*")]:
        assert path.lstat().st_uid == 64_321, path
    assert Path("/etc/passwd").stat().st_uid == 0  # symlinks are not followed


def test_stale_leftovers_are_swept_but_live_ones_kept(tmp_path: Path) -> None:
    old, fresh, busy = (tmp_path / f"swebounty-{n}" for n in ("old", "fresh", "busy"))
    for d in (old, fresh, busy):
        d.mkdir()
    (busy / "file").write_text("in use")
    long_ago = time.time() - 3600
    for d in (old, busy):
        os.utime(d, (long_ago, long_ago))
    sweep_stale(tmp_path, "swebounty-*")
    assert not old.exists()
    assert fresh.exists() and busy.exists()


# --- bounded, ephemeral writes; the result channel -------------------------------------------

FLOOD_DISK = """
def many_files():
    n = 0
    try:
        while n < 100_000:
            open("f%d" % n, "w").close()
            n += 1
    except OSError as e:
        return [n, e.errno]
def big_file():
    try:
        with open("big", "wb") as f:
            for _ in range(1024):
                f.write(b"0" * (1 << 20))
    except OSError as e:
        return e.errno
attempt("files", many_files)
attempt("bytes", big_file)
attempt("channel", lambda: os.write(int(os.environ["SWEBOUNTY_RESULT_FD"]), sys.stdin.read().encode()))
report()
"""


@pytest.mark.sandbox
def test_ephemeral_writes_are_bounded_and_never_reach_the_host(
    world: World, bwrap: BwrapSandbox
) -> None:
    if os.geteuid() != 0:
        pytest.skip("the bounded scratch area is a tmpfs the launcher mounts as root")
    _submit(world, bwrap, "attack.py", FLOOD_DISK)
    before = sorted(p.name for p in world.ws.iterdir())
    mounts = [*world.mounts(), Mount(path=world.ws, ephemeral=True)]
    policy = Policy(timeout_s=60, disk_bytes=16 << 20, disk_inodes=500)
    result = bwrap.run([PYTHON, "attack.py", world.token], workdir=world.ws, mounts=mounts,
                       policy=policy, stdin=b"the key", result_channel=True)  # fmt: skip
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("RESULTS="))
    res = json.loads(line.removeprefix("RESULTS="))
    count, err = res["files"]["value"]
    assert err == errno.ENOSPC and count < 500
    assert res["bytes"]["value"] == errno.ENOSPC
    assert result.channel == b"the key"
    assert sorted(p.name for p in world.ws.iterdir()) == before, "the host tree was written"


def test_the_channel_and_stdin_work_without_a_sandbox_too(world: World) -> None:
    sb = UnsafeSandbox()
    code = "import os, sys; os.write(int(os.environ['SWEBOUNTY_RESULT_FD']), sys.stdin.read().encode())"
    result = sb.run([PYTHON, "-c", code], workdir=world.ws, mounts=[], policy=Policy(timeout_s=30),
                    stdin=b"hello", result_channel=True)  # fmt: skip
    assert result.returncode == 0 and result.channel == b"hello"
    plain = sb.run([PYTHON, "-c", "pass"], workdir=world.ws, mounts=[], policy=Policy(timeout_s=30))
    assert plain.channel is None


def test_the_launcher_imports_only_what_every_launch_needs() -> None:
    # Every sandboxed run starts the launcher: json (and the re it pulls in) and typing each
    # cost about as much CPU as the interpreter's own start.
    import subprocess
    import sys

    from swebounty.sandbox._process import LAUNCHER, launch_spec

    spec = {"argv": ["/bin/true"], "env": {}, "rlimits": {"CORE": 0}, "cgroups": []}
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", str(LAUNCHER), launch_spec(spec)],
        capture_output=True, text=True, env={}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
    assert "marshal" in imported or "resource" in imported  # the report is there
    assert not imported & {"json", "typing", "re", "ctypes"}
