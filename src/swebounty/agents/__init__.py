"""Agents: what turns a task's public part into a submission, k attempts per task.

Built-ins, by name: `gold` (the reference patches: checks the harness), `predictions` (patches
made elsewhere), `command` (any executable, run in the sandbox), `llm` (a short loop over an
OpenAI-compatible endpoint with function calling). Any other name is a dotted path to a class
following the `Agent` protocol (`mypackage.agents:MyAgent` or `mypackage.agents.MyAgent`).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from swebounty.agents.base import Agent, AgentResult, AgentStatus, PublicTask
from swebounty.tasks import Task

AGENTS = {
    "gold": "swebounty.agents.gold:GoldAgent",
    "predictions": "swebounty.agents.predictions:PredictionsAgent",
    "command": "swebounty.agents.command:CommandAgent",
    "llm": "swebounty.agents.llm:LLMAgent",
    # Open-source agents, installed from PyPI into an environment of their own (installed.py)
    "mini-swe-agent": "swebounty.agents.mini_swe_agent:MiniSweAgent",
    "aider": "swebounty.agents.aider:AiderAgent",
    "openhands": "swebounty.agents.openhands:OpenHandsAgent",
}

# Agents people ask for by name that do not install from PyPI: what to do instead.
NOT_INSTALLABLE = {
    "swe-agent": (
        "SWE-agent is not on PyPI (its one release there, sweagent 0.0.1 of 2024, has neither "
        "its configs nor its run script, and its environment is a Docker container): run a "
        "checkout of it as --agent command (docs/guides/agents.md)"
    ),
}


def agent_class(name: str) -> Any:
    """The class registered as `name`, else the class at the dotted path `name`."""
    if name in NOT_INSTALLABLE:
        raise ValueError(NOT_INSTALLABLE[name])
    path = AGENTS.get(name, name)
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        known = ", ".join(AGENTS)
        raise ValueError(f"unknown agent {name!r}: use one of {known} or a dotted path")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        known = ", ".join(AGENTS)
        raise ValueError(
            f"unknown agent {name!r} ({exc}): use one of {known} or a dotted path"
        ) from exc
    for needed in ("create", "run", "provenance", "uses_session"):
        if not hasattr(cls, needed):
            raise ValueError(f"{path} is not an agent: it has no {needed!r}")
    return cls


def create_agent(name: str, options: dict[str, Any], tasks: Sequence[Task] = ()) -> Agent:
    """An agent from its name and options (validated by its config model)."""
    agent: Agent = agent_class(name).create(options, tasks)
    return agent


__all__ = [
    "AGENTS",
    "NOT_INSTALLABLE",
    "Agent",
    "AgentResult",
    "AgentStatus",
    "PublicTask",
    "agent_class",
    "create_agent",
]
