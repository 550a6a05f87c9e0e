"""What every command of the `swebounty` CLI shares: consoles, common options, errors."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape

from swebounty.testlimit import DEFAULT_TEST_LIMIT_S

if TYPE_CHECKING:
    from rich.progress import Progress

    from swebounty.executors import ExecutorConfig
    from swebounty.tasks import RecordError, Task

console = Console(stderr=True)  # progress, warnings and errors
out = Console()  # results

# Where runs and caches live: one setting ($SWEBOUNTY_HOME or --home), see swebounty.home.
HomeOpt = Annotated[
    Path | None,
    typer.Option(
        "--home",
        help="where runs (DIR/runs) and caches (DIR/cache) live; default $SWEBOUNTY_HOME, "
        "else ~/.local/share/swebounty",
        show_default=False,
    ),
]
RunsOpt = Annotated[
    Path | None,
    typer.Option(help="runs.sqlite and the logs of every run [default: HOME/runs]"),
]
CacheOpt = Annotated[
    Path | None,
    typer.Option(help="environments, mirrors, the demo repo [default: HOME/cache]"),
]
# Sources a project's build would download (FreeType for matplotlib), see envs/sources.py.
SourcesOpt = Annotated[
    Path | None,
    typer.Option(
        help="source trees NAME-VERSION/ or tarballs NAME-VERSION.tar.gz that projects' builds "
        "would download (FreeType 2.6.1 for matplotlib's image tests) [default: CACHE/sources]",
        show_default=False,
    ),
]

# What a PASS_TO_PASS test failing on the unpatched base too counts for (swebounty.baseline).
BaseFailuresOpt = Annotated[
    Literal["network", "strict", "all"],  # verdicts.BaseFailures (not imported: CLI start-up)
    typer.Option(
        "--base-failures",
        help="PASS_TO_PASS tests that fail on the unpatched base too, same environment: "
        "network excuses those that failed there for want of the network (grading is "
        "offline); strict excuses none (SWE-bench's verdicts, run by run); all excuses any. "
        "Excused tests are listed in each verdict; FAIL_TO_PASS tests never are",
    ),
]

# Where attempts run (swebounty.executors): this process's workers, or a Ray cluster.
ExecutorOpt = Annotated[
    str,
    typer.Option(
        "--executor",
        help="where attempts run: local (--workers threads here) or ray (a Ray cluster; "
        "pip install 'swebounty[ray]')",
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        help="ray: an existing cluster (host:port, auto, ray://host:10001) [default: start a "
        "local one of --workers worker processes]",
        show_default=False,
    ),
]
TaskCpusOpt = Annotated[float, typer.Option(help="ray: CPUs each task declares")]
TaskMemoryOpt = Annotated[
    float | None,
    typer.Option(
        help="ray: GiB each task declares, also its sandbox's memory limit [default: this "
        "machine's share per worker; 4 on an existing cluster]",
        show_default=False,
    ),
]


def _test_limit(seconds: float | None) -> float | None:
    """--test-limit as the Policy takes it: the default when not given, None for 0."""
    if seconds is None:
        return DEFAULT_TEST_LIMIT_S
    if seconds < 0:
        raise typer.BadParameter(f"must be 0 (no limit) or more, not {seconds:g}")
    return seconds or None


# One pytest test's time limit (pytest_guard/timelimit.py); the value is the Policy's.
TestLimitOpt = Annotated[
    float | None,
    typer.Option(
        callback=_test_limit,
        show_default=False,
        help=f"seconds one pytest test may run before it is stopped and fails alone, the run "
        f"going on [default: {DEFAULT_TEST_LIMIT_S:g}; 0: no limit but --timeout]",
    ),
]

VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="log everything (debug)")]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="no progress or tables: errors and the result line")
]
LogLevelOpt = Annotated[
    str | None,
    typer.Option(help="log level: debug, info, warning (default), error", show_default=False),
]


def where(home: Path | None, runs_dir: Path | None, cache_dir: Path | None) -> tuple[Path, Path]:
    """(runs dir, cache dir): absolute, from the flags or the swebounty home."""
    from swebounty import home as home_mod

    return home_mod.runs_dir(home, runs_dir), home_mod.cache_dir(home, cache_dir)


def setup_logging(verbose: bool = False, quiet: bool = False, level: str | None = None) -> None:
    """Log to stderr through rich: warnings by default, -v everything, -q errors only."""
    from rich.logging import RichHandler

    if level is not None and level.lower() not in ("debug", "info", "warning", "error"):
        raise fail(f"--log-level {level!r}: choose debug, info, warning or error")
    chosen = level.upper() if level else "DEBUG" if verbose else "ERROR" if quiet else "WARNING"
    logging.basicConfig(
        level=getattr(logging, chosen),
        format="%(message)s",
        handlers=[RichHandler(console=console, show_path=False)],
        force=True,
    )


def executor_config(
    executor: str, address: str | None, task_cpus: float, task_memory: float | None
) -> ExecutorConfig:
    """The executor the options ask for; exits with the problem when they cannot work."""
    from pydantic import ValidationError

    from swebounty.executors import EXECUTORS, ExecutorConfig

    if executor not in EXECUTORS:
        raise fail(f"--executor {executor!r}: choose {' or '.join(EXECUTORS)}")
    try:
        config = ExecutorConfig(
            kind=executor,
            address=address,
            task_cpus=task_cpus,
            task_memory_gb=task_memory,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        option = str(first["loc"][0]).removesuffix("_gb").replace("_", "-")
        raise fail(f"--{option}: {first['msg']}") from None
    problem = config.problem()
    if problem:
        raise fail(problem)
    return config


def fail(message: str) -> typer.Exit:
    """Print an error and return the exit to raise (exit code 2: the command was wrong)."""
    # One line, never hard-wrapped: it may be read by a program or grepped from a log.
    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    return typer.Exit(2)


def show_record_errors(errors: list[RecordError]) -> None:
    for err in errors[:20]:
        console.print(
            f"[yellow]skipped[/] {escape(f'{err.source} {err.where}: {err.message}')}",
            soft_wrap=True,
            highlight=False,
        )
    if len(errors) > 20:
        console.print(f"[yellow]… and {len(errors) - 20} more record errors (see report.json)[/]")


def show_task_defects(
    defects: list[dict[str, Any]], *, run_id: str = "", to: Console | None = None
) -> None:
    """Which tasks showed a defect (report.json's `task_defects`: FAIL_TO_PASS tests that pass
    with no change to the repository), why that matters and what to check. `eval`, `run` and
    `score` (`run_id` naming the run, as it scores several) all say it: a resolve on such a
    task proves nothing, an empty one's `unresolved` too. Printed on `to`, by default `out`."""
    ids = sorted({d["instance_id"] for d in defects})
    if ids:
        # Task ids come from the dataset: escaped, so one cannot restyle or hide the line.
        (to or out).print(
            f"{f'run {escape(run_id)}: ' if run_id else ''}"
            f"[yellow]{len(ids)} task defect(s)[/]: their FAIL_TO_PASS tests pass with no change "
            f"to the repository, so they cannot tell a fix from none — check the dataset's "
            f"FAIL_TO_PASS labels of {escape(', '.join(ids))} (report.json: task_defects)",
            highlight=False,
            soft_wrap=True,
        )


def load_dataset(
    dataset: str, cache_dir: Path
) -> tuple[list[Task], list[RecordError], Path | None]:
    """Tasks of a dataset (a file, `demo`, a Hugging Face name); also the demo's repos dir."""
    from swebounty.evalinputs import load_dataset as load

    tasks, errors, repos, _ = load(dataset, cache_dir)
    return tasks, errors, repos


def progress(*, fields: str = "", disable: bool = False) -> Progress:
    """A progress bar: description, bar, done/total, elapsed time, then `fields` (rich markup
    with `{task.fields[...]}` placeholders) when given."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[ProgressColumn] = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    ]
    if fields:
        columns.append(TextColumn(fields))
    return Progress(*columns, console=console, disable=disable)


def parse_date(value: str, option: str) -> datetime:
    """YYYY-MM-DD or ISO 8601; a date without a zone is UTC."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a date; write YYYY-MM-DD or an ISO 8601 time", param_hint=option
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
