"""`--agent mini-swe-agent`: SWE-agent's 100-line agent (PyPI `mini-swe-agent`), unchanged.

Its own benchmark configuration (`swebench.yaml`: prompts, step limit, the bash tool called by
function calling) runs in the workspace, in the sandbox, with litellm pointed at the model
proxy. Settings (`--option`): `config` (one of its built-in config names or a YAML file path
mounted with --mount), `step_limit`, and `overrides` (a nested dict merged into its config).
"""

from __future__ import annotations

from typing import Any, ClassVar

from swebounty.agents.installed import InstalledAgent, InstalledConfig


class MiniSweAgent(InstalledAgent):
    name: ClassVar[str] = "mini-swe-agent"
    package: ClassVar[str] = "mini-swe-agent"
    pinned: ClassVar[str] = "2.4.6"
    runner: ClassVar[str] = "run_mini_swe_agent.py"
    trajectory_file: ClassVar[str] = "mini-swe-agent.traj.json"

    def settings_for(self, config: InstalledConfig) -> dict[str, Any]:
        settings = dict(config.settings)
        overrides = dict(settings.get("overrides") or {})
        if "step_limit" in settings:
            agent = dict(overrides.get("agent") or {})
            agent["step_limit"] = int(settings.pop("step_limit"))
            overrides["agent"] = agent
        settings["overrides"] = overrides
        return settings

    def trajectory(self, raw: bytes) -> list[dict[str, Any]]:
        """Its messages, one event each (the trajectory file's `messages`), and its info."""
        data = super().trajectory(raw)
        content = data[0]["content"] if data else None
        if not isinstance(content, dict):
            return data
        messages = content.get("messages")
        events = [{"message": m} for m in messages or [] if isinstance(m, dict)]
        info = content.get("info")
        return [*events, {"info": info}] if isinstance(info, dict) else events
