"""The `llm` agent against a scripted OpenAI-compatible server, on the demo tasks, sandboxed.

Each case ends in the verdict it should: a fix resolves, a skip is a skip, malformed tool calls
get error messages and the run goes on, a step limit submits what is there, server errors are
retried (and an endpoint that stays down is an infrastructure error, not the agent's).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_helpers import Demo, needs_bwrap, run_one
from fake_openai import Error, FakeOpenAI, bash, call, skip, submit, text
from swebounty.agents import Agent, create_agent
from swebounty.tasks import Task

pytestmark = [pytest.mark.sandbox, pytest.mark.network, needs_bwrap]


@pytest.fixture(scope="module")
def demo(shared_demo: Demo) -> Demo:
    return shared_demo


def _apply(task: Task) -> dict[str, object]:
    """The model 'writes' the fix: the reference patch, applied with git in the sandbox."""
    return bash(f"cat > /tmp/fix.diff <<'EOF'\n{task.patch}EOF\ngit apply /tmp/fix.diff")


def _agent(fake: FakeOpenAI, **options: object) -> Agent:
    return create_agent("llm", {"model": "fake-model", "base_url": fake.url, "backoff_s": 0.01,
                                **options})  # fmt: skip


def test_a_fix_resolves_and_the_attempt_is_recorded(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    script = [bash("git log --oneline | cat"), _apply(task), bash("user-tool -q"), submit()]
    with FakeOpenAI(script) as fake:
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, _agent(fake))
    assert verdict.status == "resolved", verdict.reason
    assert attempt.status == "submitted" and attempt.stop_reason == "submit"
    assert attempt.verified is True  # user-tool ran on the final code
    assert attempt.tokens_in and attempt.tokens_out and attempt.seconds > 0
    assert attempt.model == "fake-model" and attempt.cost_usd is None  # no price for it
    tools = [e for e in attempt.trajectory if e["type"] == "tool"]
    assert [e["name"] for e in tools] == ["bash", "bash", "bash", "submit"]
    assert tools[0]["output"].splitlines()[0].endswith(" base")  # one commit: no history
    assert "passed" in tools[2]["output"]
    log_dir = tmp_path / "runs" / "r" / task.instance_id
    assert (log_dir / "trajectory.jsonl").read_text().count("\n") == len(attempt.trajectory)
    # the prompt holds the problem statement and nothing hidden
    first = fake.chat_requests[0].body["messages"]
    assert task.problem_statement.strip() in first[1]["content"]
    for hidden in (task.test_patch, task.patch, *task.FAIL_TO_PASS):
        assert hidden not in str(fake.chat_requests[-1].body)


def test_the_user_tool_runs_existing_tests_only_and_skip_is_a_skip(
    demo: Demo, tmp_path: Path
) -> None:
    task = demo.task(1)
    with FakeOpenAI([bash("user-tool -v tests/test_roman.py"), skip()]) as fake:
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, _agent(fake))
    assert attempt.status == "skipped" and attempt.stop_reason == "skip" and not attempt.patch
    assert verdict.status == "unresolved" and verdict.empty_patch
    output = next(e["output"] for e in attempt.trajectory if e["type"] == "tool")
    assert "[user-tool: exit 0" in output
    assert all(test_id in output for test_id in task.PASS_TO_PASS if "test_roman" in test_id)
    assert not any(test_id in output for test_id in task.FAIL_TO_PASS)  # the hidden ones


def test_malformed_tool_calls_get_errors_and_the_agent_goes_on(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    script = [
        call("bash", "{not json"),
        call("rm_everything", "{}"),
        call("bash", '{"cmd": "ls"}'),
        call("bash", '["ls"]'),
        text("I think I should look around."),
        _apply(task),
        submit(),
    ]
    with FakeOpenAI(script) as fake:
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, _agent(fake))
    assert verdict.status == "resolved", verdict.reason
    replies = [m for m in fake.chat_requests[-1].body["messages"] if m["role"] in ("tool", "user")]
    errors = [m["content"] for m in replies if m["content"].startswith("error")]
    assert len(errors) == 4
    assert "bad arguments" in errors[0] and "unknown tool" in errors[1]
    assert "Call one of the tools" in replies[5]["content"]
    assert attempt.verified is False  # nothing ran after the edit


def test_step_limit_submits_what_is_there(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    breaks = bash("echo 'raise ImportError(\"half done\")' >> tinytext/__init__.py")
    with FakeOpenAI([breaks, bash("ls"), bash("ls"), bash("ls")]) as fake:
        agent = _agent(fake, max_steps=2)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent)
    assert attempt.stop_reason == "step_limit" and attempt.status == "submitted"
    assert "half done" in attempt.patch
    assert verdict.status == "unresolved"
    assert len(fake.chat_requests) == 2


def test_the_budget_stops_the_loop_and_a_missing_usage_marks_the_count(
    demo: Demo, tmp_path: Path
) -> None:
    task = demo.task(1)
    price = {"input": 1_000_000.0, "output": 0.0}  # $1 per token in: the first call spends it
    with FakeOpenAI([_apply(task), bash("ls"), bash("ls")]) as fake:
        agent = _agent(fake, max_cost_usd=5.0, price=price)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, agent)
    assert attempt.stop_reason == "budget" and attempt.status == "submitted"  # on_limit submit
    assert len(fake.chat_requests) == 1 and verdict.status == "resolved"
    assert attempt.cost_usd == attempt.tokens_in and not attempt.tokens_incomplete
    assert next(e for e in attempt.trajectory if e["type"] == "budget")["spent"].startswith("$")

    with FakeOpenAI([bash("ls"), skip()], usage=False) as fake:
        [(attempt, _)] = run_one(demo, tmp_path / "runs2", task, _agent(fake))
    assert attempt.stop_reason == "skip" and attempt.tokens_incomplete
    assert (attempt.tokens_in, attempt.tokens_out) == (0, 0)  # a lower bound, marked as one


def test_server_errors_are_retried(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    with FakeOpenAI([Error(503), Error(500), _apply(task), Error(429), submit()]) as fake:
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", task, _agent(fake))
    assert verdict.status == "resolved", verdict.reason
    retries = [e for e in attempt.trajectory if e["type"] == "retry"]
    assert len(retries) == 3 and "503" in retries[0]["error"]
    assert len(fake.chat_requests) == 5


def test_an_endpoint_that_stays_down_is_an_infrastructure_error(demo: Demo, tmp_path: Path) -> None:
    with FakeOpenAI([Error(502)] * 3) as fake:
        agent = _agent(fake, retries=2)
        [(attempt, verdict)] = run_one(demo, tmp_path / "runs", demo.task(3), agent)
    assert attempt.status == "infra_error" and "502" in attempt.error
    assert verdict.status == "error"  # never counted against the model; retried on resume
