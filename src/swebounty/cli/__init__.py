"""The `swebounty` command line: typer for parsing, rich for people.

One thin module per command group, each over the library: `evaluate` (eval, runs), `run` (run
an agent), `envs`
(envs list|build|prune), `scores` (score, report), `collect` (collect, validate, seal,
verify-seal). Command modules import the library inside the commands, so `--help` and each
command load only what they use.
"""

from __future__ import annotations

from typing import Annotated

import typer

from swebounty.cli import collect, envs, evaluate, run, scores
from swebounty.cli.docs import epilog, point_to_pages

app = typer.Typer(
    help="Evaluate AI coding agents on fresh, hidden-test, dollar-valued tasks. No Docker needed.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    # Plain (click-style) help: typer's rich help imports rich.markdown, markdown-it and
    # pygments and draws panels, 60 of the 210 ms of CPU `swebounty --help` took.
    rich_markup_mode=None,
    epilog=epilog(""),
)


def _version(value: bool) -> None:
    if value:
        from swebounty import __version__

        typer.echo(f"swebounty {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """Evaluate AI coding agents on fresh, hidden-test, dollar-valued tasks. No Docker needed."""


for group in (evaluate, run, envs, scores, collect):
    group.register(app)
point_to_pages(app)


def main() -> None:
    app()


__all__ = ["app", "main"]
