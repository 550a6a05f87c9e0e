"""`--agent mini-swe-agent`: the PyPI release, unchanged, in the sandbox, against a scripted server.

The server replays what mini-swe-agent's own model calls look like (one `bash` tool call per
answer, the submission as `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt`, as its
swebench.yaml asks). Installing it needs PyPI: `network`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_helpers import Demo, needs_bwrap, run_one
from fake_openai import FakeOpenAI, bash, call, text
from swebounty.agents import create_agent
from swebounty.agents.installed import InstalledAgent
from swebounty.tasks import Task

pytestmark = [pytest.mark.sandbox, pytest.mark.network, needs_bwrap]


@pytest.fixture(scope="module")
def demo(shared_demo: Demo) -> Demo:
    return shared_demo


@pytest.fixture(scope="module")
def agents_dir(demo: Demo) -> Path:
    return demo.cache / "agents"


def _agent(fake: FakeOpenAI, agents_dir: Path, **settings: object) -> InstalledAgent:
    options = {"model": "fake-model", "base_url": fake.url, "agents_dir": str(agents_dir),
               "settings": settings}  # fmt: skip
    agent = create_agent("mini-swe-agent", options)
    assert isinstance(agent, InstalledAgent)
    return agent


def _fix(task: Task) -> list[dict[str, object]]:
    return [
        bash("ls"),
        bash(f"cat > /tmp/fix.diff <<'EOF'\n{task.patch}EOF\ngit apply /tmp/fix.diff"),
        bash("git diff -- tinytext/roman.py > patch.txt"),
        bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"),
    ]


def test_a_fix_resolves_with_its_trajectory_tokens_and_provenance(
    demo: Demo, agents_dir: Path, tmp_path: Path
) -> None:
    task = demo.task(1)
    with FakeOpenAI(_fix(task)) as fake:
        agent = _agent(fake, agents_dir)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent)
    assert verdict.status == "resolved", (verdict.reason, attempt.error, attempt.trajectory[-4:])
    assert attempt.stop_reason == "submit:Submitted"
    assert "patch.txt" not in attempt.patch  # its answer is the patch it submitted
    assert attempt.tokens_in and attempt.tokens_out and not attempt.tokens_incomplete
    assert len(fake.chat_requests) == 4
    assert fake.chat_requests[0].body["tools"][0]["function"]["name"] == "bash"
    assert task.problem_statement.strip() in fake.chat_requests[0].body["messages"][1]["content"]
    steps = [e for e in attempt.trajectory if e["type"] == "agent_trajectory" and "message" in e]
    assert [m["message"]["role"] for m in steps][:2] == ["system", "user"]
    assert any(e["type"] == "agent_exit" and e["exit_status"] == "Submitted"
               for e in attempt.trajectory)  # fmt: skip
    provenance = agent.provenance()
    assert provenance["agent"] == "mini-swe-agent" and provenance["package"] == "mini-swe-agent"
    assert provenance["version"] == "2.4.6"


def test_giving_up_at_its_step_limit_is_a_skip(
    demo: Demo, agents_dir: Path, tmp_path: Path
) -> None:
    task = demo.task(1)
    with FakeOpenAI([bash("ls"), bash("cat tinytext/roman.py"), bash("ls")]) as fake:
        agent = _agent(fake, agents_dir, step_limit=2)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent)
    assert attempt.status == "skipped" and attempt.stop_reason == "skip:LimitsExceeded"
    assert verdict.status == "unresolved" and verdict.empty_patch
    assert len(fake.chat_requests) == 2


def test_malformed_answers_end_in_its_format_error_stop(
    demo: Demo, agents_dir: Path, tmp_path: Path
) -> None:
    task = demo.task(1)
    script = [text("I will look around."), call("bash", "{not json"), call("python", "{}")]
    with FakeOpenAI(script) as fake:
        agent = _agent(fake, agents_dir)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent)
    assert attempt.status == "skipped", (attempt.error, attempt.trajectory[-3:])
    assert attempt.stop_reason == "skip:RepeatedFormatError"
    assert verdict.status == "unresolved"
    # The errors it sent back to the model are its own format-error messages.
    last = fake.chat_requests[-1].body["messages"]
    assert sum("Tool call error" in str(m.get("content")) for m in last) == 2
