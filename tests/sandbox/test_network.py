"""A patched test reaches no network (TCP, UDP, DNS, the host's loopback), no vsock or io_uring,
and 32-bit system calls kill the process; the attacks work without a sandbox (controls).
"""

from __future__ import annotations

import errno
import json
import platform
import signal
import socket
import subprocess
import textwrap
from typing import Any

import pytest

from sandbox.helpers import (
    PRELUDE,
    PYTHON,
    World,
    _attack,
    _blocked,
    _run,
    _submit,
)
from swebounty.sandbox import (
    BwrapSandbox,
    Sandbox,
    UnsafeSandbox,
)

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
