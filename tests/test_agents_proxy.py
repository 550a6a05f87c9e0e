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
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fake_openai import Error, FakeOpenAI, bash
from swebounty.agents.proxy import ModelProxy, check_socket_path, parse_endpoint, serving
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
    assert proxy.meter.complete and proxy.meter.tokens_in > 0 and proxy.meter.tokens_out > 0
    assert proxy.meter.tokens_in == sum(r.get("tokens_in", 0) for r in usage)
    assert usage[0]["requested_model"] == "whatever-the-agent-asks"
    assert not sock.exists()  # removed when the proxy stops


def _raw(socket_path: Path, method: str, target: str, body: bytes = b"") -> int:
    """Send one request exactly as written (no client normalizes the target); its status."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(socket_path))
        head = f"{method} {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer agent\r\n"
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        conn.sendall(head.encode("latin-1") + body)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


# What an agent inside the sandbox got answered, with the host's key, before the allow-list;
# and their spellings (encoded, doubly encoded, dotted, slashed, other methods).
NOT_INFERENCE = [
    ("GET", "/v1/files"),
    ("GET", "/v1/files/file-abc123/content"),
    ("POST", "/v1/fine_tuning/jobs"),
    ("POST", "/v1/batches"),
    ("GET", "/v1/%2e%2e/admin"),
    ("GET", "/v1/%2E%2E/%2e%2e/admin"),
    ("GET", "/v1/%252e%252e/admin"),
    ("GET", "/v1/%66iles"),
    ("GET", "/v1/%2566iles"),
    ("GET", "/v1/models/../files"),
    ("GET", "/v1/models/%2e%2e/files"),
    ("GET", "/v1/models%2f..%2ffiles"),
    ("POST", "/v1/chat/completions/../../fine_tuning/jobs"),
    ("POST", "/v1/chat/completions/..%2f..%2fbatches"),
    ("GET", "/v1//files"),
    ("GET", "/v1/./files"),
    ("GET", "/v1/files%00/../models"),
    ("GET", "/v1/models%5c..%5cfiles"),
    ("GET", "/v1/models;/../files"),
    ("GET", "/v1/models/%ff"),
    ("POST", "/v1/models"),
    ("DELETE", "/v1/models"),
    ("PUT", "/v1/chat/completions"),
    ("GET", "/v1/chat/completions"),
    ("GET", "/admin"),
    ("GET", "/v1/../admin"),
    ("GET", "/v2/models"),
    ("GET", "//evil.example/v1/models"),
    ("GET", "http://evil.example/v1/models"),
    ("GET", "/V1/models"),
]


def test_refuses_everything_but_inference_and_never_sends_the_key(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    with (
        FakeOpenAI([]) as fake,
        ModelProxy(sock, fake.url, api_key="host-secret") as proxy,
    ):
        for method, target in NOT_INFERENCE:
            assert _raw(sock, method, target, b"{}") == 403, (method, target)
        assert proxy.refused == len(NOT_INFERENCE)
        assert _raw(sock, "GET", "/v1/models") == 200
        assert _raw(sock, "GET", "/v1/models/") == 200
    assert [r.path for r in fake.requests] == ["/v1/models", "/v1/models"]
    refused = [r for r in proxy.requests if r.get("refused")]
    # Kept as sent (but for the leading "//" that http.server itself collapses to "/").
    sent = [(m, "/" + t.lstrip("/") if t.startswith("//") else t) for m, t in NOT_INFERENCE]
    assert [(r["method"], r["path"]) for r in refused] == sent
    assert all(r["status"] == 403 for r in refused)


def test_forwards_the_normal_form_of_an_inference_path(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    body = json.dumps({"messages": []}).encode()
    with FakeOpenAI([bash("ls"), bash("ls")]) as fake, ModelProxy(sock, fake.url) as proxy:
        assert _raw(sock, "POST", "/v1/chat/%63ompletions", body) == 200
        assert _raw(sock, "POST", "/v1/./chat//completions", body) == 200
        assert _raw(sock, "POST", "/v1/completions?x=1", b"{}") == 404  # the fake has no route
    assert [r.path for r in fake.requests] == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/v1/completions?x=1",
    ]
    assert proxy.refused == 0


def test_a_run_may_allow_more_endpoints(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    allow = [parse_endpoint("POST /v1/embeddings"), parse_endpoint("GET /v1/files")]
    with FakeOpenAI([]) as fake, ModelProxy(sock, fake.url, allow=allow) as proxy:
        assert _raw(sock, "POST", "/v1/embeddings", b"{}") == 404  # forwarded: the fake has none
        assert _raw(sock, "GET", "/v1/files") == 404
        assert _raw(sock, "GET", "/v1/files/x/content") == 403
    assert [r.path for r in fake.requests] == ["/v1/embeddings", "/v1/files"]
    assert proxy.refused == 1
    assert parse_endpoint("/v1/embeddings") == ("POST", "/v1/embeddings")
    for bad in ("POST /v1/../files", "PUT /v1/files", "POST /v2/x", "POST /v1/a%2fb", "GET"):
        with pytest.raises(ValueError, match="allowed endpoint"):
            parse_endpoint(bad)


def test_serves_nothing_but_the_endpoint(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    with FakeOpenAI([]) as fake, ModelProxy(sock, fake.url) as proxy, _client(sock) as client:
        assert client.get("http://sandbox/v1/models").status_code == 200
        absolute = client.get(
            "http://sandbox/v1/models", extensions={"target": b"http://evil.example/v1/models"}
        )
        assert absolute.status_code == 403
        chunked = client.post(
            "http://sandbox/v1/chat/completions", content=iter([b'{"messages": []}'])
        )
        assert chunked.status_code == 411
    assert [r.path for r in fake.requests] == ["/v1/models"]
    assert len(proxy.requests) == 3


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


def test_records_say_whether_the_endpoint_or_the_proxy_answered(tmp_path: Path) -> None:
    """What `command.model_down` reads: only the endpoint's own failures make an attempt an
    infra error; the proxy's refusals and its errors on a bad request are the agent's doing."""
    from swebounty.agents.command import model_down

    sock = tmp_path / "model.sock"
    with (
        FakeOpenAI([Error(503)]) as fake,
        ModelProxy(sock, fake.url) as proxy,
        _client(sock) as client,
    ):
        assert client.post("http://sandbox/v1/chat/completions", json={}).status_code == 503
        assert model_down(proxy.requests) is not None  # the endpoint failed
        assert _raw(sock, "GET", "/v1/files") == 403
        assert model_down(proxy.requests) is not None  # a refusal is not a model request
        # A request the proxy itself fails on (502, never forwarded) is the agent's doing.
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(sock))
            conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: many\r\n\r\n")  # fmt: skip
            assert conn.recv(65536).split(b" ", 2)[1] == b"502"
        assert len(fake.chat_requests) == 1
        assert model_down(proxy.requests) is None
        # One that hangs up before the answer: still recorded (else the endpoint's 503 would
        # be the last word again, and the agent's own failure an infra error).
        proxy.requests.append({"type": "model_request", "method": "POST",
                               "path": "/v1/chat/completions", "status": 503})  # fmt: skip
        for _ in range(20):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(str(sock))
                conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Length: many\r\n\r\n")  # fmt: skip
            deadline = time.monotonic() + 5
            while proxy.requests[-1].get("status") == 503 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert proxy.requests[-1]["status"] == 502
            assert model_down(proxy.requests) is None
    dead = tmp_path / "dead.sock"
    with ModelProxy(dead, "http://127.0.0.1:9/v1") as proxy, _client(dead) as client:
        assert client.post("http://sandbox/v1/chat/completions", json={}).status_code == 502
        [record] = proxy.requests
        assert record["upstream_error"] == "ConnectError"
        assert "ConnectError" in (model_down(proxy.requests) or "")
