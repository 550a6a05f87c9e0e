"""The model proxy forwards the model endpoint, and only it, from a unix socket."""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fake_openai import Error, FakeOpenAI, bash
from swebounty.agents.proxy import ModelProxy, check_socket_path, serving
from swebounty.sandbox._lease import LEASE_BASE, LEASE_COUNT
from swebounty.sandbox.bwrap import chown_tree
from swebounty.workdirs import host_tag


def _client(socket_path: Path) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(socket_path)), timeout=10)


def test_forwards_chat_completions_with_the_hosts_key_and_counts_tokens(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    with (
        FakeOpenAI([bash("ls"), bash("pwd"), Error(503)]) as fake,
        ModelProxy(sock, fake.url, model="served-model", api_key="host-secret") as proxy,
        _client(sock) as client,
    ):
        for _ in range(2):
            resp = client.post(
                "http://sandbox/v1/chat/completions",
                json={"model": "whatever-the-agent-asks", "messages": [{"role": "user"}]},
                headers={"Authorization": "Bearer agent-guess"},
            )
            assert resp.status_code == 200
            assert resp.json()["choices"][0]["message"]["tool_calls"]
        failed = client.post("http://sandbox/v1/chat/completions", json={"messages": []})
        assert failed.status_code == 503  # upstream errors pass through for the agent to retry
    sent = fake.chat_requests
    assert [r.headers.get("Authorization") for r in sent] == ["Bearer host-secret"] * 3
    assert {r.body["model"] for r in sent} == {"served-model"}  # pinned to the run's model
    usage = [json.loads(json.dumps(r)) for r in proxy.requests]
    assert [r["status"] for r in usage] == [200, 200, 503]
    assert proxy.counted and proxy.tokens_in > 0 and proxy.tokens_out > 0
    assert proxy.tokens_in == sum(r.get("tokens_in", 0) for r in usage)
    assert usage[0]["requested_model"] == "whatever-the-agent-asks"
    assert not sock.exists()  # removed when the proxy stops


def test_serves_nothing_but_the_endpoint(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    with FakeOpenAI([]) as fake, ModelProxy(sock, fake.url) as proxy, _client(sock) as client:
        assert client.get("http://sandbox/v1/models").status_code == 200
        for path in ("/admin", "/v1/../admin", "/v2/models", "//evil.example/v1/models"):
            resp = client.get(f"http://sandbox{path}")
            assert resp.status_code == 404, path
        absolute = client.get(
            "http://sandbox/v1/models", extensions={"target": b"http://evil.example/v1/models"}
        )
        assert absolute.status_code == 404
        chunked = client.post(
            "http://sandbox/v1/chat/completions", content=iter([b'{"messages": []}'])
        )
        assert chunked.status_code == 411
    assert [r.path for r in fake.requests] == ["/v1/models"]
    assert len(proxy.requests) == 7


def _connects(socket_path: Path, uid: int | None = None) -> bool:
    """Whether a process (of `uid`, when given: needs root) can connect to the socket."""
    probe = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect(sys.argv[1])\nexcept OSError:\n    sys.exit(1)\n"
    )
    ids = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
    # The system's python: another uid cannot reach pyenv's under /root.
    python = "/usr/bin/python3" if uid is not None else sys.executable
    proc = subprocess.run([python, "-c", probe, str(socket_path)], check=False, **ids)
    return proc.returncode == 0


@pytest.fixture
def temp_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp dir of its own for `serving`, with a path as short as the system's."""
    path = Path(tempfile.mkdtemp(prefix="sbt-"))
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    yield path
    shutil.rmtree(path)


def test_serving_puts_the_socket_in_a_short_private_dir_of_the_temp_dir(temp_dir: Path) -> None:
    tmp_path = temp_dir
    with FakeOpenAI([]) as fake, serving(fake.url) as proxy:
        sock = proxy.socket_path
        assert sock.parent.parent == tmp_path and sock.name == "model.sock"
        assert sock.parent.name.startswith(f"swebounty-{os.getuid()}-sock{os.getpid()}.")
        assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600 and sock.stat().st_uid == os.getuid()
        with _client(sock) as client:
            assert client.get("http://sandbox/v1/models").status_code == 200
    assert list(tmp_path.iterdir()) == []  # the directory goes with the proxy


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
    reason="switching uids needs root, and a python any uid can run",
)
def test_only_the_uid_given_the_socket_can_connect(temp_dir: Path) -> None:
    # As root the sandbox runs as a leased uid: it must reach the socket, and no other user.
    agent_uid, other_uid = LEASE_BASE + LEASE_COUNT - 1, LEASE_BASE + LEASE_COUNT - 2
    temp_dir.chmod(0o755)  # as /tmp is: anyone may look
    give = functools.partial(chown_tree, uid=agent_uid, gid=agent_uid)
    with FakeOpenAI([]) as fake, serving(fake.url, give_to=give) as proxy:
        sock = proxy.socket_path
        assert sock.stat().st_uid == agent_uid and stat.S_IMODE(sock.stat().st_mode) == 0o600
        assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o711  # traverse, never list
        assert _connects(sock, agent_uid)
        assert not _connects(sock, other_uid)
        assert not _connects(sock, 65534)  # nobody


def test_serving_sweeps_the_socket_dirs_of_killed_harnesses(temp_dir: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = temp_dir / f"swebounty-{os.getuid()}-sock{dead.pid}.{host_tag()}-abcdefgh"
    stale.mkdir()
    (stale / "model.sock").write_text("")  # a dead socket
    with FakeOpenAI([]) as fake, serving(fake.url) as proxy:
        assert not stale.exists()
        assert proxy.socket_path.exists()


def test_a_socket_path_too_long_says_what_to_do(tmp_path: Path) -> None:
    check_socket_path(Path("/tmp") / ("x" * 100))  # 105 bytes: fits
    long = tmp_path / ("x" * 120) / "model.sock"
    with pytest.raises(ValueError, match="export TMPDIR=/tmp"):
        check_socket_path(long)
    with pytest.raises(ValueError, match="over the 107"), ModelProxy(long, "http://x/v1"):
        pass
