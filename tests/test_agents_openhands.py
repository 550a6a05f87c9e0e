"""`--agent openhands`: the PyPI release, unchanged, in the sandbox, against a scripted server.

The server answers the way OpenHands' models answer its default agent: one native tool call
per answer to its own tools (`terminal`, `file_editor` with an absolute path, `finish`), with
the `security_risk` and `summary` fields its tool schemas ask for. The edit's path comes from
what `pwd` told the model, as a model would learn it. Installing it needs PyPI (`network`) and
Python 3.12 or 3.13 (skipped, with the reason, where none is installed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import Demo, needs_bwrap, run_one
from fake_openai import FakeOpenAI, call
from swebounty.agents import create_agent
from swebounty.agents.installed import AgentInstallError, InstalledAgent, agent_python
from swebounty.agents.openhands import OpenHandsAgent

pytestmark = [pytest.mark.sandbox, pytest.mark.network, needs_bwrap]

OLD = '_VALUES = [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]'
NEW = (
    '_VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),\n'
    '           (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]'
)


def _tool(name: str, **arguments: Any) -> dict[str, Any]:
    arguments = {**arguments, "security_risk": "LOW", "summary": f"{name} step"}
    return call(name, json.dumps(arguments))


def terminal(command: str) -> dict[str, Any]:
    return _tool("terminal", command=command)


def finish(message: str) -> dict[str, Any]:
    return _tool("finish", message=message)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    return str(content)


def _last_text(body: dict[str, Any]) -> str:
    return _text(body["messages"][-1])


def _edit_in_workspace(body: dict[str, Any]) -> dict[str, Any]:
    """`file_editor` on roman.py under the folder `pwd` printed (its paths are absolute)."""
    output = _last_text(body)
    cwd = next(line for line in output.splitlines() if line.startswith("/"))
    path = f"{cwd.strip()}/tinytext/roman.py"
    return _tool("file_editor", command="str_replace", path=path, old_str=OLD, new_str=NEW)


@pytest.fixture(scope="module")
def demo(shared_demo: Demo) -> Demo:
    try:
        agent_python("openhands", OpenHandsAgent.requires_python)
    except AgentInstallError as exc:
        pytest.skip(str(exc))
    return shared_demo


def _agent(fake: FakeOpenAI, demo: Demo, **settings: object) -> InstalledAgent:
    options = {"model": "fake-model", "base_url": fake.url, "settings": settings,
               "agents_dir": str(demo.cache / "agents")}  # fmt: skip
    agent = create_agent("openhands", options)
    assert isinstance(agent, InstalledAgent)
    return agent


def _events(trajectory: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["event"] for e in trajectory if e["type"] == "agent_trajectory" and "event" in e]


def test_a_fix_resolves_with_its_events_tokens_and_provenance(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    script = [terminal("pwd"), _edit_in_workspace, terminal("git diff"), finish("Fixed.")]
    with FakeOpenAI(script) as fake:
        agent = _agent(fake, demo)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent)
    assert verdict.status == "resolved", (verdict.reason, attempt.error, attempt.trajectory[-3:])
    assert attempt.stop_reason == "submit:finished"
    assert attempt.patch.count("diff --git") == 1 and ".openhands" not in attempt.patch
    assert attempt.tokens_in and attempt.tokens_out and not attempt.tokens_incomplete
    assert len(fake.chat_requests) == 4
    first = fake.chat_requests[0].body
    assert {"terminal", "file_editor", "finish"} <= {t["function"]["name"] for t in first["tools"]}
    assert task.problem_statement.strip() in _last_text(first)
    kinds = [e.get("kind") for e in _events(attempt.trajectory)]
    assert kinds[:2] == ["SystemPromptEvent", "MessageEvent"], kinds
    assert kinds.count("ActionEvent") == 4 and kinds.count("ObservationEvent") >= 3, kinds
    [exit_info] = [e for e in attempt.trajectory if e["type"] == "agent_exit"]
    assert exit_info["exit_status"] == "finished"
    assert attempt.trajectory[-1] == {"type": "end", "reason": "submit:finished",
                                      "status": "submitted"}  # fmt: skip
    # What the proxy counted is what OpenHands itself counted.
    usage = exit_info["usage"]
    assert (attempt.tokens_in, attempt.tokens_out) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    record = agent.provenance()
    assert (record["agent"], record["package"]) == ("openhands", "openhands-ai")
    assert record["version"] == "1.11.0"


def test_finishing_without_an_edit_is_a_skip(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    script = [terminal("cat tinytext/roman.py"), finish("I cannot fix this: I give up.")]
    with FakeOpenAI(script) as fake:
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, _agent(fake, demo))
    assert attempt.status == "skipped", (attempt.error, attempt.trajectory[-3:])
    assert verdict.status == "unresolved" and verdict.empty_patch
    assert len(fake.chat_requests) == 2


def test_malformed_calls_are_told_to_the_model_then_its_limit_skips(
    demo: Demo, tmp_path: Path
) -> None:
    task = demo.task(1)
    script = [call("file_editor", "{not json"), call("browse", "{}"), terminal("ls")]
    with FakeOpenAI(script * 3) as fake:
        agent = _agent(fake, demo, max_iterations=3)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent)
    assert attempt.status == "skipped", (attempt.error, attempt.trajectory[-3:])
    assert attempt.stop_reason == "skip:error"
    assert verdict.status == "unresolved" and verdict.empty_patch
    # Its own error messages went back to the model, one per malformed call.
    told = [_text(m) for m in fake.chat_requests[-1].body["messages"] if m["role"] == "tool"]
    assert "Error validating tool 'file_editor'" in told[0], told
    assert "Tool 'browse' not found" in told[1], told
    kinds = [e.get("kind") for e in _events(attempt.trajectory)]
    assert kinds.count("AgentErrorEvent") == 2 and kinds[-1] == "ConversationErrorEvent", kinds
    [exit_info] = [e for e in attempt.trajectory if e["type"] == "agent_exit"]
    assert "maximum iterations limit (3)" in exit_info["error"]
