"""Command `funnel`, and the funnel tables `validate` prints: yield per stage, repository and
drop class (collect/funnel.py computes them)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from swebounty.cli._common import console, fail, out

_SHORT = {
    "fixes": "fixes",
    "candidates": "cands",
    "environment": "env",
    "collected": "collected",
    "fail_to_pass": "F2P",
    "stable": "stable",
    "valid": "valid",
}


def print_funnel(funnel: dict[str, Any]) -> None:
    """Three tables: stages overall, one row per repository, and the drop classes."""
    from rich.table import Table

    overall = funnel["overall"]
    stages = list(funnel["stages"])
    table = Table(title="yield funnel")
    table.add_column("stage")
    table.add_column("kept", justify="right")
    table.add_column("dropped here", justify="right")
    for stage in stages:
        lost = sum(e["count"] for e in overall["dropped"].values() if e["stage"] == stage)
        table.add_row(funnel["stages"][stage], str(overall[stage]), str(lost) if lost else "")
    if overall["pending"]:
        table.add_row("[dim]not validated yet[/]", str(overall["pending"]), "")
    out.print(table)

    repos = Table(title="per repository")
    repos.add_column("repository")
    for stage in stages:
        repos.add_column(_SHORT[stage], justify="right")
    repos.add_column("yield", justify="right")
    repos.add_column("cpu s/cand", justify="right")
    repos.add_column("main drop")
    for repo, row in funnel["repos"].items():
        top = next(iter(row["dropped"].items()), None)
        failed = funnel["failed_repos"].get(repo)
        repos.add_row(
            f"[red]{repo}[/]" if failed else repo,
            *(str(row[s]) for s in stages),
            f"{row['yield']:.0%}" if row["yield"] is not None else "",
            _num(row["costs"]["cpu_seconds_per_candidate"]),
            f"failed: {failed.splitlines()[0][:50]}"
            if failed
            else (f"{top[0]} ({top[1]['count']})" if top else ""),
        )
    out.print(repos)

    drops = Table(title="why candidates were dropped")
    drops.add_column("class")
    drops.add_column("at stage")
    drops.add_column("count", justify="right")
    drops.add_column("example")
    for cls, entry in overall["dropped"].items():
        example = entry["example"] or {}
        text = f"{example.get('instance_id')}: {example.get('reason', '')}"
        drops.add_row(cls, _SHORT[entry["stage"]], str(entry["count"]), text[:90])
    out.print(drops, highlight=False)
    costs = overall["costs"]
    if costs["validated"]:
        out.print(
            f"validated {costs['validated']}: {costs['cpu_seconds']:.0f} CPU-s, "
            f"{costs['wall_seconds']:.0f} wall-s; per candidate "
            f"{_num(costs['cpu_seconds_per_candidate'])} CPU-s, per valid task "
            f"{_num(costs['cpu_seconds_per_valid'])} CPU-s; "
            f"{costs['environments']} environments",
            highlight=False,
        )
        if costs.get("cpu_incomplete"):
            out.print(
                f"[yellow]{costs['cpu_incomplete']} of them without their sandboxed tests' CPU "
                "time (recorded before it was measured, or without a cgroup): too low[/]"
            )


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def funnel_cmd(
    candidates: Annotated[Path, typer.Argument(help="candidates JSONL from `collect`")],
    tasks: Annotated[
        Path | None, typer.Argument(help="validated tasks JSONL from `validate` (optional)")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="write the funnel as JSON here")
    ] = None,
    html: Annotated[
        Path | None, typer.Option(help="write the funnel as a page of the HTML report here")
    ] = None,
) -> None:
    """The yield funnel of a collection so far: per stage, per repository, and why each
    candidate was dropped (also of a run that is still going, or was stopped)."""
    from swebounty.collect.funnel import compute, write

    if not candidates.exists() and not candidates.with_name(candidates.name + ".partial").exists():
        raise fail(f"{candidates} does not exist: run `swebounty collect` first")
    funnel = compute(candidates, tasks)
    print_funnel(funnel)
    if output is not None:
        write(funnel, output)
        console.print(f"funnel JSON -> {output}")
    if html is not None:
        from swebounty.extras import MissingExtra
        from swebounty.report.funnel import write_funnel_page

        try:
            write_funnel_page(funnel, html)
        except MissingExtra as exc:
            raise fail(str(exc)) from None
        console.print(f"funnel page -> {html}")


def register(app: typer.Typer) -> None:
    app.command("funnel")(funnel_cmd)
