"""The `llm` agent: a short loop over the OpenAI-compatible chat API with function calling.

Tools: `bash` (runs a command in the workspace, in the sandbox, and returns its output, capped),
`submit` (the workspace's diff is the answer; for pick tasks, `proposal` is the chosen index)
and `skip`. The loop runs on the host and talks to the model endpoint directly; every command
runs in the sandbox. It stops at `submit`/`skip`, or at a limit (steps, wall clock, its budget
in tokens or dollars: stop reason `budget`), where it does what `on_limit` says (submit the current diff, as SWE-agent does, or skip).
A malformed tool call (bad JSON, an unknown tool, a missing argument) is answered with an error
message for the model to correct, never a crash. A pick task may come without a session (no
clone of its repository): then `bash` is not offered and the model picks from the issue and
the proposals alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from swebounty.agents import model as model_module
from swebounty.agents.base import AgentResult, PublicTask, source_sha256
from swebounty.agents.meter import Budget, Meter
from swebounty.agents.model import ChatModel, ModelRequestError, ModelTimeUp, ModelUnavailable
from swebounty.agents.prices import Price
from swebounty.agents.session import Session, WorkspaceGone
from swebounty.agents.trajectory import from_jsonl, verified
from swebounty.safefs import read_regular
from swebounty.tasks import Task

SYSTEM_PROMPT = """\
You are a careful software engineer. You work in a git repository, your current directory, \
with the tools you are given; there is no network. Work in steps:
1. Reproduce the problem: find the relevant code and write a small script or test that shows it.
2. Fix it with a minimal change to the library's code. Do not edit existing tests to make them \
pass.
3. Verify the fix: run your script and the relevant existing tests. `user-tool ARGS` runs the \
repository's test suite with pytest arguments (`user-tool tests/test_x.py`), \
`user-tool --script FILE` runs a script with the project's Python.
Then call `submit`: the changes in the working tree are your answer. If you cannot fix it, call \
`skip`: a wrong answer costs more than no answer."""

PICK_PROMPT = """\
Several proposals were made to solve the issue below; the repository is at the state before \
any of them. Study them (you may inspect and run the code) and pick the one the maintainers \
accepted: call `submit` with `proposal` set to its index, or `skip`."""

PICK_ONLY_PROMPT = """\
Several proposals were made to solve the issue below. No copy of the repository is available: \
judge them from the issue and the proposals alone, and pick the one the maintainers accepted: \
call `submit` with `proposal` set to its index, or `skip`."""


class LLMConfig(BaseModel):
    model: str = Field(description="the model's name at the endpoint")
    base_url: str = Field(description="OpenAI-compatible endpoint, ending in /v1")
    api_key_env: str | None = Field(None, description="environment variable holding the key")
    max_steps: int = Field(50, ge=1, description="model calls per attempt")
    max_tokens: int = Field(2_000_000, ge=1, description="budget: tokens in + out per attempt")
    max_cost_usd: float | None = Field(None, gt=0, description="budget: dollars per attempt")
    price: Price | None = Field(None, description="the model's price (for max_cost_usd)")
    max_output_tokens: int = Field(4096, ge=1, description="per completion")
    temperature: float | None = 0.0
    command_timeout_s: float = Field(300.0, gt=0, description="one bash command")
    output_chars: int = Field(10_000, ge=100, description="of a command's output the model sees")
    retries: int = Field(5, ge=0, description="retries of a failing request")
    backoff_s: float = Field(2.0, ge=0, description="first retry wait, doubled each time")
    request_timeout_s: float = Field(600.0, gt=0)
    on_limit: Literal["submit", "skip"] = "submit"
    tool_choice: str | dict[str, Any] | None = Field(
        None,
        description="passed to the API as is: 'required', or a named function for servers that "
        "only force calls that way (llama-cpp-python); then the loop ends at a limit",
    )

    @field_validator("base_url")
    @classmethod
    def _ends_in_v1(cls, value: str) -> str:
        if not value.rstrip("/").endswith("/v1"):
            raise ValueError(f"--base-url must end in /v1 (e.g. http://127.0.0.1:8080/v1): {value}")
        return value.rstrip("/")


def tools_for(kind: str, *, workspace: bool = True) -> list[dict[str, Any]]:
    submit_params: dict[str, Any] = {"type": "object", "properties": {}}
    if kind == "pick":
        submit_params = {
            "type": "object",
            "properties": {"proposal": {"type": "integer", "description": "the index picked"}},
            "required": ["proposal"],
        }

    def fn(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        }

    bash = [
        fn(
            "bash",
            "Run a bash command in the repository and return its output.",
            {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "the command"}},
                "required": ["command"],
            },
        )
    ]
    return [
        *(bash if workspace else []),
        fn("submit", "Submit your answer and stop.", submit_params),
        fn("skip", "Give up on this task without an answer and stop.", {"type": "object"}),
    ]


def task_message(task: PublicTask) -> str:
    parts = [f"Repository: {task.repo}\n\n<issue>\n{task.problem_statement.strip()}\n</issue>"]
    if task.hints_text.strip():
        parts.append(f"<hints>\n{task.hints_text.strip()}\n</hints>")
    if task.kind == "pick":
        parts.insert(0, PICK_PROMPT if task.workspace else PICK_ONLY_PROMPT)
        for i, proposal in enumerate(task.proposals):
            parts.append(f'<proposal index="{i}">\n{proposal.strip()}\n</proposal>')
    return "\n\n".join(parts)


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 3
    return f"{text[:head]}\n[... {len(text) - limit} characters omitted ...]\n{text[-(limit - head) :]}"


class _Stop(Exception):
    def __init__(self, reason: str, pick: int | None = None) -> None:
        self.reason = reason
        self.pick = pick


class LLMAgent:
    name: ClassVar[str] = "llm"
    uses_session: ClassVar[bool] = True

    def __init__(self, config: LLMConfig, chat: ChatModel | None = None) -> None:
        self.config = config
        self._chat = chat

    @classmethod
    def create(cls, options: dict[str, Any], tasks: Sequence[Task]) -> LLMAgent:
        agent = cls(LLMConfig.model_validate(options))
        agent.budget().check()
        return agent

    def budget(self) -> Budget:
        c = self.config
        return Budget(max_tokens=c.max_tokens, max_cost_usd=c.max_cost_usd, price=c.price)

    def _client(self) -> ChatModel:
        if self._chat is not None:
            return self._chat
        c = self.config
        key = os.environ.get(c.api_key_env) if c.api_key_env else None
        return ChatModel(
            base_url=c.base_url,
            model=c.model,
            api_key=key,
            timeout_s=c.request_timeout_s,
            retries=c.retries,
            backoff_s=c.backoff_s,
            max_output_tokens=c.max_output_tokens,
            temperature=c.temperature,
        )

    def run(self, task: PublicTask, session: Session | None) -> AgentResult:
        result = AgentResult(status="agent_error", model=self.config.model, tokens_in=0)
        if session is None and task.kind != "pick":
            result.error = "the llm agent needs a workspace for a fix task"
            return result
        result.tokens_out = 0
        meter = Meter(self.budget())
        events = result.trajectory
        chat = self._client()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": task_message(task)},
        ]
        events += [{"type": "message", **m} for m in messages]
        try:
            stop = self._loop(task, session, chat, messages, result, meter)
        except ModelTimeUp:
            stop = _Stop("time_limit")
        except ModelRequestError as exc:
            stop = _Stop("model_refused")
            result.error = str(exc)
        except ModelUnavailable as exc:
            # The endpoint is down: not the agent's failure. Its trajectory so far is kept.
            result.status, result.stop_reason, result.error = "infra_error", "model_down", str(exc)
            events.append({"type": "end", "reason": "model_down", "status": result.status})
            return result
        finally:
            if self._chat is None:
                chat.close()
        self._finish(session, result, stop)
        events.append({"type": "end", "reason": result.stop_reason, "status": result.status})
        return result

    def _loop(
        self,
        task: PublicTask,
        session: Session | None,
        chat: ChatModel,
        messages: list[dict[str, Any]],
        result: AgentResult,
        meter: Meter,
    ) -> _Stop:
        c, events = self.config, result.trajectory
        tools = tools_for(task.kind, workspace=session is not None)
        tree = session.base_tree if session else ""
        # Without a session (a pick task, no clone) the steps and the requests' timeouts bound
        # the attempt; there is no command to run.
        deadline = session.deadline if session else None
        for step in range(1, c.max_steps + 1):
            if session is not None and session.remaining() <= 0:
                return _Stop("time_limit")
            completion = chat.complete(
                messages, tools, deadline=deadline, tool_choice=c.tool_choice
            )
            if completion.tokens_in is None:
                meter.missing()  # the server said not what this answer cost
            else:
                meter.add(completion.tokens_in, completion.tokens_out or 0)
            result.tokens_in, result.tokens_out = meter.tokens_in, meter.tokens_out
            result.tokens_incomplete = not meter.complete
            result.cost_usd = meter.cost_usd
            for problem in completion.retries:
                events.append({"type": "retry", "step": step, "error": problem})
            message = {k: v for k, v in completion.message.items() if v is not None}
            message.setdefault("content", "")
            messages.append(message)
            events.append(
                {
                    "type": "model",
                    "step": step,
                    "message": message,
                    "finish_reason": completion.finish_reason,
                    "tokens_in": completion.tokens_in,
                    "tokens_out": completion.tokens_out,
                    "seconds": round(completion.seconds, 3),
                }
            )
            calls = message.get("tool_calls") or []
            if not calls:
                nudge = "Call one of the tools: bash, submit or skip."
                messages.append({"role": "user", "content": nudge})
                events.append({"type": "error", "step": step, "message": "no tool call"})
            for call in calls:
                stop, tree = self._call(task, session, call, messages, events, step, tree)
                if stop is not None:
                    return stop
            if spent := meter.exhausted():
                events.append({"type": "budget", "spent": spent})
                return _Stop("budget")
        return _Stop("step_limit")

    def _call(
        self,
        task: PublicTask,
        session: Session | None,
        call: Any,
        messages: list[dict[str, Any]],
        events: list[dict[str, Any]],
        step: int,
        tree: str,
    ) -> tuple[_Stop | None, str]:
        """Run one tool call; (a stop if it ends the attempt, the workspace tree after it)."""
        call_id = call.get("id", "") if isinstance(call, dict) else ""
        fn = call.get("function") if isinstance(call, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        raw = fn.get("arguments") if isinstance(fn, dict) else None
        try:
            args = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as exc:
            return self._reply(
                messages, events, call_id, step, f"error: bad arguments: {exc}"
            ), tree
        if name == "bash" and session is not None:
            command = args.get("command")
            if not isinstance(command, str) or not command.strip():
                reply = 'error: bash needs {"command": "..."}'
                return self._reply(messages, events, call_id, step, reply), tree
            run = session.bash(command, timeout_s=self.config.command_timeout_s)
            try:
                tree = session.tree()
            except WorkspaceGone:
                tree = ""
            output = run.stdout + (f"\n[stderr]\n{run.stderr}" if run.stderr.strip() else "")
            if run.timed_out:
                output += "\n[the command timed out and was killed]"
            output = _cap(output, self.config.output_chars) + f"\n[exit code {run.returncode}]"
            event = {"command": command, "exit": run.returncode, "tree": tree}
            event["seconds"] = round(run.seconds, 3)
            self._reply(messages, events, call_id, step, output, name="bash", **event)
            return None, tree
        if name == "submit":
            if task.kind == "pick":
                pick = args.get("proposal")
                if not isinstance(pick, int) or not 0 <= pick < len(task.proposals):
                    reply = f"error: proposal must be an index from 0 to {len(task.proposals) - 1}"
                    return self._reply(messages, events, call_id, step, reply), tree
                self._reply(messages, events, call_id, step, "submitted", name="submit")
                return _Stop("submit", pick), tree
            self._reply(messages, events, call_id, step, "submitted", name="submit")
            return _Stop("submit"), tree
        if name == "skip":
            self._reply(messages, events, call_id, step, "skipped", name="skip")
            return _Stop("skip"), tree
        names = "bash, submit or skip" if session else "submit or skip"
        reply = f"error: unknown tool {name!r}; use {names}"
        return self._reply(messages, events, call_id, step, reply), tree

    @staticmethod
    def _reply(
        messages: list[dict[str, Any]],
        events: list[dict[str, Any]],
        call_id: str,
        step: int,
        content: str,
        name: str = "error",
        **extra: Any,
    ) -> None:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        events.append({"type": "tool", "step": step, "name": name, "output": content, **extra})

    def _finish(self, session: Session | None, result: AgentResult, stop: _Stop) -> None:
        result.stop_reason = stop.reason
        if stop.reason == "model_refused":
            return  # an agent error: the request it built was refused
        limited = stop.reason not in ("submit", "skip")
        if stop.reason == "skip" or (limited and self.config.on_limit == "skip"):
            result.status = "skipped"
            return
        if session is None:  # nothing but the pick to submit
            result.pick = stop.pick
            result.status = "submitted" if stop.pick is not None else "skipped"
            return
        try:
            final, result.patch = session.diff()
        except WorkspaceGone as exc:
            result.status, result.error = "agent_error", str(exc)
            return
        result.pick = stop.pick
        tools = [e for e in result.trajectory if e.get("type") == "tool"]
        log = read_regular(session.output_dir / "user_tool.jsonl", 4 << 20) or b""
        calls = from_jsonl(log.decode("utf-8", "replace"))
        result.verified = verified(tools, session.base_tree, final, calls)
        empty = not result.patch.strip() and result.pick is None
        result.status = "skipped" if empty else "submitted"

    def provenance(self) -> dict[str, Any]:
        return {
            "agent": self.name,
            "agent_sha256": source_sha256(Path(__file__), Path(model_module.__file__)),
            "model": self.config.model,
            "endpoint": self.config.base_url,
            "config": self.config.model_dump(mode="json", exclude={"model", "base_url"}),
        }
