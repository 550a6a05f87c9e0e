"""Metering an attempt's model use: every token counted, or the count marked incomplete, and a
budget in tokens or dollars (SWE-Lancer's price limit) that stops the attempt when spent.

A `Meter` adds up the usage of each model answer. An answer that spent tokens but reports none
(a stream asked without `stream_options.include_usage` by a server that ignores it, an answer
cut off, a client that hung up mid-stream) makes the count *incomplete*: its tokens and cost are
then a lower bound, and scores never sum them as if they were complete. `ask_for_usage` adds
`stream_options.include_usage` to streamed requests so that servers report what they can.
`UsageReader` reads an answer's usage as its bytes go by (JSON, or server-sent events, where the
usage comes in the last chunk), without keeping a stream of any length in memory.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from pydantic import BaseModel, Field

from swebounty.agents.prices import Price

# Endpoints whose streamed requests take stream_options (the Responses API always reports
# usage in its `response.completed` event).
_STREAM_OPTIONS_PATHS = ("/v1/chat/completions", "/v1/completions")
_JSON_BYTES = 16 << 20  # of a JSON answer, read for its usage
_LINE_BYTES = 4 << 20  # of one server-sent event line


class Budget(BaseModel):
    """What one attempt may spend on the model; None: no limit of that kind."""

    max_tokens: int | None = Field(None, ge=1, description="tokens in + out per attempt")
    max_cost_usd: float | None = Field(None, gt=0, description="dollars per attempt")
    price: Price | None = Field(None, description="the model's price, needed for max_cost_usd")

    def check(self) -> Budget:
        if self.max_cost_usd is not None and self.price is None:
            raise ValueError(
                "a budget in dollars needs the model's price: add the model to a price table "
                "and pass it with --prices"
            )
        return self


class Meter:
    """Tokens and cost of one attempt's model answers, thread-safe, with an optional budget."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget.check() if budget else None
        self.tokens_in = 0
        self.tokens_out = 0
        self.answers = 0  # answers that spent tokens
        self.uncounted = 0  # of those, answers with no usage: the count is a lower bound
        self._lock = threading.Lock()

    def add(self, tokens_in: int, tokens_out: int) -> None:
        with self._lock:
            self.tokens_in += tokens_in
            self.tokens_out += tokens_out
            self.answers += 1

    def missing(self) -> None:
        """An answer that spent tokens and said not how many."""
        with self._lock:
            self.answers += 1
            self.uncounted += 1

    @property
    def complete(self) -> bool:
        return self.uncounted == 0

    @property
    def cost_usd(self) -> float | None:
        price = self.budget.price if self.budget else None
        if price is None:
            return None
        return (self.tokens_in * price.input + self.tokens_out * price.output) / 1_000_000

    def exhausted(self) -> str | None:
        """What ran out ("120 of 100 tokens"), or None while the budget lasts."""
        if self.budget is None:
            return None
        limit, used = self.budget.max_tokens, self.tokens_in + self.tokens_out
        if limit is not None and used >= limit:
            return f"{used:,} of {limit:,} tokens spent"
        cost, dollars = self.cost_usd, self.budget.max_cost_usd
        if dollars is not None and cost is not None and cost >= dollars:
            return f"${cost:.4f} of ${dollars:.4f} spent"
        return None


def ask_for_usage(path: str, data: dict[str, Any]) -> bool:
    """Ask a streamed chat or completions request to report its usage; True if it changed."""
    if path not in _STREAM_OPTIONS_PATHS or data.get("stream") is not True:
        return False
    options = data.get("stream_options")
    options = dict(options) if isinstance(options, dict) else {}
    if options.get("include_usage") is True:
        return False
    data["stream_options"] = {**options, "include_usage": True}
    return True


def usage_tokens(data: Any) -> tuple[int, int] | None:
    """(tokens in, tokens out) from an answer or a stream event: chat/completions' `usage`
    (prompt/completion tokens), the Responses API's (input/output tokens, also inside the
    `response` of its events); None when it has none."""
    if not isinstance(data, dict):
        return None
    usage = data.get("usage")
    if not isinstance(usage, dict) and isinstance(data.get("response"), dict):
        usage = data["response"].get("usage")
    if not isinstance(usage, dict):
        return None
    for key_in, key_out in (
        ("prompt_tokens", "completion_tokens"),
        ("input_tokens", "output_tokens"),
    ):
        tokens_in, tokens_out = usage.get(key_in), usage.get(key_out) or 0
        if isinstance(tokens_in, int) and _count(tokens_in) and _count(tokens_out):
            return tokens_in, int(tokens_out)
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53


class UsageReader:
    """Feed an answer's bytes as they pass; `usage()` is the last usage they reported."""

    def __init__(self, content_type: str) -> None:
        self.stream = "event-stream" in content_type.lower()
        self._buffer = bytearray()
        self._last: tuple[int, int] | None = None
        self.overflow = False  # a JSON answer or an event line too long to read

    def feed(self, chunk: bytes) -> None:
        if not self.stream:
            if len(self._buffer) + len(chunk) > _JSON_BYTES:
                self.overflow = True
                self._buffer.clear()
            elif not self.overflow:
                self._buffer += chunk
            return
        self._buffer += chunk
        *lines, rest = self._buffer.split(b"\n")
        for line in lines:
            self._line(bytes(line))
        self._buffer = bytearray(rest)
        if len(self._buffer) > _LINE_BYTES:
            self.overflow = True
            self._buffer.clear()

    def _line(self, line: bytes) -> None:
        line = line.strip()
        if line.startswith(b"data:") and b'"usage"' in line:
            self._last = _parse(line[5:]) or self._last

    def usage(self) -> tuple[int, int] | None:
        if self.stream:
            self._line(bytes(self._buffer))
            return self._last
        return None if self.overflow else _parse(bytes(self._buffer))


def _parse(raw: bytes) -> tuple[int, int] | None:
    try:
        return usage_tokens(json.loads(raw))
    except ValueError:
        return None
