"""The `command` agent: any executable (an open-source agent, a script) run in the sandbox.

The contract, for agent authors (also in the README):
- the command runs with `/bin/sh -c` in the workspace: a git repository whose one commit is the
  task's base tree; no network; HOME=/tmp; the project's environment on PATH (`python`,
  `pytest`), and `user-tool` to run the repository's existing tests or a script;
- the public task is JSON on standard input and in the file $SWEBOUNTY_TASK_FILE;
- the workspace's diff when the command exits 0 is the submission;
- skip: exit with code 42 (SKIP_EXIT), or create the file $SWEBOUNTY_OUTPUT/skip;
- pick tasks: write the chosen proposal's index to $SWEBOUNTY_OUTPUT/pick;
- any other exit code, or running out of time, is an agent error (the agent crashed);
- the model, when the run has one: $OPENAI_BASE_URL (an OpenAI-compatible /v1 on the sandbox's
  loopback, forwarded to the run's endpoint; the real API key stays on the host), $SWEBOUNTY_MODEL;
  only inference is forwarded (proxy.INFERENCE; the `allow_endpoints` option adds more), any
  other request gets 403 and the attempt the `calls_non_inference_api` hack flag;
- an optional trajectory: JSON lines in $SWEBOUNTY_OUTPUT/trajectory.jsonl;
- a budget (`max_tokens`, `max_cost_usd`) is enforced at the proxy: once spent, the model
  refuses and the agent is stopped; the attempt ends with stop reason `budget` and, as
  `on_limit` says, the workspace's diff as its answer or a skip;
- an agent that ends without an answer (a skip, a crash, its time up) while the endpoint was
  failing (its last model request answered 5xx, 429 or 408, or never reached the server) has
  met a failure of the model endpoint, not its own: the attempt is an `infra_error` with stop
  reason `model_down`, as for the `llm` agent, and runs again when the run is resumed.
Paths the command needs (its code, its own virtualenv) are mounted read-only: every absolute
path named in the command, and each `mounts` entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from swebounty.agents.base import AgentResult, PublicTask, source_sha256
from swebounty.agents.command_paths import normalize
from swebounty.agents.meter import Budget, Meter
from swebounty.agents.model import RETRY_STATUS
from swebounty.agents.prices import Price
from swebounty.agents.proxy import (
    REFUSED_FLAG,
    ModelProxy,
    check_socket_path,
    parse_endpoint,
    planned_socket_path,
    serving,
)
from swebounty.agents.session import Session, WorkspaceGone
from swebounty.agents.trajectory import from_jsonl, verified
from swebounty.safefs import read_regular
from swebounty.sandbox.base import Mount
from swebounty.tasks import Task

log = logging.getLogger(__name__)

SKIP_EXIT = 42
OUTPUT_CHARS = 100_000  # of the agent's stdout and stderr, kept in the trajectory


class CommandConfig(BaseModel):
    command: str = Field(description="shell command run in the workspace, in the sandbox")
    mounts: list[Path] = Field(default_factory=list, description="read-only paths it needs")
    model: str | None = Field(None, description="the model the agent may use")
    base_url: str | None = Field(None, description="the model endpoint, ending in /v1")
    api_key_env: str | None = Field(None, description="variable holding the endpoint's key")
    allow_endpoints: list[str] = Field(
        default_factory=list,
        description="endpoints the proxy forwards beside inference: 'POST /v1/embeddings'",
    )

    max_tokens: int | None = Field(None, ge=1, description="budget: tokens in + out per attempt")
    max_cost_usd: float | None = Field(None, gt=0, description="budget: dollars per attempt")
    price: Price | None = Field(None, description="the model's price (for max_cost_usd)")
    on_limit: Literal["submit", "skip"] = Field(
        "submit", description="when the budget is spent: submit the diff so far, or skip"
    )

    def budget(self) -> Budget | None:
        if self.max_tokens is None and self.max_cost_usd is None:
            return None
        return Budget(max_tokens=self.max_tokens, max_cost_usd=self.max_cost_usd, price=self.price)

    @field_validator("allow_endpoints")
    @classmethod
    def _endpoints(cls, value: list[str]) -> list[str]:
        return [" ".join(parse_endpoint(item)) for item in value]


def named_paths(command: str) -> list[Path]:
    """Absolute paths named in the command, in normal form: mounted so the agent can run."""
    return normalize(command)[1]


def _failed(record: dict[str, Any]) -> bool:
    """The endpoint failed this request: it answered as a failing server does, or could not be
    reached. Never the proxy's own refusals and errors, which an agent's request can cause."""
    if record.get("upstream_error"):
        return True
    return bool(record.get("forwarded")) and record.get("status") in RETRY_STATUS


def model_down(requests: list[dict[str, Any]]) -> str | None:
    """Why the model endpoint was failing when the agent stopped (its last requests failed,
    see _failed); None if its last request was answered."""
    calls = [r for r in requests if "refused" not in r]
    failed = 0
    for record in reversed(calls):
        if not _failed(record):
            break
        failed += 1
    if not failed:
        return None
    last = calls[-1]
    return (
        f"the model endpoint was failing: the agent's last {failed} of {len(calls)} model "
        f"requests failed, the last with {last.get('upstream_error') or last.get('status')} "
        f"on {last.get('path')}"
    )


class CommandAgent:
    name: ClassVar[str] = "command"
    uses_session: ClassVar[bool] = True

    def __init__(self, config: CommandConfig) -> None:
        self.config = config
        # What runs: the command with the paths it names in normal form (command_paths.py).
        self.command, self.named = normalize(config.command)
        self.env_vars: dict[str, str] = {}  # more of the agent's environment (installed agents)
        self.harness_mounts: list[Path] = []  # chosen by the harness, not named by the user

    @classmethod
    def create(cls, options: dict[str, Any], tasks: Sequence[Task]) -> CommandAgent:
        config = CommandConfig.model_validate(options)
        for mount in config.mounts:
            if not os.path.lexists(mount):
                raise ValueError(f"mount {mount} does not exist: give a path on this machine")
        if (budget := config.budget()) is not None:
            if not config.base_url:
                raise ValueError("a budget (max_tokens, max_cost_usd) needs a model (base_url)")
            budget.check()
        if config.base_url:
            # Before the run, not in every attempt: a TMPDIR too long for the socket.
            check_socket_path(planned_socket_path())
        return cls(config)

    def mounts(self) -> list[Path]:
        return [*self.config.mounts, *self.named]

    def run(self, task: PublicTask, session: Session | None) -> AgentResult:
        assert session is not None, "the command agent works in a session"
        extra_env = {"SWEBOUNTY_SKIP_EXIT": str(SKIP_EXIT), "OPENAI_API_KEY": "swebounty"}
        extra_env.update(self.env_vars)
        mounts = [Mount(path=p) for p in [*self.mounts(), *self.harness_mounts]]
        if self.config.model:
            extra_env["SWEBOUNTY_MODEL"] = self.config.model
        argv = [
            session.env["SWEBOUNTY_TOOL_PYTHON"],
            "-I",
            "-S",
            str(session.tools_dir / "agent_entry.py"),
            self.command,
        ]
        with contextlib.ExitStack() as stack:
            proxy: ModelProxy | None = None
            if self.config.base_url:
                key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
                proxy = stack.enter_context(
                    serving(
                        self.config.base_url,
                        model=self.config.model,
                        api_key=key,
                        allow=[parse_endpoint(e) for e in self.config.allow_endpoints],
                        meter=Meter(self.config.budget()),
                        give_to=session.sandbox.prepare_workdir,
                    )
                )
                # Read-only: the agent connects (that needs no write to the mount), but cannot
                # chmod the socket or add anything beside it. Same path inside as outside: the
                # host path is short (check_socket_path), and so the one the agent dials.
                mounts.append(Mount(path=proxy.socket_path.parent))
                extra_env["SWEBOUNTY_MODEL_SOCKET"] = str(proxy.socket_path)
            result = session.run(argv, extra_mounts=mounts, extra_env=extra_env)
        return self._result(session, result, proxy)

    def _result(self, session: Session, run: Any, proxy: ModelProxy | None) -> AgentResult:
        trajectory: list[dict[str, Any]] = []
        if proxy is not None:
            trajectory += proxy.requests
        agent_events = read_regular(session.output_dir / "trajectory.jsonl", 16 << 20)
        if agent_events:
            # The agent's own events, typed "agent" whatever they say: an agent cannot forge
            # the harness's records (model_request, user_tool, end).
            events = from_jsonl(agent_events.decode("utf-8", "replace"))
            trajectory += [{**e, "type": "agent", "agent_type": e.get("type")} for e in events]
        tool_log = read_regular(session.output_dir / "user_tool.jsonl", 4 << 20) or b""
        calls = from_jsonl(tool_log.decode("utf-8", "replace"))
        trajectory += [{"type": "user_tool", **c} for c in calls]
        trajectory.append(
            {
                "type": "agent_output",
                "exit": run.returncode,
                "timed_out": run.timed_out,
                "seconds": round(run.seconds, 3),
                "stdout": run.stdout[-OUTPUT_CHARS:],
                "stderr": run.stderr[-OUTPUT_CHARS:],
            }
        )
        result = AgentResult(status="agent_error", model=self.config.model, trajectory=trajectory)
        trajectory = result.trajectory  # validation copied the list: what follows goes in the copy
        if proxy is not None and proxy.refused:
            result.flags.append(REFUSED_FLAG)
        spent = None
        if proxy is not None:
            meter = proxy.meter
            result.tokens_in, result.tokens_out = meter.tokens_in, meter.tokens_out
            result.tokens_incomplete = not meter.complete
            result.cost_usd = meter.cost_usd
            spent = meter.exhausted()
        skip = read_regular(session.output_dir / "skip", 1 << 20) is not None
        finished = run.returncode == 0 and not run.timed_out
        if spent and (not finished or (proxy is not None and proxy.budget_refused)):
            # Stopped by its budget (or refused by it, then gave up): the limit decides.
            trajectory.append({"type": "budget", "spent": spent})
            if self.config.on_limit == "skip" or skip:
                result.status = "skipped"
            else:
                self._submission(session, result, calls)
            result.stop_reason = "budget"
        elif run.timed_out:
            result.stop_reason = "time_limit"
            result.error = f"the agent ran out of time ({run.seconds:.0f} s)"
        elif run.returncode == SKIP_EXIT or (run.returncode == 0 and skip):
            result.status, result.stop_reason = "skipped", "skip"
        elif run.returncode != 0:
            result.stop_reason = "crash"
            tail = (run.stderr.strip() or run.stdout.strip())[-500:]
            result.error = f"the agent exited with code {run.returncode}: {tail}"
        else:
            self._submission(session, result, calls)
        down = model_down(proxy.requests) if proxy is not None else None
        if down and result.status in ("skipped", "agent_error") and result.stop_reason != "budget":
            trajectory.append({"type": "model_down", "ended_as": result.stop_reason})
            result.status, result.stop_reason, result.error = "infra_error", "model_down", down
        trajectory.append({"type": "end", "reason": result.stop_reason, "status": result.status})
        return result

    def _submission(
        self, session: Session, result: AgentResult, calls: list[dict[str, Any]]
    ) -> None:
        pick_text = read_regular(session.output_dir / "pick", 64)
        if pick_text is not None:
            try:
                result.pick = int(pick_text.decode("ascii", "replace").strip())
            except ValueError:
                result.stop_reason = "bad_pick"
                result.error = f"$SWEBOUNTY_OUTPUT/pick holds {pick_text[:20]!r}, not a number"
                return
        try:
            tree, result.patch = session.diff()
        except WorkspaceGone as exc:
            result.stop_reason, result.error = "no_diff", str(exc)
            return
        result.verified = verified([], session.base_tree, tree, calls) or None
        empty = not result.patch.strip() and result.pick is None
        result.status = "skipped" if empty else "submitted"
        result.stop_reason = "submit"

    def provenance(self) -> dict[str, Any]:
        digest = hashlib.sha256(self.config.command.encode())
        for path in sorted(self.named):
            if path.is_file():
                digest.update(b"\0" + str(path).encode() + b"\0" + path.read_bytes())
        return {
            "agent": self.name,
            "command": self.config.command,
            "agent_sha256": digest.hexdigest(),
            "harness_sha256": source_sha256(Path(__file__)),
            "model": self.config.model,
            "endpoint": self.config.base_url,
        }
