"""Which documentation page explains each command: the last line of its `--help`.

The pages live under `docs/` in the source tree (`mkdocs serve` shows them as a site);
tests/test_docs.py checks that every command has a page here and that the page exists.
"""

from __future__ import annotations

from typing import Any

# Command path (without "swebounty") -> page under docs/.
PAGES: dict[str, str] = {
    "": "index.md",
    "eval": "guides/evaluate.md",
    "runs": "guides/evaluate.md",
    "run": "guides/agents.md",
    "score": "scores.md",
    "report": "scores.md",
    "collect": "guides/fresh-tasks.md",
    "validate": "guides/fresh-tasks.md",
    "seal": "guides/fresh-tasks.md",
    "verify-seal": "guides/fresh-tasks.md",
    "funnel": "guides/fresh-tasks.md",
    "envs": "environments.md",
    "envs list": "environments.md",
    "envs build": "environments.md",
    "envs prune": "environments.md",
}


def epilog(command: str) -> str:
    page = PAGES.get(command, "reference/cli.md")
    return f"Documentation: docs/{page}"


def _name(info: Any) -> str:
    return str(info.name or info.callback.__name__.replace("_", "-"))


def point_to_pages(app: Any, prefix: str = "") -> None:
    """Give every command and group of the Typer `app` the epilog naming its page."""
    for info in app.registered_commands:
        info.epilog = info.epilog or epilog(f"{prefix}{_name(info)}")
    for group in app.registered_groups:
        name = f"{prefix}{group.name}"
        group.epilog = group.epilog or epilog(name)
        point_to_pages(group.typer_instance, f"{name} ")
