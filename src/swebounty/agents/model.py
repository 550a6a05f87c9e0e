"""A client for the OpenAI-compatible chat completions API, with retries and token counts.

vLLM, llama.cpp's server, llama-cpp-python's server and hosted providers all speak it, so one
short client serves open weights offline as well as any provider. Server errors (5xx, 429, a
dropped connection) are retried with exponential backoff; when the retries run out the endpoint
is down, which is an infrastructure failure (`ModelUnavailable`), not the agent's. A 4xx
answer is a bad request the agent made (`ModelRequestError`: its context overflowed, say).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

log = logging.getLogger(__name__)

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}  # a server's failure, not the request's


class ModelUnavailable(RuntimeError):
    """The model endpoint kept failing (connection, 5xx, 429) after every retry."""


class ModelRequestError(RuntimeError):
    """The endpoint refused the request (4xx): the request was bad, not the server."""


class ModelTimeUp(RuntimeError):
    """The attempt's deadline passed while waiting for the model: the agent's time is up."""


@dataclass
class Completion:
    """One chat completion: the assistant message and what it cost in tokens."""

    message: dict[str, Any]
    finish_reason: str | None
    tokens_in: int | None
    tokens_out: int | None
    seconds: float
    retries: list[str] = field(default_factory=list)


class ChatModel:
    """POST {base_url}/chat/completions with tools; `api_key` goes in the Authorization header."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        retries: int = 5,
        backoff_s: float = 2.0,
        max_output_tokens: int | None = 4096,
        temperature: float | None = 0.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout_s = timeout_s
        self.model = model
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)

    def close(self) -> None:
        self._http.close()

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        deadline: float | None = None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> Completion:
        """One completion. Retries server errors until `retries` run out; never waits past
        `deadline` (a `time.monotonic()` value): then it raises ModelTimeUp."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "tools": tools}
        if self.max_output_tokens:
            body["max_tokens"] = self.max_output_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        retried: list[str] = []
        start = time.monotonic()
        for attempt in range(self.retries + 1):
            timeout = self.timeout_s
            if deadline is not None:
                timeout = min(timeout, deadline - time.monotonic())
                if timeout <= 0:
                    raise ModelTimeUp("the attempt's time ran out waiting for the model")
            try:
                resp = self._http.post(self.url, json=body, timeout=timeout)
            except httpx.TransportError as exc:
                if deadline is not None and time.monotonic() >= deadline:
                    raise ModelTimeUp("the attempt's time ran out waiting for the model") from exc
                problem = f"cannot reach {self.url}: {type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    return _completion(resp, time.monotonic() - start, retried)
                problem = f"{self.url} answered {resp.status_code}: {resp.text[:500]}"
                if resp.status_code not in RETRY_STATUS:
                    raise ModelRequestError(problem)
            retried.append(problem)
            wait = self.backoff_s * 2**attempt
            if attempt == self.retries:
                break
            if deadline is not None and time.monotonic() + wait > deadline:
                raise ModelTimeUp(f"no time left to retry: {problem}")
            log.warning("model server error (%s); retrying in %.1f s", problem[:200], wait)
            self._sleep(wait)
        raise ModelUnavailable(f"{retried[-1]} (after {len(retried)} tries)")


def _completion(resp: httpx.Response, seconds: float, retried: list[str]) -> Completion:
    try:
        data = resp.json()
        choice = data["choices"][0]
        message = dict(choice["message"])
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ModelUnavailable(f"the server's answer is not a chat completion: {exc}") from exc
    usage = data.get("usage") or {}
    return Completion(
        message=message,
        finish_reason=choice.get("finish_reason"),
        tokens_in=_int(usage.get("prompt_tokens")),
        tokens_out=_int(usage.get("completion_tokens")),
        seconds=seconds,
        retries=retried,
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None
