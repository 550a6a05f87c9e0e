"""A replaying backend: answers HTTP requests with responses recorded in a mitmproxy flow file.

SWE-Lancer's browser tests run the app against Expensify's backend as it answered when the test
was written: the answers are recorded (`flow.mitm`, mitmproxy's format: tnetstring-encoded flow
states) and replayed. This server reads such a file with the standard library alone (it runs
inside the sandbox, like relay.py and driver.py) and answers each request with the recorded
response to the same method, host and path (query included); repeated requests take the
recordings in order and the last one answers again; a request recorded for no host matches on
method and path. A request nothing answers gets 502 at once (never a wait) with
`x-swebounty-replay: miss` and a body naming it, and each miss is logged on a line of its own
(`MISS` then the request: the catalog's `unanswered_marker`, which the verdict collects), so a
test that needs an unrecorded answer fails at once and says which.

    python replay.py --port PORT --flows FILE [FILE ...] [--host 127.0.0.1]

Several files are read in order, as one recording. As a test service (catalog.toml,
`mitmproxy-replay`) the files are the task's (`Requirements.service_data`).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections import defaultdict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MAX_FLOWS_BYTES = 512 << 20
MISS = "swebounty-replay-miss: "  # the catalog's unanswered_marker for this service
_HOP_BY_HOP = {"content-length", "transfer-encoding", "connection", "keep-alive"}


class FlowError(ValueError):
    """The file is not a mitmproxy flow file this reader understands."""


def _load(data: bytes, pos: int, depth: int = 0) -> tuple[Any, int]:
    """One tnetstring value at `pos`: (value, position after it)."""
    if depth > 64:
        raise FlowError("values nested too deeply")
    colon = data.find(b":", pos, pos + 12)
    if colon < 0 or not data[pos:colon].isdigit():
        raise FlowError(f"no length at byte {pos}")
    size = int(data[pos:colon])
    start, end = colon + 1, colon + 1 + size
    if end >= len(data):
        raise FlowError(f"a value at byte {pos} runs past the end")
    body, kind = data[start:end], data[end : end + 1]
    if kind == b",":
        return body, end + 1
    if kind == b";":
        return body.decode("utf-8", "replace"), end + 1
    if kind == b"#":
        return int(body), end + 1
    if kind == b"^":
        return float(body), end + 1
    if kind == b"!":
        return body == b"true", end + 1
    if kind == b"~":
        return None, end + 1
    if kind in (b"]", b"}"):
        items, at = [], start
        while at < end:
            item, at = _load(data, at, depth + 1)
            items.append(item)
        if kind == b"]":
            return items, end + 1
        if len(items) % 2:
            raise FlowError(f"a dict at byte {pos} has a key without a value")
        keys = [k.decode() if isinstance(k, bytes) else k for k in items[::2]]
        return dict(zip(keys, items[1::2], strict=True)), end + 1
    raise FlowError(f"unknown type {kind!r} at byte {end}")


@dataclass
class Exchange:
    method: str
    host: str
    path: str
    status: int
    headers: list[tuple[str, bytes]]
    body: bytes


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")


def read_flows(path: Path) -> list[Exchange]:
    """The HTTP exchanges with a response in a mitmproxy flow file, in recorded order."""
    data = path.read_bytes()
    if len(data) > MAX_FLOWS_BYTES:
        raise FlowError(f"{path} is over {MAX_FLOWS_BYTES} bytes")
    found, pos = [], 0
    while pos < len(data):
        state, pos = _load(data, pos)
        if not isinstance(state, dict) or state.get("type", "http") not in ("http", b"http"):
            continue
        request, response = state.get("request"), state.get("response")
        if not isinstance(request, dict) or not isinstance(response, dict):
            continue
        headers = [(_text(k).lower(), v if isinstance(v, bytes) else _text(v).encode())
                   for k, v in response.get("headers") or []]  # fmt: skip
        found.append(
            Exchange(
                method=_text(request.get("method")).upper(),
                host=_text(request.get("host")).lower(),
                path=_text(request.get("path")) or "/",
                status=int(response.get("status_code") or 502),
                headers=[(k, v) for k, v in headers if k not in _HOP_BY_HOP],
                body=response.get("content") or b"",
            )
        )
    return found


class Recordings:
    """The answers, per request key, taken in order; the last one answers again."""

    def __init__(self, exchanges: list[Exchange]) -> None:
        self._by_key: dict[tuple[str, ...], list[Exchange]] = defaultdict(list)
        for ex in exchanges:
            self._by_key[(ex.method, ex.host, ex.path)].append(ex)
            self._by_key[(ex.method, ex.path)].append(ex)
        self._taken: dict[tuple[str, ...], int] = defaultdict(int)
        self._lock = threading.Lock()

    def answer(self, method: str, host: str, path: str) -> Exchange | None:
        with self._lock:
            for key in ((method, host.lower(), path), (method, path)):
                queue = self._by_key.get(key)
                if queue:
                    n = self._taken[key]
                    self._taken[key] = n + 1
                    return queue[min(n, len(queue) - 1)]
        return None


def serve(recordings: Recordings, host: str, port: int) -> ThreadingHTTPServer:
    """A server answering from `recordings` (call serve_forever on it)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)  # the recorded answer does not depend on it
            name = (self.headers.get("host") or "").split(":")[0]
            ex = recordings.answer(self.command, name, self.path)
            if ex is None:
                request = f"{self.command} {name}{self.path}"[:500]
                sys.stderr.write(f"{MISS}{request.encode('unicode_escape').decode()}\n")
                body = f"no recorded answer for {request} in the replayed flows\n".encode()
                self.send_response(502)
                self.send_header("x-swebounty-replay", "miss")
                self.send_header("content-type", "text/plain; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)
                return
            self.send_response(ex.status)
            for key, value in ex.headers:
                self.send_header(key, value.decode("latin-1"))
            self.send_header("content-length", str(len(ex.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(ex.body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any

        def log_message(self, format: str, *args: Any) -> None:
            sys.stderr.write(f"replay: {format % args}\n")

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Answer HTTP requests from a flow file.")
    parser.add_argument("--flows", type=Path, nargs="+", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    exchanges: list[Exchange] = []
    for path in args.flows:
        try:
            exchanges += read_flows(path)
        except (OSError, FlowError) as exc:
            print(f"replay: cannot read {path}: {exc}", file=sys.stderr)
            return 2
    server = serve(Recordings(exchanges), args.host, args.port)
    print(f"replay: {len(exchanges)} recorded answers on {args.host}:{args.port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
