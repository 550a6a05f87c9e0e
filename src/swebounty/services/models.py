"""The record of a test service that stood in during a run (on the verdict and its evidence).

A leaf module (pydantic only): `verdicts.Verdict` carries these, and nothing here imports the rest
of swebounty.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class ServiceUse(BaseModel):
    """One local service the tests reached instead of the public one they name."""

    name: str = Field(description="the catalog's name, e.g. httpbin")
    version: str = Field(description="the version of the package that is the service")
    packages: list[str] = Field(default_factory=list, description="its environment, pinned")
    python: str = Field("", description="the interpreter the service ran on")
    env_key: str = Field("", description="its cached environment")
    url: str = Field("", description="where the tests reached it, inside the sandbox")
    env: dict[str, str] = Field(default_factory=dict, description="what the tests were told")
    hosts: list[str] = Field(
        default_factory=list, description="internet host names it answered for (loopback)"
    )
    host_ports: list[str] = Field(
        default_factory=list, description="where it answered for them: '80 http', '443 https'"
    )
    missing: str = Field("", description="why hosts it stands in for were not served")
    trusted: list[str] = Field(
        default_factory=list,
        description="the tests' environment's CA bundles its CA was added to (in the sandbox)",
    )
    data: list[str] = Field(
        default_factory=list, description="the task's files it read (a replay's flows)"
    )
    unanswered: list[str] = Field(
        default_factory=list,
        description="requests it had no answer for (a replay's misses: not in the recording)",
    )


def unanswered_said(uses: list[ServiceUse], limit: int = 5) -> str:
    """The requests the services had no answer for, in words ('' when none): said on a verdict
    that is not resolved, never judged (the recording may lack what another correct fix asks,
    and the services' logs, where these come from, are written inside the sandbox)."""
    asked = [(u.name, r) for u in uses for r in u.unanswered]
    if not asked:
        return ""
    named = "; ".join(f"{r} ({name}: see service-{name}.log)" for name, r in asked[:limit])
    more = f" and {len(asked) - limit} more" if len(asked) > limit else ""
    return f"no recorded answer for {named}{more}"
