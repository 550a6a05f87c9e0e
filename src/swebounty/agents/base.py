"""The Agent protocol and what crosses it: the public task an agent sees, and its result.

An agent receives only the public part of a task (`PublicTask`: no test patch, no reference
patch, no FAIL_TO_PASS/PASS_TO_PASS, no accepted proposal) and, when it works on code, a
`Session` (a history-free workspace at the base commit, run in the sandbox). It returns an
`AgentResult`: a patch, a pick (pick tasks), a skip, or an agent error.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from swebounty.tasks import AttemptStatus, Task

if TYPE_CHECKING:
    from swebounty.agents.session import Session

AgentStatus = AttemptStatus


class PublicTask(BaseModel):
    """What an agent may know about a task. Built field by field (an allow-list), so a field
    added to Task later stays hidden until someone decides it is public."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    hints_text: str = Field("", description="pre-fix discussion, only when hints are allowed")
    created_at: datetime | None = None
    value_usd: float | None = None
    kind: Literal["fix", "pick"] = "fix"
    proposals: list[str] = Field(default_factory=list, description="pick tasks: the candidates")
    attempt: int = 1
    workspace: bool = Field(
        True, description="False: no clone of the repository; the issue and proposals only"
    )

    @classmethod
    def from_task(
        cls, task: Task, *, attempt: int = 1, hints: bool = False, workspace: bool = True
    ) -> PublicTask:
        return cls(
            instance_id=task.instance_id,
            repo=task.repo,
            base_commit=task.base_commit,
            problem_statement=task.problem_statement,
            hints_text=task.hints_text if hints else "",
            created_at=task.created_at,
            value_usd=task.value_usd,
            kind=task.kind,
            proposals=list(task.proposals),
            attempt=attempt,
            workspace=workspace,
        )


class AgentResult(BaseModel):
    """What one agent run produced, before it is graded."""

    status: AgentStatus
    patch: str = ""
    pick: int | None = None
    stop_reason: str = Field("", description="submit, skip, step_limit, time_limit, crash, ...")
    error: str = Field("", description="for agent_error and infra_error: what went wrong")
    model: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    tokens_incomplete: bool = Field(
        False, description="some answer spent tokens without saying how many: a lower bound"
    )
    verified: bool | None = Field(
        None, description="ran a test or script on its final code (None: unknown)"
    )
    flags: list[str] = Field(
        default_factory=list, description="hack flags from what the agent did (grading.HACK_FLAGS)"
    )
    trajectory: list[dict[str, Any]] = Field(default_factory=list)


@runtime_checkable
class Agent(Protocol):
    """Turns a public task into a result. `uses_session` False: no workspace is built for it
    (gold, predictions). Implementations are plain classes built from a pydantic config."""

    name: ClassVar[str]
    uses_session: ClassVar[bool]

    def run(self, task: PublicTask, session: Session | None) -> AgentResult: ...

    def provenance(self) -> dict[str, Any]:
        """What produced the results: code hash, model, endpoint, weights (see provenance.py)."""
        ...


def source_sha256(*paths: Path) -> str:
    """A hash of the given source files, for provenance of the code that produced a run."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
