"""`--agent aider`: the PyPI release, unchanged, in the sandbox, against a scripted server.

The server answers the way Aider's models answer in its `diff` edit format (SEARCH/REPLACE
blocks naming the file), streamed, as Aider asks for. A block for a file not yet in its chat
makes Aider add the file and ask again: the model answers twice, as it would. Installing it
needs PyPI: `network`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_helpers import Demo, needs_bwrap, run_one
from fake_openai import FakeOpenAI, text
from swebounty.agents import create_agent
from swebounty.agents.installed import InstalledAgent

pytestmark = [pytest.mark.sandbox, pytest.mark.network, needs_bwrap]

OLD = '_VALUES = [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]'
NEW = (
    '_VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),\n'
    '           (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]'
)


def _edit(search: str, replace: str) -> dict[str, object]:
    return text(
        "The table lacks the subtractive forms.\n\ntinytext/roman.py\n```python\n"
        f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n```\n"
    )


@pytest.fixture(scope="module")
def demo(shared_demo: Demo) -> Demo:
    return shared_demo


def _agent(fake: FakeOpenAI, demo: Demo) -> InstalledAgent:
    options = {
        "model": "fake-model",
        "base_url": fake.url,
        "agents_dir": str(demo.cache / "agents"),
    }
    agent = create_agent("aider", options)
    assert isinstance(agent, InstalledAgent)
    return agent


def test_a_fix_resolves_with_its_history_tokens_and_provenance(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    with FakeOpenAI([_edit(OLD, NEW), _edit(OLD, NEW)]) as fake:
        agent = _agent(fake, demo)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent)
    assert verdict.status == "resolved", (verdict.reason, attempt.error, attempt.trajectory[-3:])
    assert attempt.stop_reason == "submit:exited"
    assert ".aider" not in attempt.patch and ".gitignore" not in attempt.patch
    assert fake.chat_requests[0].body.get("stream") is True  # streamed, and still counted
    assert attempt.tokens_in and attempt.tokens_out and not attempt.tokens_incomplete
    assert task.problem_statement.strip() in fake.chat_requests[0].body["messages"][-1]["content"]
    [history] = [e for e in attempt.trajectory if e["type"] == "agent_trajectory"]
    assert "SEARCH" in history["chat_history"]
    record = agent.provenance()
    assert (record["package"], record["version"]) == ("aider-chat", "0.86.2")


def test_an_answer_without_an_edit_is_a_skip(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    with FakeOpenAI([text("I cannot fix this without more information.")]) as fake:
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, _agent(fake, demo))
    assert attempt.status == "skipped", (attempt.error, attempt.trajectory[-3:])
    assert verdict.status == "unresolved" and verdict.empty_patch


def test_a_malformed_edit_is_reflected_then_given_up(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    wrong = _edit("_VALUES = [(999, 'nothing like this')]", NEW)
    with FakeOpenAI([wrong] * 5) as fake:
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, _agent(fake, demo))
    assert attempt.status == "skipped", (attempt.error, attempt.trajectory[-3:])
    assert verdict.status == "unresolved"
    assert len(fake.chat_requests) > 1  # Aider told the model its block did not match
    sent = [str(r.body["messages"]) for r in fake.chat_requests[1:]]
    assert any("SearchReplaceNoExactMatch" in s for s in sent), sent[-1][-2000:]
