"""The model endpoint, and nothing else: an HTTP proxy from a unix socket to one model server.

A `command` agent's sandbox has no network. When the agent needs the model, the harness binds
this proxy's unix socket into the sandbox (the agent's entry point serves it on the sandbox's
own loopback as $OPENAI_BASE_URL). The proxy forwards inference only (`INFERENCE`: chat
completions, completions, responses, the model list; a run may allow more) to the configured
upstream: no other host, no other path. The path is percent-decoded and normalized before it
is checked, and the normal form is what goes upstream; anything else is refused with 403 and
recorded, so the attempt carries the `calls_non_inference_api` flag (the run's key must not
read the account's files or start fine-tuning jobs). It adds the API key itself (the key never
enters the sandbox), pins the request's `model` to the run's model (provenance stays true), and
meters every answer (meter.py: JSON or server-sent events, streamed requests asked to report
their usage; an answer without one makes the count incomplete). Once the attempt's budget is
spent, inference is refused (429, `insufficient_quota`) and `STATUS_PATH` says so, which the
agent's entry point watches to end the agent.

The socket lives in a private directory of its own under the system's temp dir (`serving`),
not under the cache: a unix socket's path holds at most 107 bytes, and a cache path of any
length with a work directory and a task's name below it does not fit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import posixpath
import socketserver
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from swebounty.agents.meter import Meter, UsageReader, ask_for_usage
from swebounty.safefs import remove_tree
from swebounty.workdirs import make_process_dir, process_dir_prefix, sweep_dead_dirs

log = logging.getLogger(__name__)

# sun_path is 108 bytes with its final NUL: a longer path cannot be bound, nor connected to.
SOCKET_PATH_MAX = 107
SOCKET_NAME = "model.sock"
_DIR_KIND = "sock"  # /tmp/swebounty-<uid>-sock<pid>.<host>-<random>/model.sock

# What an agent may ask of the provider: inference, and the list of models some clients check.
INFERENCE: frozenset[tuple[str, str]] = frozenset(
    {
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/completions"),
        ("POST", "/v1/responses"),
        ("GET", "/v1/models"),
    }
)
REFUSED_FLAG = "calls_non_inference_api"
STATUS_PATH = "/swebounty/budget"  # the harness's own: {"exhausted": null or what ran out}
_PATH_CHARS = 2000  # of a refused request's path, kept in the trajectory

MAX_REQUEST_BYTES = 32 << 20
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "authorization",
    "accept-encoding",
    "content-encoding",
}


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    proxy: ModelProxy


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection; the answer ends at close
    before_answer: Callable[[int], None] | None = None  # ModelProxy.handle's record keeper

    def address_string(self) -> str:
        return "sandbox"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("model proxy: " + format, *args)

    def do_GET(self) -> None:
        self.server.proxy.handle(self)

    def do_POST(self) -> None:
        self.server.proxy.handle(self)

    # Refused, but recorded: an agent probing other methods is news for its attempt.
    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_POST


class ModelProxy:
    """Serve `upstream` (a base URL ending in /v1) on the unix socket `socket_path`."""

    def __init__(
        self,
        socket_path: Path,
        upstream: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        allow: Iterable[tuple[str, str]] = (),
        meter: Meter | None = None,
    ) -> None:
        self.socket_path = Path(socket_path)
        self.upstream = upstream.rstrip("/")
        self.model = model
        self.allowed = INFERENCE | {parse_endpoint(f"{m} {p}") for m, p in allow}
        self.refused = 0  # requests for anything but the allowed endpoints
        self._api_key = api_key
        self._http = httpx.Client(timeout=timeout_s)
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.meter = meter or Meter()
        self.budget_refused = 0  # requests refused once the budget was spent
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ModelProxy:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        check_socket_path(self.socket_path)
        self.socket_path.unlink(missing_ok=True)
        self._server = _Server(str(self.socket_path), _Handler)
        self._server.proxy = self
        # Connecting needs write permission on the socket: its owner's alone (serving gives it
        # to the sandbox's uid), or any local user could spend the run's model key.
        os.chmod(self.socket_path, 0o600)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.socket_path.unlink(missing_ok=True)
        self._http.close()

    # ------------------------------------------------------------------ one request

    def handle(self, req: _Handler) -> None:
        start = time.monotonic()
        record: dict[str, Any] = {
            "type": "model_request",
            "method": req.command[:16],
            "path": req.path[:_PATH_CHARS],
        }
        if req.path == STATUS_PATH:
            _json(req, 200, {"exhausted": self.meter.exhausted()})
            return
        recorded = False

        def keep(status: int) -> None:
            nonlocal recorded
            if not recorded:
                recorded = True
                record.update(status=status, seconds=round(time.monotonic() - start, 3))
                with self._lock:
                    self.requests.append(record)

        # The proxy's own answers are recorded before they are sent: whoever has read one
        # (the agent, a test) finds its record, and an agent that hangs up mid-answer cannot
        # leave its request out of what model_down reads.
        req.before_answer = keep
        status = 502
        try:
            path = normal_path(req.path)
            if path is None or (req.command, path) not in self.allowed:
                status = self._refuse(req, record)
            elif spent := self.meter.exhausted():
                record["refused"] = f"budget: {spent}"
                with self._lock:
                    self.budget_refused += 1
                message = f"swebounty model proxy: this attempt's budget is spent ({spent})"
                status = _error(req, 429, message, code="insufficient_quota")
            else:
                status = self._forward(req, path, record)
        except Exception as exc:  # an agent's bad request must not take the proxy down
            log.debug("model proxy failed on %s", req.path, exc_info=True)
            if isinstance(exc, httpx.TransportError):  # the endpoint, not the request
                record["upstream_error"] = type(exc).__name__
            if not recorded:  # nothing answered yet (else the agent hung up on the answer)
                with contextlib.suppress(OSError):
                    status = _error(req, 502, f"swebounty model proxy: {type(exc).__name__}: {exc}")
        finally:
            keep(status)  # a forwarded answer: recorded once it has streamed, with its usage

    def _refuse(self, req: _Handler, record: dict[str, Any]) -> int:
        record["refused"] = "not an inference endpoint"
        with self._lock:
            self.refused += 1
        allowed = ", ".join(f"{m} {p}" for m, p in sorted(self.allowed, key=lambda e: e[1]))
        return _error(req, 403, f"swebounty model proxy: only inference is served here ({allowed})")

    def _forward(self, req: _Handler, path: str, record: dict[str, Any]) -> int:
        if req.headers.get("transfer-encoding"):
            return _error(req, 411, "send the request body with a Content-Length")
        length = int(req.headers.get("content-length") or 0)
        if length > MAX_REQUEST_BYTES:
            return _error(req, 413, f"request body over {MAX_REQUEST_BYTES} bytes")
        body = req.rfile.read(length) if length else b""
        body = self._rewrite(body, path, record)
        headers = {k: v for k, v in req.headers.items() if k.lower() not in _HOP_BY_HOP}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        query = urlsplit(req.path).query
        # The normal form checked above is what goes upstream, never the agent's spelling.
        url = self.upstream + path[len("/v1") :] + (f"?{query}" if query else "")
        with self._http.stream(req.command, url, content=body, headers=headers) as resp:
            record["forwarded"] = True  # the status is the endpoint's own
            req.send_response(resp.status_code)
            for key, value in resp.headers.items():
                if key.lower() not in _HOP_BY_HOP:
                    req.send_header(key, value)
            req.send_header("Connection", "close")
            req.end_headers()
            reader = UsageReader(resp.headers.get("content-type", ""))
            try:
                for chunk in resp.iter_bytes():
                    reader.feed(chunk)
                    req.wfile.write(chunk)
                    req.wfile.flush()
            except OSError:
                # The agent hung up mid-answer: what the server spent is no longer known.
                record["hung_up"] = True
            self._meter(req.command, resp.status_code, reader, record)
        return resp.status_code

    def _rewrite(self, body: bytes, path: str, record: dict[str, Any]) -> bytes:
        """The request body with the run's model and, when streamed, a request for usage."""
        if not body:
            return body
        try:
            data = json.loads(body)
        except ValueError:
            return body
        if not isinstance(data, dict):
            return body
        record["requested_model"] = data.get("model")
        changed = ask_for_usage(path, data)
        if self.model and data.get("model") != self.model:
            data["model"] = self.model
            changed = True
        return json.dumps(data).encode() if changed else body

    def _meter(self, method: str, status: int, reader: UsageReader, record: dict[str, Any]) -> None:
        usage = reader.usage()
        if usage is not None:
            record.update(tokens_in=usage[0], tokens_out=usage[1])
            self.meter.add(*usage)
        elif method == "POST" and 200 <= status < 300:
            record["uncounted"] = True  # tokens were spent; how many, nobody said
            self.meter.missing()


def normal_path(target: str) -> str | None:
    """The path of a request target, percent-decoded until it no longer changes and normalized
    (`.`, `..`, repeated and trailing slashes), or None when it is not an origin-form path
    ("http://elsewhere/...", "//host/...") or still holds what no endpoint path has (a `%` after
    decoding, a backslash, a control character, a `;` parameter)."""
    if not target.startswith("/") or target.startswith("//"):
        return None
    path = urlsplit(target).path
    for _ in range(4):
        try:
            decoded = unquote(path, errors="strict")
        except UnicodeDecodeError:
            return None
        if decoded == path:
            break
        path = decoded
    else:
        return None
    if any(c in path for c in "%\\;") or any(ord(c) < 0x20 or c == "\x7f" for c in path):
        return None
    path = posixpath.normpath(path)
    return None if path.startswith("//") else path


def parse_endpoint(text: str) -> tuple[str, str]:
    """("POST", "/v1/embeddings") from "POST /v1/embeddings" (a path alone means POST); raises
    ValueError, saying how to write it, for anything that is not a /v1 path in normal form."""
    method, _, path = text.strip().rpartition(" ")
    method = (method.strip() or "POST").upper()
    if method not in ("GET", "POST"):
        raise ValueError(f"allowed endpoint {text!r}: the method must be GET or POST")
    if normal_path(path) != path or not path.startswith("/v1/"):
        raise ValueError(
            f"allowed endpoint {text!r}: write METHOD /v1/PATH, e.g. 'POST /v1/embeddings'"
        )
    return method, path


def check_socket_path(path: Path) -> None:
    """Raise ValueError, saying what to do, when `path` is too long for a unix socket."""
    size = len(os.fsencode(path))
    if size > SOCKET_PATH_MAX:
        raise ValueError(
            f"the model proxy's unix socket {path} would be {size} bytes long, over the "
            f"{SOCKET_PATH_MAX} the kernel allows: point TMPDIR at a directory with a shorter "
            "path (e.g. export TMPDIR=/tmp)"
        )


def planned_socket_path() -> Path:
    """Where `serving` would put a socket (its random part as placeholders): check_socket_path
    it before a run starts rather than fail every attempt."""
    name = process_dir_prefix(_DIR_KIND) + "x" * 8  # mkdtemp's random part is 8 characters
    return Path(tempfile.gettempdir()) / name / SOCKET_NAME


@contextmanager
def serving(
    upstream: str,
    *,
    model: str | None = None,
    api_key: str | None = None,
    allow: Iterable[tuple[str, str]] = (),
    meter: Meter | None = None,
    give_to: Callable[[Path], None] = lambda path: None,
) -> Iterator[ModelProxy]:
    """A started ModelProxy whose socket is in a fresh private directory under the temp dir;
    `give_to(socket)` hands the socket to the uid that will connect (Sandbox.prepare_workdir).

    Who can reach it: the directory is this user's, 0700 (0711 when the socket was given to
    another uid, so that uid can get to it: it can traverse, not list nor write); the socket is
    0600 and owned by the connecting uid. Another local user cannot connect, and the directory
    holds nothing else. The sandbox mounts the directory read-only: the agent can neither
    chmod the socket nor put anything beside it.
    """
    temp = Path(tempfile.gettempdir())
    _sweep_once(temp)
    sock_dir = make_process_dir(temp, _DIR_KIND)
    try:
        with ModelProxy(
            sock_dir / SOCKET_NAME, upstream, model=model, api_key=api_key, allow=allow, meter=meter
        ) as proxy:
            give_to(proxy.socket_path)
            if os.lstat(proxy.socket_path).st_uid != os.getuid():
                os.chmod(sock_dir, 0o711)  # only now: the socket is 0600 and no longer ours
            yield proxy
    finally:
        if problem := remove_tree(sock_dir):
            log.warning("could not remove the model socket's directory: %s", problem)


@cache
def _sweep_once(temp: Path) -> None:
    """Socket directories this user's killed harnesses left in `temp` (once per process)."""
    sweep_dead_dirs(temp)


def _error(req: _Handler, status: int, message: str, code: str | None = None) -> int:
    return _json(
        req, status, {"error": {"message": message, "type": "swebounty_proxy", "code": code}}
    )


def _json(req: _Handler, status: int, answer: dict[str, Any]) -> int:
    data = json.dumps(answer).encode()
    if req.before_answer is not None:
        req.before_answer(status)
    req.send_response(status)
    req.send_header("Content-Type", "application/json")
    req.send_header("Content-Length", str(len(data)))
    req.end_headers()
    req.wfile.write(data)
    return status
