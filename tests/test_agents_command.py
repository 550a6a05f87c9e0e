"""The `command` agent: a script in the sandbox, its exit codes and markers, and hidden tests.

A hostile command agent searches the whole filesystem it can see, the workspace's git objects,
its environment and the network: it finds none of the hidden test patch, the reference patch,
FAIL_TO_PASS, the dataset, the store or future history, and reaches no address but the model
endpoint (through the harness's proxy, which keeps the API key to itself).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from agent_helpers import Demo, demo_in, needs_bwrap, run_one
from fake_openai import Error, FakeOpenAI, text
from swebounty.agents import create_agent
from swebounty.records import write_jsonl
from swebounty.tasks import Task

pytestmark = [pytest.mark.sandbox, pytest.mark.network, needs_bwrap]

EXAMPLE = Path(__file__).parents[1] / "examples" / "diff_agent.py"


@pytest.fixture(scope="module")
def demo(shared_demo: Demo) -> Demo:
    return shared_demo


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / f"agent-{uuid.uuid4().hex[:6]}.sh"
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def test_the_guides_example_agent_resolves_a_task(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    guide = (Path(__file__).parents[1] / "docs" / "guides" / "agents.md").read_text()
    assert EXAMPLE.read_text().split("\n", 1)[1] in guide  # the guide shows this very file
    answer = text(f"Here is the fix:\n```diff\n{task.patch}```\n")
    with FakeOpenAI([answer]) as fake:
        agent = create_agent(
            "command",
            {"command": f"python3 {EXAMPLE}", "model": "fake-model", "base_url": fake.url},
        )
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent)
    assert verdict.status == "resolved", (verdict.reason, attempt.error, attempt.trajectory)
    assert attempt.status == "submitted" and attempt.patch.strip()
    assert attempt.tokens_in and attempt.tokens_out  # counted by the proxy
    [request] = [e for e in attempt.trajectory if e["type"] == "model_request"]
    assert request["status"] == 200 and request["path"] == "/v1/chat/completions"
    prompt = fake.chat_requests[0].body["messages"][0]["content"]
    assert task.problem_statement.strip() in prompt


def test_a_cache_with_a_long_path_still_reaches_the_model(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    # The model's unix socket once lived under the cache's work directory: with a cache path
    # this long it was over the 107 bytes a socket path may have, and every attempt an error.
    base = tmp_path_factory.mktemp("long")
    cache = base / ("c" * (150 - len(str(base)) - 1))
    assert len(str(cache)) >= 150
    long_demo = demo_in(cache)
    task = long_demo.task(1)
    answer = text(f"Here is the fix:\n```diff\n{task.patch}```\n")
    with FakeOpenAI([answer]) as fake:
        options = {"command": f"python3 {EXAMPLE}", "model": "fake-model", "base_url": fake.url}
        agent = create_agent("command", options)
        [(attempt, verdict)] = run_one(long_demo, tmp_path / "runs", task, agent)
    assert verdict.status == "resolved", (verdict.reason, attempt.error)
    assert [r["status"] for r in attempt.trajectory if r["type"] == "model_request"] == [200]


def test_a_temp_dir_too_long_for_the_socket_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_temp = tmp_path / ("t" * 120)
    long_temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_temp))
    with pytest.raises(ValueError, match=r"unix socket .* over the 107 .*TMPDIR"):
        create_agent("command", {"command": "true", "base_url": "http://127.0.0.1:9/v1"})
    create_agent("command", {"command": "true"})  # no model, no socket: nothing to refuse


def test_the_budget_stops_an_agent_that_goes_on_calling_the_model(
    demo: Demo, tmp_path: Path
) -> None:
    task = demo.task(1)
    # Edits the code, then streams one call after another, retrying whatever it is told.
    greedy = tmp_path / "greedy.py"
    greedy.write_text(
        textwrap.dedent("""
        import json, os, time, urllib.error, urllib.request
        with open("tinytext/__init__.py", "a") as f:
            f.write("# half done\\n")
        body = json.dumps({"model": "m", "stream": True,
                           "messages": [{"role": "user", "content": "go on"}]}).encode()
        for _ in range(200):
            try:
                urllib.request.urlopen(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
                                       data=body).read()
            except urllib.error.HTTPError as e:
                print("refused", e.code, flush=True)
            time.sleep(0.2)
        """)
    )
    with FakeOpenAI([text("go")] * 200) as fake:
        options = {"command": f"python3 {greedy}", "model": "fake-model", "base_url": fake.url,
                   "max_tokens": 100}  # fmt: skip
        agent = create_agent("command", options)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent, time_limit_s=60)
    assert attempt.stop_reason == "budget", (attempt.error, attempt.trajectory[-3:])
    assert attempt.status == "submitted" and "half done" in attempt.patch  # on_limit: submit
    assert attempt.seconds < 30  # stopped, not left to run out its time
    assert attempt.tokens_in is not None and attempt.tokens_out is not None
    assert 100 <= attempt.tokens_in + attempt.tokens_out < 100 + 60  # one answer past it at most
    assert not attempt.tokens_incomplete  # the streamed calls were asked for their usage
    assert all(r.body["stream_options"] == {"include_usage": True} for r in fake.chat_requests)
    assert len(fake.chat_requests) == len([e for e in attempt.trajectory
                                           if e.get("tokens_in") and e["type"] == "model_request"])  # fmt: skip
    assert verdict.status == "unresolved"


@pytest.mark.parametrize(
    ("answer", "status", "stop_reason"),
    [(Error(503), "infra_error", "model_down"), (Error(400), "agent_error", "crash")],
)
def test_an_agent_that_stops_on_a_failing_endpoint_is_not_charged_with_it(
    demo: Demo, tmp_path: Path, answer: Error, status: str, stop_reason: str
) -> None:
    """The example agent crashes on any error answer: after a 5xx that is the endpoint's
    failure (infra_error, run again on resume), after a 400 its own request's."""
    options = {"command": f"python3 {EXAMPLE}", "model": "fake-model"}
    with FakeOpenAI([answer]) as fake:
        agent = create_agent("command", {**options, "base_url": fake.url})
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", demo.task(1), agent)
    assert (attempt.status, attempt.stop_reason) == (status, stop_reason), attempt.error
    if status == "infra_error":
        assert "failed, the last with 503" in attempt.error
        assert [e["ended_as"] for e in attempt.trajectory if e["type"] == "model_down"] == ["crash"]
    assert verdict.status == {"infra_error": "error", "agent_error": "agent_error"}[status]


@pytest.mark.parametrize(
    ("body", "status", "verdict_status"),
    [
        ("exit 42\n", "skipped", "unresolved"),
        ('touch "$SWEBOUNTY_OUTPUT/skip"; echo x >> README.md\n', "skipped", "unresolved"),
        ("echo broken >&2; exit 3\n", "agent_error", "agent_error"),
        ("sleep 30\n", "agent_error", "agent_error"),
        ("rm -rf .git\n", "agent_error", "agent_error"),
        ("", "skipped", "unresolved"),  # exit 0 with no change: nothing to submit
    ],
)
def test_exit_codes_and_markers(
    demo: Demo, tmp_path: Path, body: str, status: str, verdict_status: str
) -> None:
    agent = create_agent("command", {"command": str(_script(tmp_path, body))})
    [(attempt, verdict)] = run_one(demo, tmp_path / "runs", demo.task(2), agent, time_limit_s=5)
    assert attempt.status == status, attempt.error
    assert verdict.status == verdict_status
    if "exit 3" in body:
        assert "exited with code 3" in attempt.error and "broken" in attempt.error
    if "sleep" in body:
        assert attempt.stop_reason == "time_limit" and attempt.seconds < 30


def _hostile_agent(tmp_path: Path, targets: dict[str, object]) -> Path:
    """A script that looks for everything it must not find and prints what it found."""
    code = textwrap.dedent(
        """
        import json, os, socket, subprocess, urllib.error, urllib.request
        T = json.loads(TARGETS)
        me = os.path.realpath(__file__)
        found = {"paths": [], "hits": [], "reached": [], "model": None, "errors": {}}
        for path in T["paths"]:
            if os.path.lexists(path):
                found["paths"].append(path)
        needles = [n.encode() for n in T["needles"]]
        # /dev is skipped, but its shm may hold workspaces (repos.workspace_root): searched too
        for top in ("/", "/dev/shm"):
            for root, dirs, files in os.walk(top):
                dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev", "/usr")]
                for name in files:
                    path = os.path.join(root, name)
                    if name == "runs.sqlite" or name.endswith((".jsonl", ".parquet")):
                        found["hits"].append(["name", path])
                    if os.path.realpath(path) == me or os.path.islink(path):
                        continue
                    try:
                        with open(path, "rb") as fh:
                            data = fh.read(20 << 20)
                    except OSError:
                        continue
                    for needle in needles:
                        if needle in data:
                            found["hits"].append([needle.decode(), path])
        env = "\\n".join(f"{k}={v}" for k, v in os.environ.items()).encode()
        env += open("/proc/1/cmdline", "rb").read() + open("/proc/self/cmdline", "rb").read()
        found["hits"] += [[n.decode(), "environ/cmdline"] for n in needles if n in env]
        objs = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"],
                              capture_output=True).stdout
        found["hits"] += [[n.decode(), "git objects"] for n in needles if n in objs]
        commits = subprocess.run(["git", "rev-list", "--all"], capture_output=True, text=True)
        found["commits"] = len(commits.stdout.split())
        for name, (host, port, kind) in T["addresses"].items():
            try:
                s = socket.socket(socket.AF_INET, kind)
                s.settimeout(3)
                s.connect((host, port))
                if kind == socket.SOCK_DGRAM:
                    s.send(b"x")
                found["reached"].append(name)
            except OSError as e:
                found["errors"][name] = str(e)
        try:
            socket.getaddrinfo("pypi.org", 443)
            found["reached"].append("dns")
        except OSError as e:
            found["errors"]["dns"] = str(e)
        # The model's socket: to be used, never opened to others, replaced or kept company.
        sock = os.environ["SWEBOUNTY_MODEL_SOCKET"]
        found["tampered"] = []
        for name, act in [
            ("chmod", lambda: os.chmod(sock, 0o666)),
            ("chmod dir", lambda: os.chmod(os.path.dirname(sock), 0o777)),
            ("plant", lambda: open(os.path.join(os.path.dirname(sock), "x"), "w").close()),
            ("unlink", lambda: os.unlink(sock)),
        ]:
            try:
                act()
                found["tampered"].append(name)
            except OSError as e:
                found["errors"][name] = str(e)
        base = os.environ["OPENAI_BASE_URL"]
        found["model"] = json.load(urllib.request.urlopen(base + "/models"))["data"][0]["id"]
        found["refused"] = []
        for path, data in [("/../admin", None), ("/../../etc/passwd", None), ("/files", None),
                           ("/files/file-1/content", None), ("/fine_tuning/jobs", b"{}"),
                           ("/batches", b"{}"), ("/%2e%2e/admin", None)]:
            try:
                urllib.request.urlopen(base + path, data=data)
                found["reached"].append("proxy" + path)
            except urllib.error.HTTPError as e:
                found["refused"].append(e.code)
            except OSError as e:
                found["errors"]["proxy" + path] = str(e)
        print("HOSTILE=" + json.dumps(found))
        raise SystemExit(42)
        """
    )
    path = tmp_path / "hostile.py"
    path.write_text(f"TARGETS = {json.dumps(json.dumps(targets))}\n{code}")
    return path


def _canaried(task: Task, canary: str) -> Task:
    """The task with a marker in each hidden field, so a leak anywhere is found by name."""
    return task.model_copy(
        update={
            "test_patch": task.test_patch + f"# TEST_{canary}\n",
            "patch": task.patch + f"# GOLD_{canary}\n",
            "FAIL_TO_PASS": [*task.FAIL_TO_PASS, f"tests/test_x.py::F2P_{canary}"],
            "PASS_TO_PASS": [*task.PASS_TO_PASS, f"tests/test_x.py::P2P_{canary}"],
        }
    )


def _host_address() -> str:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # no packet is sent: this only picks a route
        return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


def test_a_hostile_agent_finds_nothing_hidden_and_reaches_only_the_model(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = "CANARY" + uuid.uuid4().hex
    public = "PUBLIC" + uuid.uuid4().hex
    task = _canaried(demo.task(1), canary)
    task.problem_statement += f"\n{public}\n"
    dataset = tmp_path / "data" / "tasks.jsonl"
    dataset.parent.mkdir()
    write_jsonl(dataset, [task])
    runs = tmp_path / "runs"
    secret = "sk-" + uuid.uuid4().hex
    monkeypatch.setenv("I9_TEST_MODEL_KEY", secret)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("0.0.0.0", 0))
    listener.listen()
    port = listener.getsockname()[1]
    fix_line = '(900, "CM")'  # only in the fix commit, later than the base
    assert fix_line in task.patch
    with FakeOpenAI([]) as fake:
        targets = {
            "paths": [
                str(dataset),
                str(dataset.parent),
                str(runs),
                str(runs / "runs.sqlite"),
                str(demo.mirror),
                str(Path(sys.prefix) / "bin" / "swebounty"),
            ],
            # The public marker is a control: the search must find it (in the task file).
            "needles": [canary, secret, str(dataset), fix_line, public],
            "addresses": {
                "host loopback": ["127.0.0.1", fake.port, socket.SOCK_STREAM],
                "host address": [_host_address(), port, socket.SOCK_STREAM],
                "internet": ["1.1.1.1", 443, socket.SOCK_STREAM],
                "dns udp": ["8.8.8.8", 53, socket.SOCK_DGRAM],
            },
        }
        hostile = _hostile_agent(tmp_path, targets)
        options = {"command": f"python3 {hostile}", "model": "fake-model", "base_url": fake.url,
                   "api_key_env": "I9_TEST_MODEL_KEY"}  # fmt: skip
        agent = create_agent("command", options)
        [(attempt, verdict)] = run_one(demo, runs, task, agent)
    listener.close()
    [output] = [e for e in attempt.trajectory if e["type"] == "agent_output"]
    line = next(x for x in output["stdout"].splitlines() if x.startswith("HOSTILE="))
    found = json.loads(line.removeprefix("HOSTILE="))
    assert found["paths"] == [], found["paths"]
    leaks = [hit for hit in found["hits"] if hit[0] != public]
    assert leaks == [], leaks
    assert [Path(hit[1]).name for hit in found["hits"]] == ["task.json"]  # the control
    assert found["commits"] == 1
    assert found["reached"] == [], found["reached"]
    assert found["tampered"] == [], found["tampered"]
    assert set(found["errors"]) >= {"host loopback", "host address", "internet", "dns udp"}
    assert found["model"] == "fake-model"  # the endpoint, through the proxy
    assert [r.path for r in fake.requests] == ["/v1/models"]
    assert fake.requests[0].headers["Authorization"] == f"Bearer {secret}"
    assert found["refused"] == [403] * 7  # only inference reaches the provider
    assert attempt.status == "skipped" and verdict.status == "unresolved"
    assert attempt.flags == ["calls_non_inference_api"]
    assert verdict.hack_flags == ["calls_non_inference_api"]
    assert os.path.exists(dataset)  # it was there all along, just not for the agent
