"""MkDocs hooks: the pages that are generated, never written by hand.

- `<!-- cli-reference -->` becomes every command's `--help`, from the Typer app itself.
- `<!-- bench-results -->` becomes a table per `bench/results/*.json` a bench script wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer.main

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def _commands(cmd: Any, path: list[str]) -> list[tuple[list[str], Any]]:
    """Every command under `cmd` with its name path (typer's click is its own copy: duck-typed)."""
    found = [(path, cmd)]
    for name in sorted(getattr(cmd, "commands", {})):
        found += _commands(cmd.commands[name], [*path, name])
    return found


def cli_reference() -> str:
    """Markdown: a section per command with its usage, help and options, as `--help` shows."""
    from swebounty.cli import app

    root = typer.main.get_command(app)
    out: list[str] = []
    contexts: dict[tuple[str, ...], Any] = {}
    for path, cmd in _commands(root, ["swebounty"]):
        parent = contexts.get(tuple(path[:-1]))
        ctx = cmd.context_class(cmd, info_name=path[-1], parent=parent, max_content_width=100)
        ctx.terminal_width = 100
        contexts[tuple(path)] = ctx
        out += [f"## {' '.join(path)}", "", "```text", cmd.get_help(ctx).rstrip(), "```", ""]
    return "\n".join(out)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict | list):
        text = json.dumps(value, separators=(",", ":"))
        return text if len(text) <= 60 else text[:57] + "..."
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(rows: list[dict[str, Any]]) -> list[str]:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return [*lines, ""]


def results_tables(folder: Path = RESULTS) -> str:
    """Markdown: for each JSON file, its scalar figures and every list of records as tables."""
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        return "No measured results are committed under `bench/results/` yet.\n"
    out: list[str] = []
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        out += [f"## {path.stem}", "", f"From `bench/results/{path.name}`.", ""]
        records = {"records": data} if isinstance(data, list) else data
        if (
            isinstance(records, dict)
            and records
            and all(isinstance(v, dict) for v in records.values())
        ):
            records = {"rows": records}  # one row per key: {"core": {...}, "dev": {...}}
        if not isinstance(records, dict):
            out += [f"`{_cell(records)}`", ""]
            continue
        scalars = {k: v for k, v in records.items() if not isinstance(v, list | dict)}
        if scalars:
            out += _table([{"figure": k, "value": v} for k, v in scalars.items()])
        for key, value in records.items():
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                out += [f"### {key}", "", *_table(value)]
            elif isinstance(value, dict) and value:
                if all(isinstance(v, dict) for v in value.values()):
                    out += [f"### {key}", "", *_table([{"": k, **v} for k, v in value.items()])]
                else:
                    out += [
                        f"### {key}",
                        "",
                        *_table([{"figure": k, "value": v} for k, v in value.items()]),
                    ]
    return "\n".join(out)


def on_page_markdown(markdown: str, **_: Any) -> str:
    if "<!-- cli-reference -->" in markdown:
        markdown = markdown.replace("<!-- cli-reference -->", cli_reference())
    if "<!-- bench-results -->" in markdown:
        markdown = markdown.replace("<!-- bench-results -->", results_tables())
    return markdown
