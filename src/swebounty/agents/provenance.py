"""What produced a run, and whether it meets the Konwinski Prize's rule.

Recorded once per run: the agent's name and a hash of its code or command, the model, the
endpoint, the sha256 of local weight files, the sandbox, and whether the run was offline (no
address reachable but the model endpoint, and that one on this machine). The Kprize admits open
code, open weights and offline runs; its test set is collected after the model's cutoff, which
`eligibility` checks against the tasks' creation dates.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Sequence
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from swebounty.tasks import Task

# Agents whose whole code is open: this project's, or a pinned PyPI release of an open-source
# agent (installed.py; tests/test_agents_installed.py checks every one is here). A command
# agent must say where its code is.
OPEN_AGENTS = {"llm", "mini-swe-agent", "aider", "openhands"}


class WeightFile(BaseModel):
    path: str
    sha256: str
    bytes: int


class Provenance(BaseModel):
    agent: str
    agent_sha256: str | None = None
    command: str | None = None
    model: str | None = None
    endpoint: str | None = None
    weights: list[WeightFile] = Field(default_factory=list)
    code_url: str | None = Field(None, description="where the agent's code is published")
    model_cutoff: date | None = None
    sandbox: str = "bwrap"
    isolated: bool = True
    offline: bool = False
    swebounty_version: str = ""
    details: dict[str, Any] = Field(default_factory=dict, description="the agent's own record")


class Eligibility(BaseModel):
    """The Kprize's rule for one run: open code, open weights, offline; and fresh tasks."""

    kprize: bool
    open_code: bool
    open_weights: bool
    offline: bool
    reasons: list[str] = Field(default_factory=list, description="why not, one per failed rule")
    fresh: bool | None = Field(None, description="every task created after the model cutoff")
    tasks_before_cutoff: int = 0
    tasks_without_date: int = 0


def sha256_file(path: Path) -> WeightFile:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return WeightFile(path=str(path.resolve()), sha256=digest.hexdigest(), bytes=size)


def is_local_endpoint(url: str | None) -> bool:
    """Whether a model endpoint is on this machine (loopback), so the run needs no network."""
    if not url:
        return True
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_provenance(
    agent_record: dict[str, Any],
    *,
    sandbox: str,
    isolated: bool,
    weights: Sequence[Path] = (),
    code_url: str | None = None,
    model_cutoff: date | None = None,
) -> Provenance:
    from swebounty import __version__

    endpoint = agent_record.get("endpoint")
    return Provenance(
        agent=str(agent_record.get("agent", "?")),
        agent_sha256=agent_record.get("agent_sha256"),
        command=agent_record.get("command"),
        model=agent_record.get("model"),
        endpoint=endpoint,
        weights=[sha256_file(Path(p)) for p in weights],
        code_url=code_url,
        model_cutoff=model_cutoff,
        sandbox=sandbox,
        isolated=isolated,
        offline=isolated and is_local_endpoint(endpoint),
        swebounty_version=__version__,
        details=agent_record,
    )


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def eligibility(prov: Provenance, tasks: Sequence[Task]) -> Eligibility:
    open_code = prov.agent in OPEN_AGENTS or bool(prov.code_url)
    reasons = []
    if not open_code:
        reasons.append(
            "code not shown to be open: pass --code-url with where the agent's code is published"
        )
    open_weights = bool(prov.weights)
    if not open_weights:
        reasons.append("weights not open: serve the model from local files and pass --weights")
    if not prov.offline:
        why = "the sandbox was off (--unsafe)" if not prov.isolated else "a remote endpoint"
        reasons.append(f"not offline: {why}")
    result = Eligibility(
        kprize=not reasons,
        open_code=open_code,
        open_weights=open_weights,
        offline=prov.offline,
        reasons=reasons,
    )
    if prov.model_cutoff is not None:
        cutoff = datetime(prov.model_cutoff.year, prov.model_cutoff.month, prov.model_cutoff.day)
        cutoff = cutoff.replace(tzinfo=timezone.utc)
        dated = [t for t in tasks if t.created_at is not None]
        result.tasks_without_date = len(tasks) - len(dated)
        result.tasks_before_cutoff = sum(_utc(t.created_at) <= cutoff for t in dated)  # type: ignore[arg-type]
        result.fresh = result.tasks_before_cutoff == 0 and result.tasks_without_date == 0
    return result
