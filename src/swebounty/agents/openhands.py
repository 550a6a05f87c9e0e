"""`--agent openhands`: OpenHands (PyPI `openhands-ai`), its own agent and tools, without Docker.

The release that installs here (1.x) is OpenHands' SDK with its app server: its headless path
is the SDK's default agent (`get_default_agent`: its system prompt, the `terminal`,
`file_editor` and `task_tracker` tools, `think`, `finish`) in a local conversation whose
workspace is the repository, run by agents/tools/run_openhands.py in the sandbox. Its model is
litellm's `openai/<model>` at the model proxy, with native function calling. It needs Python
3.12 or 3.13. Its edits are the answer when it finishes; an error, a stuck loop or its
iteration limit is a skip. Its trajectory is its event log. Settings (`--option
settings='{...}'`): `max_iterations` (default 100), `num_retries` (3), `prompt` (a template
with `{cwd}` and `{problem}`), `llm` (more fields of its `LLM`, e.g. `{"temperature": 0}`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from swebounty.agents.installed import InstalledAgent, InstalledConfig

# Set by the runner from the run: the model and its endpoint (the proxy) and the key it holds.
_HARNESS_LLM_FIELDS = {"model", "base_url", "api_key", "usage_id"}


class OpenHandsAgent(InstalledAgent):
    name: ClassVar[str] = "openhands"
    package: ClassVar[str] = "openhands-ai"
    pinned: ClassVar[str] = "1.11.0"
    runner: ClassVar[str] = "run_openhands.py"
    trajectory_file: ClassVar[str] = "openhands.events.json"
    requires_python: ClassVar[str | None] = ">=3.12,<3.14"

    def settings_for(self, config: InstalledConfig) -> dict[str, Any]:
        settings = dict(config.settings)
        llm = settings.get("llm") or {}
        if not isinstance(llm, dict):
            raise ValueError('openhands: settings "llm" is a dict of its LLM\'s fields')
        if fixed := sorted(set(llm) & _HARNESS_LLM_FIELDS):
            raise ValueError(
                f"openhands: {', '.join(fixed)} of its LLM are the harness's (the model proxy, "
                "--model): leave them out of settings.llm"
            )
        return settings

    def trajectory(self, raw: bytes) -> list[dict[str, Any]]:
        """Its events, one each (actions, observations, messages, errors), in order."""
        data = super().trajectory(raw)
        content = data[0]["content"] if data else None
        if not isinstance(content, list):
            return data
        return [{"event": e} for e in content if isinstance(e, dict)]
