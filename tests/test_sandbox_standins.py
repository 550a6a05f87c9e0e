"""The sandbox's part in stand-in hosts (Policy.hosts, Policy.low_ports; bwrap.py, _launch.py):
the named hosts resolve to the sandbox's loopback, where an unprivileged process may listen on
port 80; every other name still resolves to nothing, nothing reaches the host's loopback, the
sandbox cannot change its network's settings, and the host's settings do not change.

Run as root and as an ordinary user (the CI's unprivileged pass): the launcher makes the
network namespace itself in both cases, in a user namespace of its own for an ordinary user.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from swebounty.sandbox import (
    BwrapSandbox,
    Mount,
    Policy,
    SandboxError,
    UnsafeSandbox,
    bwrap_available,
)

BWRAP_OK, BWRAP_WHY = bwrap_available()
pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}"),
]
SYSCTL = "/proc/sys/net/ipv4/ip_unprivileged_port_start"
PROBE = """\
import json, os, socket, sys
out = {"uid": os.getuid()}
server = socket.socket()
try:
    server.bind(("127.0.0.1", 80))
    server.listen()
    out["bound_80"] = True
    with socket.create_connection(("httpbin.org", 80), timeout=5):
        out["reached_httpbin.org"] = True
except OSError as e:
    out["bound_80"] = str(e)
out["resolved"] = {}
for name in ("httpbin.org", "www.google.co.uk", "example.com", "pypi.org"):
    try:
        out["resolved"][name] = socket.gethostbyname(name)
    except OSError:
        out["resolved"][name] = None
try:
    with open(sys.argv[1], "w") as f:
        f.write("1024")
    out["sysctl_written"] = True
except OSError as e:
    out["sysctl_written"] = e.errno
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=3).close()
    out["host_loopback"] = True
except OSError:
    out["host_loopback"] = False
print(json.dumps(out))
"""


def _python_mounts() -> list[Mount]:
    return [Mount(path=p) for p in sorted({Path(sys.prefix), Path(sys.base_prefix)})]


def _probe(tmp_path: Path, policy: Policy) -> dict[str, object]:
    sandbox = BwrapSandbox()
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    sandbox.prepare_workdir(work)
    with socket.socket() as host_server:  # a listener on the host's own loopback
        host_server.bind(("127.0.0.1", 0))
        host_server.listen()  # its backlog would accept a connection: none must arrive
        port = host_server.getsockname()[1]
        result = sandbox.run([sys.executable, "-I", "-c", PROBE, SYSCTL, str(port)],
                             workdir=work, mounts=_python_mounts(), policy=policy)  # fmt: skip
    assert result.returncode == 0, result.stderr
    found: dict[str, object] = json.loads(result.stdout)
    return found


def test_stand_in_hosts_resolve_to_the_loopback_where_port_80_binds(tmp_path: Path) -> None:
    before = Path(SYSCTL).read_text()
    policy = Policy(hosts=["httpbin.org", "www.google.co.uk"], low_ports=True, timeout_s=60)
    found = _probe(tmp_path, policy)
    assert found["bound_80"] is True and found["reached_httpbin.org"] is True
    assert found["resolved"] == {"httpbin.org": "127.0.0.1", "www.google.co.uk": "127.0.0.1",
                                 "example.com": None, "pypi.org": None}  # fmt: skip
    assert found["sysctl_written"] != True  # noqa: E712 - the errno, never True
    assert found["host_loopback"] is False
    assert found["uid"] != 0
    assert Path(SYSCTL).read_text() == before  # the host's own setting is untouched


def test_without_stand_ins_nothing_resolves_and_port_80_does_not_bind(tmp_path: Path) -> None:
    found = _probe(tmp_path, Policy(timeout_s=60))
    assert found["bound_80"] != True  # noqa: E712 - the error text
    assert found["resolved"] == dict.fromkeys(
        ["httpbin.org", "www.google.co.uk", "example.com", "pypi.org"]
    )
    assert found["host_loopback"] is False


@pytest.mark.parametrize(
    "name", ["evil\n1.2.3.4 pypi.org", "a b", "-x.org", "x..org", "", "a" * 64 + ".org"]
)
def test_a_host_name_that_a_hosts_file_could_misread_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="not host names"):
        Policy(hosts=[name])


def test_a_policy_copied_without_validation_still_cannot_write_the_hosts_file(
    tmp_path: Path,
) -> None:
    policy = Policy().model_copy(update={"hosts": ["x.org\n1.2.3.4 pypi.org"]})
    with pytest.raises(SandboxError, match="not host names"):
        BwrapSandbox().run(["true"], workdir=tmp_path, mounts=[], policy=policy)


def test_a_mount_with_a_source_shows_that_file_over_another_read_only(tmp_path: Path) -> None:
    sandbox = BwrapSandbox()
    work = tmp_path / "work"
    work.mkdir()
    sandbox.prepare_workdir(work)
    shown = tmp_path / "env" / "bundle.pem"
    shown.parent.mkdir()
    shown.write_text("the environment's")
    over = tmp_path / "over.pem"
    over.write_text("with the stand-in CA")
    over.chmod(0o666)  # writable by anyone: only the mount keeps the sandbox from writing it
    code = "import sys; p = sys.argv[1]; print(open(p).read()); open(p, 'a').write('x')"
    result = sandbox.run([sys.executable, "-I", "-c", code, str(shown)], workdir=work,
                         mounts=[*_python_mounts(), Mount(path=shown.parent),
                                 Mount(path=shown, source=over)],
                         policy=Policy(timeout_s=60))  # fmt: skip
    assert result.stdout.startswith("with the stand-in CA")
    assert result.returncode != 0 and "Read-only file system" in result.stderr
    assert shown.read_text() == "the environment's" and over.read_text() == "with the stand-in CA"
    with pytest.raises(SandboxError, match="only read-only"):
        sandbox.run(["true"], workdir=work, policy=Policy(),
                    mounts=[Mount(path=shown, source=over, writable=True)])  # fmt: skip


def test_the_unsafe_backend_is_not_isolated() -> None:
    # runtime.py serves stand-in hosts only where `isolated`: the unsafe backend has no hosts
    # file and no network of its own to give them
    assert UnsafeSandbox.isolated is False and BwrapSandbox.isolated is True
