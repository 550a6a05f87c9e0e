"""`--agent aider`: Aider (PyPI `aider-chat`), unchanged, one message per attempt.

Run with its own `main` in the workspace, in the sandbox (agents/tools/run_aider.py): the
problem statement as its message, litellm pointed at the model proxy, every confirmation
answered yes, no commits. Its edits are the answer; no edit is a skip. Its trajectory is its
chat history (markdown) and its LLM history. Settings (`--option settings='{...}'`):
`edit_format` (default `diff`: SEARCH/REPLACE blocks), `map_tokens` (its repository map),
`args` (more of its command-line flags).
"""

from __future__ import annotations

from typing import Any, ClassVar

from swebounty.agents.installed import InstalledAgent

_CHARS = 2_000_000  # of each history kept in the trajectory


class AiderAgent(InstalledAgent):
    name: ClassVar[str] = "aider"
    package: ClassVar[str] = "aider-chat"
    pinned: ClassVar[str] = "0.86.2"
    runner: ClassVar[str] = "run_aider.py"
    trajectory_file: ClassVar[str] = "aider.chat.history.md"

    def trajectory(self, raw: bytes) -> list[dict[str, Any]]:
        text = raw.decode("utf-8", "replace")
        return [{"file": self.trajectory_file, "chat_history": text[-_CHARS:]}]
