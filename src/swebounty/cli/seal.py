"""Commands `seal` and `verify-seal`: commit to a dataset before its reveal, and check it after."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swebounty.cli._common import console, fail, parse_date


def seal_cmd(
    tasks_file: Annotated[Path, typer.Argument(help="validated tasks JSONL")],
    out_dir: Annotated[Path | None, typer.Option(help="default: beside the tasks file")] = None,
    name: Annotated[str | None, typer.Option(help="dataset name (default: file stem)")] = None,
    since: Annotated[str | None, typer.Option(help="the window's start, for the record")] = None,
    until: Annotated[str | None, typer.Option(help="the window's end, for the record")] = None,
) -> None:
    """Write the sealed dataset, its public half and the manifest with the sha256 commitment."""
    from swebounty.collect.seal import SealError, seal
    from swebounty.tasks import load_tasks

    if not tasks_file.exists():
        raise fail(f"{tasks_file} does not exist: run `swebounty validate` first")
    tasks, errors = load_tasks(tasks_file)
    if errors:
        raise fail(f"{tasks_file} has {len(errors)} bad records (first: {errors[0].message})")
    try:
        manifest = seal(
            tasks,
            out_dir or tasks_file.parent,
            name or tasks_file.stem,
            since=parse_date(since, "--since") if since else None,
            until=parse_date(until, "--until") if until else None,
        )
    except SealError as exc:
        raise fail(str(exc)) from None
    console.print(
        f"sealed {manifest.tasks} tasks; commitment sha256 [bold]{manifest.sha256}[/]\n"
        f"publish {manifest.files['public']} and {manifest.files['manifest']}; keep "
        f"{manifest.files['sealed']} private until the reveal"
    )


def verify_seal_cmd(
    manifest: Annotated[Path, typer.Argument(help="the manifest written by `seal`")],
    revealed: Annotated[Path | None, typer.Argument(help="revealed dataset (default: sealed)")] = (
        None
    ),
) -> None:
    """Check a revealed dataset against the commitment in its manifest."""
    from swebounty.collect.seal import SealError, verify_seal

    if not manifest.exists():
        raise fail(f"{manifest} does not exist")
    try:
        problems = verify_seal(manifest, revealed)
    except (SealError, ValueError) as exc:
        raise fail(str(exc)) from None
    if problems:
        for p in problems:
            console.print(f"[red]✗[/] {p}")
        raise typer.Exit(1)
    console.print("[green]✓[/] the revealed dataset matches its commitment")


def register(app: typer.Typer) -> None:
    """Mount the commands on the main `swebounty` app."""
    app.command("seal")(seal_cmd)
    app.command("verify-seal")(verify_seal_cmd)
