"""Every token counted or the count marked incomplete, and a budget that stops the model.

Through the model proxy: an agent that makes one ordinary call and then streams its others
without `stream_options.include_usage` used to be stored with the first call's tokens only.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
import pytest

from fake_openai import FakeOpenAI, bash
from swebounty.agents.meter import Budget, Meter, UsageReader, ask_for_usage, usage_tokens
from swebounty.agents.prices import Price
from swebounty.agents.proxy import STATUS_PATH, ModelProxy


def _client(socket_path: Path) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(socket_path)), timeout=10)


def _chat(client: httpx.Client, *, stream: bool) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": "fix it"}]}
    if stream:
        body["stream"] = True
    return client.post("http://sandbox/v1/chat/completions", json=body)


def test_streamed_calls_are_asked_for_their_usage_and_counted(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    with (
        FakeOpenAI([bash("ls")] * 6) as fake,
        ModelProxy(sock, fake.url) as proxy,
        _client(sock) as client,
    ):
        assert _chat(client, stream=False).status_code == 200
        for _ in range(5):
            resp = _chat(client, stream=True)
            assert resp.status_code == 200 and "data: [DONE]" in resp.text
    sent = fake.chat_requests
    assert [r.body.get("stream_options") for r in sent[1:]] == [{"include_usage": True}] * 5
    assert "stream_options" not in sent[0].body  # an ordinary call is left as it was
    counted = [r for r in proxy.requests if "tokens_in" in r]
    assert len(counted) == 6
    meter = proxy.meter
    assert (meter.answers, meter.uncounted, meter.complete) == (6, 0, True)
    assert meter.tokens_in == sum(r["tokens_in"] for r in counted) > 6
    assert meter.tokens_out == sum(r["tokens_out"] for r in counted) > 6


def test_a_stream_without_usage_makes_the_count_incomplete(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    with (
        FakeOpenAI([bash("ls")] * 6, stream_usage=False) as fake,
        ModelProxy(sock, fake.url) as proxy,
        _client(sock) as client,
    ):
        assert _chat(client, stream=False).status_code == 200
        for _ in range(5):
            assert _chat(client, stream=True).status_code == 200
    meter = proxy.meter
    assert (meter.answers, meter.uncounted, meter.complete) == (6, 5, False)
    assert [r.get("uncounted", False) for r in proxy.requests] == [False] + [True] * 5


def test_an_answer_without_usage_makes_the_count_incomplete(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    with (
        FakeOpenAI([bash("ls")], usage=False) as fake,
        ModelProxy(sock, fake.url) as proxy,
        _client(sock) as client,
    ):
        assert _chat(client, stream=False).status_code == 200
        assert client.get("http://sandbox/v1/models").status_code == 200  # spends nothing
    assert (proxy.meter.answers, proxy.meter.uncounted) == (1, 1)
    assert not proxy.meter.complete


def test_an_agent_that_hangs_up_mid_stream_leaves_the_count_incomplete(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    long_answer = bash("x" * 3_000_000)  # more than the socket buffers hold
    with FakeOpenAI([long_answer]) as fake, ModelProxy(sock, fake.url) as proxy:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(sock))
            body = json.dumps({"messages": [], "stream": True}).encode()
            conn.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            conn.recv(1024)  # the answer started; then the agent goes away
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        for _ in range(200):
            if proxy.requests:
                break

            time.sleep(0.05)
    assert proxy.requests and proxy.requests[0].get("hung_up")
    assert not proxy.meter.complete


def test_the_budget_refuses_the_model_once_spent(tmp_path: Path) -> None:
    sock = tmp_path / "model.sock"
    meter = Meter(Budget(max_tokens=10))
    with (
        FakeOpenAI([bash("ls")] * 3) as fake,
        ModelProxy(sock, fake.url, meter=meter) as proxy,
        _client(sock) as client,
    ):
        assert client.get(f"http://sandbox{STATUS_PATH}").json() == {"exhausted": None}
        assert _chat(client, stream=False).status_code == 200  # > 10 tokens: now spent
        refused = _chat(client, stream=True)
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "insufficient_quota"
        status = client.get(f"http://sandbox{STATUS_PATH}").json()
        assert "tokens spent" in status["exhausted"]
    assert len(fake.chat_requests) == 1  # the refused call never reached the provider
    assert proxy.budget_refused == 1
    assert proxy.requests[-1]["refused"].startswith("budget")
    assert len(proxy.requests) == 2  # the status calls are the harness's, not recorded


def test_a_budget_in_dollars_uses_the_price_and_needs_one() -> None:
    price = Price(input=1_000_000.0, output=0.0)  # $1 per token in
    meter = Meter(Budget(max_cost_usd=2.5, price=price))
    meter.add(2, 100)
    assert meter.cost_usd == 2.0 and meter.exhausted() is None
    meter.add(1, 0)
    assert meter.exhausted() == "$3.0000 of $2.5000 spent"
    with pytest.raises(ValueError, match="--prices"):
        Meter(Budget(max_cost_usd=1.0))


def test_usage_of_every_api_shape() -> None:
    assert usage_tokens({"usage": {"prompt_tokens": 3, "completion_tokens": 4}}) == (3, 4)
    assert usage_tokens({"usage": {"input_tokens": 5, "output_tokens": 6}}) == (5, 6)
    event = {"type": "response.completed", "response": {"usage": {"input_tokens": 7,
                                                                   "output_tokens": 8}}}  # fmt: skip
    assert usage_tokens(event) == (7, 8)
    assert usage_tokens({"usage": {"prompt_tokens": 9, "total_tokens": 9}}) == (9, 0)
    for bad in ({}, {"usage": None}, {"usage": {"prompt_tokens": -1}}, [1],
                {"usage": {"prompt_tokens": True, "completion_tokens": 1}}):  # fmt: skip
        assert usage_tokens(bad) is None


def test_the_usage_reader_reads_events_split_anywhere() -> None:
    events = b'data: {"choices": []}\n\ndata: {"usage": {"prompt_tokens": 11, ' \
             b'"completion_tokens": 12}}\n\ndata: [DONE]\n\n'  # fmt: skip
    for size in (1, 7, len(events)):
        reader = UsageReader("text/event-stream; charset=utf-8")
        for i in range(0, len(events), size):
            reader.feed(events[i : i + size])
        assert reader.usage() == (11, 12)
    plain = UsageReader("application/json")
    plain.feed(b'{"usage": {"prompt_tokens": 1, "completion_tokens": 2}}')
    assert plain.usage() == (1, 2)


def test_ask_for_usage_keeps_other_stream_options() -> None:
    data = {"stream": True, "stream_options": {"x": 1}}
    assert ask_for_usage("/v1/chat/completions", data)
    assert data["stream_options"] == {"x": 1, "include_usage": True}
    assert not ask_for_usage("/v1/chat/completions", data)  # already asked
    assert not ask_for_usage("/v1/chat/completions", {"stream": False})
    assert not ask_for_usage("/v1/responses", {"stream": True})  # reports usage anyway
