"""A deterministic OpenAI-compatible server for the agent tests: it replays scripted answers.

`FakeOpenAI(script)` serves `POST /v1/chat/completions` on 127.0.0.1, answering each request
with the next scripted item: an assistant message (`bash("ls")`, `submit()`, `skip()`,
`call(name, raw_arguments)`, `text("...")`), a function of the request's body that returns
one (a model that answers from what a tool told it), or an HTTP error (`Error(503)`). Token
counts are derived from the request's size, so they are the same on every run. Every request
is recorded.
A request with `"stream": true` is answered with server-sent events, as OpenAI does: the
message in one chunk, then, only when the request asked with `stream_options.include_usage`
(and `stream_usage` is left on), a last chunk with the usage. `usage=False` leaves every
answer without one, as some servers do.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias


@dataclass
class Error:
    status: int
    body: str = '{"error": {"message": "scripted failure"}}'


@dataclass
class Slow:
    """Answer with `message` after `seconds`."""

    seconds: float
    message: dict[str, Any]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any] = field(default_factory=dict)


Item: TypeAlias = dict[str, Any] | Error | Slow | Callable[[dict[str, Any]], dict[str, Any]]

_ids = iter(range(1, 1_000_000))


def call(name: str, arguments: str) -> dict[str, Any]:
    """An assistant message with one tool call whose arguments are the raw string given."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{next(_ids)}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        ],
    }


def bash(command: str) -> dict[str, Any]:
    return call("bash", json.dumps({"command": command}))


def submit(**args: Any) -> dict[str, Any]:
    return call("submit", json.dumps(args))


def skip() -> dict[str, Any]:
    return call("skip", "{}")


def text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (a deadline test) is not news


class FakeOpenAI:
    """Replays `script` on 127.0.0.1; when it runs out, answers with plain text (no tool)."""

    def __init__(
        self,
        script: list[Item],
        *,
        usage: bool = True,
        stream_usage: bool = True,
    ) -> None:
        self.script = list(script)
        self.usage = usage
        self.stream_usage = stream_usage
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.record(self, {})
                if self.path.rstrip("/") == "/v1/models":
                    self.reply(200, {"object": "list", "data": [{"id": "fake-model"}]})
                else:
                    self.reply(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.record(self, body)
                if self.path != "/v1/chat/completions":
                    self.reply(404, {"error": {"message": f"no route {self.path}"}})
                    return
                status, answer = fake.answer(body)
                if status == 200 and body.get("stream") is True:
                    self.stream(answer, body)
                else:
                    self.reply(status, answer)

            def stream(self, answer: dict[str, Any], body: dict[str, Any]) -> None:
                choice = answer["choices"][0]
                delta = {**choice["message"], "role": "assistant"}
                chunks: list[dict[str, Any]] = [
                    {"id": answer["id"], "object": "chat.completion.chunk", "choices": [
                        {"index": 0, "delta": delta, "finish_reason": choice["finish_reason"]}
                    ]}
                ]  # fmt: skip
                options = body.get("stream_options") or {}
                if fake.stream_usage and options.get("include_usage") and "usage" in answer:
                    chunks.append({"id": answer["id"], "object": "chat.completion.chunk",
                                   "choices": [], "usage": answer["usage"]})  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")

            def reply(self, status: int, data: Any) -> None:
                raw = data.encode() if isinstance(data, str) else json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def record(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self.lock:
            self.requests.append(Recorded(handler.path, dict(handler.headers.items()), body))

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            item = self.script.pop(0) if self.script else text("(the script has ended)")
        if isinstance(item, Error):
            return item.status, item.body
        if isinstance(item, Slow):
            time.sleep(item.seconds)
            item = item.message
        if callable(item):
            item = item(body)
        prompt = len(json.dumps(body.get("messages", []))) // 4
        completion = len(json.dumps(item)) // 4
        answer = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": body.get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": item,
                    "finish_reason": "tool_calls" if item.get("tool_calls") else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        if not self.usage:
            del answer["usage"]
        return 200, answer

    @property
    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
