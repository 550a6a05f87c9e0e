"""Attempts: pick tasks, resuming a run, and how each kind of failure counts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent_helpers import Demo, context, needs_bwrap, run_one
from fake_openai import FakeOpenAI, submit
from swebounty.agents import AgentResult, PublicTask, create_agent
from swebounty.agents.session import Session
from swebounty.attempts import AttemptOptions, run_agent
from swebounty.scoring import score_run
from swebounty.tasks import Attempt, Task

pytestmark = [pytest.mark.sandbox, pytest.mark.network, needs_bwrap]


@pytest.fixture(scope="module")
def demo(shared_demo: Demo) -> Demo:
    return shared_demo


def _pick(task: Task) -> Task:
    """Demo task 1 as a pick task: a wrong proposal, then the real fix (accepted)."""
    wrong = task.patch.replace('(900, "CM")', '(900, "DCCCC")')
    return task.model_copy(
        update={
            "instance_id": "demo__tinytext-pick-1",
            "kind": "pick",
            "proposals": [
                f"Use long forms\n```diff\n{wrong}```",
                f"Subtractive\n```diff\n{task.patch}```",
            ],
            "accepted_proposal": 1,
        }
    )


def test_pick_tasks_ask_the_agent_for_a_proposal(demo: Demo, tmp_path: Path) -> None:
    task = _pick(demo.task(1))
    script = tmp_path / "pick.sh"
    script.write_text(
        '#!/bin/sh\npython3 -c "import json,sys; t=json.load(sys.stdin); '
        "print([i for i, p in enumerate(t['proposals']) if 'Subtractive' in p][0])\" "
        '> "$SWEBOUNTY_OUTPUT/pick"\n'
    )
    script.chmod(0o755)
    [(attempt, verdict)] = run_one(
        demo, tmp_path / "cmd", task, create_agent("command", {"command": str(script)})
    )
    assert attempt.pick == 1 and verdict.status == "resolved", attempt.error
    with FakeOpenAI([submit(proposal=7), submit(proposal=0)]) as fake:
        agent = create_agent("llm", {"model": "m", "base_url": fake.url})
        [(attempt, verdict)] = run_one(demo, tmp_path / "llm", task, agent)
    assert attempt.pick == 0 and verdict.status == "unresolved"
    prompt = fake.chat_requests[0].body
    assert "Subtractive" in prompt["messages"][1]["content"]
    submit_tool = next(t for t in prompt["tools"] if t["function"]["name"] == "submit")
    assert submit_tool["function"]["parameters"]["required"] == ["proposal"]
    assert "error: proposal must be an index" in str(fake.chat_requests[1].body["messages"][-1])
    [(attempt, verdict)] = run_one(demo, tmp_path / "gold", task, create_agent("gold", {}, [task]))
    assert attempt.pick == 1 and verdict.status == "resolved"


class Flaky:
    """An agent plugged in by dotted path: crashes on attempt 1, then fails for the
    infrastructure (the first time only), then submits nothing."""

    name: ClassVar[str] = "tests.flaky"
    uses_session: ClassVar[bool] = False
    calls: ClassVar[list[int]] = []

    @classmethod
    def create(cls, options: dict[str, Any], tasks: Sequence[Task]) -> Flaky:
        return cls()

    def run(self, task: PublicTask, session: Session | None) -> AgentResult:
        Flaky.calls.append(task.attempt)
        if task.attempt == 1:
            raise RuntimeError("plugin bug")
        if task.attempt == 2 and Flaky.calls.count(2) == 1:
            return AgentResult(status="infra_error", error="the GPU went away")
        return AgentResult(status="skipped", stop_reason="skip")

    def provenance(self) -> dict[str, Any]:
        return {"agent": self.name}


def test_resume_reruns_only_infrastructure_failures(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(2)
    agent = create_agent("test_attempts:Flaky", {})
    with context(demo, tmp_path / "runs") as (ctx, store):
        run_agent("r", [task], agent, ctx, store, attempts=3, opts=AttemptOptions())
        first = {a.attempt: a for a in store.attempts("r")}
        assert first[1].status == "agent_error" and "plugin bug" in first[1].error
        assert first[2].status == "infra_error" and first[3].status == "skipped"
        verdicts = {v.attempt: v.status for v in store.verdicts("r")}
        assert verdicts == {1: "agent_error", 2: "error", 3: "unresolved"}
        run_agent("r", [task], agent, ctx, store, attempts=3, opts=AttemptOptions())
        assert Flaky.calls == [1, 2, 3, 2]  # only the infrastructure failure ran again
        again = {v.attempt: v.status for v in store.verdicts("r")}
        assert again == {1: "agent_error", 2: "unresolved", 3: "unresolved"}
        score = score_run([task], store.submissions("r"), store.verdicts("r"))
    # the crash counts as a skip (no patch: the Kprize's c), shown apart from the others
    assert (score.overall.skipped, score.overall.agent_errors, score.overall.errors) == (3, 1, 0)


def test_a_stored_attempt_without_verdict_is_only_evaluated(demo: Demo, tmp_path: Path) -> None:
    task = demo.task(1)
    with context(demo, tmp_path / "runs") as (ctx, store):
        store.save_attempt(
            "r",
            Attempt(
                instance_id=task.instance_id,
                agent="command",
                status="submitted",
                stop_reason="submit",
                patch=task.patch,
            ),
        )
        agent = create_agent("command", {"command": "exit 3"})  # would be an agent error
        [(attempt, verdict)] = run_agent("r", [task], agent, ctx, store)
    assert attempt.status == "submitted" and verdict.status == "resolved"
