"""The replaying backend (services/replay.py): mitmproxy flow files read with the standard
library, answers taken in recorded order, misses said; and a small web app whose page gets its
data from the replayed backend, in a browser."""

from __future__ import annotations

import gzip
import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from swebounty import __version__
from swebounty.envs.models import EnvBuildError
from swebounty.report.browser import browser_missing
from swebounty.services.catalog import ServiceError, load_catalog
from swebounty.services.replay import MISS, FlowError, Recordings, read_flows, serve
from swebounty.services.runtime import DRIVER, Built, StandIns, _copy_data, _unanswered
from test_services import fake_env

NO_BROWSER = browser_missing()


def tnet(value: Any) -> bytes:
    """mitmproxy's encoding of a flow state (tnetstring), as its files hold it."""
    if isinstance(value, bytes):
        body, kind = value, b","
    elif isinstance(value, str):
        body, kind = value.encode(), b";"
    elif isinstance(value, bool):
        body, kind = (b"true" if value else b"false"), b"!"
    elif isinstance(value, int):
        body, kind = str(value).encode(), b"#"
    elif isinstance(value, float):
        body, kind = repr(value).encode(), b"^"
    elif value is None:
        body, kind = b"", b"~"
    elif isinstance(value, list):
        body, kind = b"".join(tnet(v) for v in value), b"]"
    else:
        body, kind = b"".join(tnet(k) + tnet(v) for k, v in value.items()), b"}"
    return str(len(body)).encode() + b":" + body + kind


def flow(method: str, host: str, path: str, status: int, body: bytes, **headers: str) -> bytes:
    return tnet({
        "version": 20, "type": "http", "id": "f", "error": None, "websocket": None,
        "request": {"host": host, "port": 443, "method": method.encode(), "scheme": b"https",
                    "authority": b"", "path": path.encode(), "http_version": b"HTTP/1.1",
                    "headers": [[b"host", host.encode()]], "content": b"x=1", "trailers": None,
                    "timestamp_start": 1.5, "timestamp_end": 2.5},
        "response": {"http_version": b"HTTP/1.1", "status_code": status, "reason": b"OK",
                     "headers": [[k.replace("_", "-").encode(), v.encode()]
                                 for k, v in headers.items()] + [[b"content-length", b"999"]],
                     "content": body, "trailers": None,
                     "timestamp_start": 2.0, "timestamp_end": 2.5},
    })  # fmt: skip


@contextmanager
def running(server: ThreadingHTTPServer) -> Iterator[int]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def get(port: int, path: str, host: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     headers={"Host": host}, data=b"a=1" if method == "POST" else None)  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers.items()), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers.items()), exc.read()


def test_flows_are_replayed_in_order_and_misses_are_said(tmp_path: Path) -> None:
    zipped = gzip.compress(b'{"jsonCode": 200}')
    data = b"".join([
        flow("POST", "www.expensify.com", "/api/OpenApp?", 200, b'{"n": 1}'),
        flow("POST", "www.expensify.com", "/api/OpenApp?", 200, b'{"n": 2}'),
        flow("GET", "www.expensify.com", "/api/Ping?accountID=7", 200, zipped,
             content_encoding="gzip", content_type="application/json"),
        tnet({"type": "tcp", "messages": []}),  # not HTTP: skipped
    ])  # fmt: skip
    path = tmp_path / "flow.mitm"
    path.write_bytes(data)
    exchanges = read_flows(path)
    assert [(e.method, e.path, e.status) for e in exchanges] == [
        ("POST", "/api/OpenApp?", 200), ("POST", "/api/OpenApp?", 200),
        ("GET", "/api/Ping?accountID=7", 200),
    ]  # fmt: skip
    with running(serve(Recordings(exchanges), "127.0.0.1", 0)) as port:
        answers = [get(port, "/api/OpenApp?", "www.expensify.com", "POST")[2] for _ in range(3)]
        assert answers == [b'{"n": 1}', b'{"n": 2}', b'{"n": 2}']  # in order, the last again
        status, headers, body = get(port, "/api/Ping?accountID=7", "other.host")  # by path
        assert status == 200 and gzip.decompress(body) == b'{"jsonCode": 200}'
        assert headers["content-encoding"] == "gzip" and headers["content-length"] == str(len(body))
        status, headers, body = get(port, "/api/Unrecorded", "www.expensify.com")
        assert status == 502 and headers["x-swebounty-replay"] == "miss"
        assert body == b"no recorded answer for GET www.expensify.com/api/Unrecorded in the " \
                       b"replayed flows\n"  # fmt: skip
    bad = tmp_path / "bad.mitm"
    bad.write_bytes(b"12:not a flow")
    with pytest.raises(FlowError, match="runs past the end"):
        read_flows(bad)
    bad.write_bytes(b"4:abcd?")
    with pytest.raises(FlowError, match="unknown type"):
        read_flows(bad)


PAGE = """<!doctype html><html><body><p>Balance: <output id="b">?</output></p><script>
fetch("http://127.0.0.1:%d/api/Balance?accountID=7").then(r => r.json())
  .then(d => { document.getElementById("b").textContent = d.balance })</script></body></html>"""


@pytest.mark.browser
@pytest.mark.skipif(NO_BROWSER is not None, reason=f"no browser: {NO_BROWSER}")
def test_a_web_app_gets_its_backend_answers_from_the_replay(tmp_path: Path) -> None:
    from swebounty.report.browser import chromium_page

    flows = tmp_path / "flow.mitm"
    flows.write_bytes(flow("GET", "www.expensify.com", "/api/Balance?accountID=7", 200,
                           b'{"balance": "$42.00"}', content_type="application/json",
                           access_control_allow_origin="*"))  # fmt: skip
    backend = serve(Recordings(read_flows(flows)), "127.0.0.1", 0)
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(PAGE % backend.server_address[1])
    handler = partial(SimpleHTTPRequestHandler, directory=str(site))
    site_server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    with running(backend), running(site_server) as app, chromium_page() as page:
        page.goto(f"http://127.0.0.1:{app}/index.html")
        page.wait_for_function("document.getElementById('b').textContent !== '?'")
        assert page.text_content("#b") == "$42.00"


def test_the_replay_is_a_catalog_service_fed_the_tasks_flows(tmp_path: Path) -> None:
    replay = load_catalog().get("mitmproxy-replay")  # the one SWE-Lancer's IC tasks name
    assert (replay.packages, replay.version, replay.takes_data) == ([], __version__, True)
    assert replay.unanswered_marker == MISS
    flows = [tmp_path / "a.mitm", tmp_path / "b.mitm"]
    for path in flows:
        path.write_bytes(flow("GET", "h", f"/{path.stem}", 200, path.stem.encode()))
    built = Built(service=replay, env=fake_env(tmp_path, "env"), names=list(map(str, flows)))
    built.data = _copy_data(replay, built.names, tmp_path / "run" / "service-data")
    ins = StandIns(built=[built], logs=tmp_path / "logs")
    argv = ins.wrap(["tests"], isolated=True)
    copies = [str(tmp_path / "run" / "service-data" / n) for n in ("0-a.mitm", "1-b.mitm")]
    end = argv.index("--pytest")
    assert argv[end - 6 : end] == [str(DRIVER.parent / "replay.py"), "--port", "47090",
                                   "--flows", *copies]  # fmt: skip
    assert ins.variables() == {"REPLAY_URL": "http://127.0.0.1:47090"}
    mounts = {m.path: m.writable for m in ins.mounts()}
    assert mounts[tmp_path / "run" / "service-data"] is False  # read-only copies
    (ins.logs).mkdir()
    (ins.logs / "mitmproxy-replay.log").write_text(
        f"replay: 2 recorded answers\n{MISS}GET h/x\n{MISS}GET h/x\n{MISS}POST h/y\n"
    )
    ins.keep_logs(tmp_path)
    (use,) = ins.uses()
    assert use.data == list(map(str, flows)) and use.unanswered == ["GET h/x", "POST h/y"]
    assert _unanswered(b"swebounty-replay-miss: GET /z\n", "") == []  # no marker, none read
    # Its files: regular, by absolute path, through no link; given when it reads some.
    (tmp_path / "link.mitm").symlink_to(flows[0])
    os.mkfifo(tmp_path / "fifo.mitm")
    secret = tmp_path / "secret.mitm"  # kept from other users: never shown to the sandbox
    secret.write_bytes(flows[0].read_bytes())
    secret.chmod(0o600)
    for names, says in (
        ([], "the task gives it none"),
        ([str(tmp_path / "link.mitm")], "not a regular file"),
        ([str(tmp_path / "fifo.mitm")], "not a regular file"),  # refused, not waited on
        ([str(secret)], "that any user may read"),
        (["a.mitm"], "absolute path"),
    ):
        with pytest.raises(EnvBuildError, match=says):
            _copy_data(replay, names, tmp_path / "x")
    httpbin = load_catalog().get("httpbin")
    with pytest.raises(EnvBuildError, match="reads no files"):
        _copy_data(httpbin, [str(flows[0])], tmp_path / "x")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (('"--flows", "{data}"', '"--flows={data}"'), "an argv item of its own"),
        (('version_of = "swebounty"', 'version_of = "mitmproxy"'), "swebounty's own"),
    ],
)
def test_a_service_of_no_package_or_a_data_placeholder_is_checked(
    tmp_path: Path, change: tuple[str, str], says: str
) -> None:
    shipped = (DRIVER.parent / "catalog.toml").read_text()
    text = shipped[shipped.index('[[service]]\nname = "mitmproxy-replay"') :]
    assert change[0] in text
    path = tmp_path / "catalog.toml"
    path.write_text(text.replace(*change))
    with pytest.raises(ServiceError, match=says):
        load_catalog(path)


def test_the_replay_program_reads_several_flow_files_as_one(tmp_path: Path) -> None:
    files = []
    for name, body in (("a", b"first"), ("b", b"second")):
        files.append(tmp_path / f"{name}.mitm")
        files[-1].write_bytes(flow("GET", "h", f"/{name}", 200, body))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-I", str(DRIVER.parent / "replay.py"), "--port", str(port),
            "--flows", *map(str, files)]  # fmt: skip
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        try:
            assert proc.stdout is not None
            assert b"2 recorded answers" in proc.stdout.readline()
            assert [get(port, f"/{n}", "h")[2] for n in "ab"] == [b"first", b"second"]
        finally:
            proc.terminate()
    bad = subprocess.run([*argv[:-2], str(tmp_path / "gone.mitm")], capture_output=True,
                         text=True, timeout=30)  # fmt: skip
    assert bad.returncode == 2 and "cannot read" in bad.stderr
