"""Commands `score` and `report`; `register(app)` mounts them on the main app."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from swebounty.cli._common import (
    CacheOpt,
    HomeOpt,
    RunsOpt,
    console,
    fail,
    load_dataset,
    out,
    show_task_defects,
    where,
)

if TYPE_CHECKING:
    from swebounty.store import Store
    from swebounty.tasks import Task


def _load_runs(
    run_ids: list[str], runs_dir: Path, cache_dir: Path
) -> tuple[Store, list[tuple[dict[str, Any], list[Task]]]]:
    from swebounty.store import Store

    db = runs_dir / "runs.sqlite"
    # Opening a missing store would create an empty one and hide a mistyped --runs-dir.
    if not db.is_file():
        raise fail(
            f"no runs in {runs_dir} (no runs.sqlite): run `swebounty eval` or pass --runs-dir"
        )
    store = Store.open(db)
    loaded = []
    for run_id in dict.fromkeys(run_ids):  # a run named twice is scored once
        info = store.run(run_id)
        if info is None:
            known = ", ".join(run["run_id"] for run in store.runs()) or "none"
            store.close()
            raise fail(f"no run {run_id!r} in {runs_dir} (runs there: {known})")
        try:
            tasks, _, _ = load_dataset(info["dataset"], cache_dir)
        except (FileNotFoundError, ValueError) as exc:
            store.close()
            raise fail(
                f"run {run_id}: cannot read its dataset {info['dataset']}: {exc}"
                " (moved? put it back at that path)"
            ) from exc
        loaded.append((info, tasks))
    return store, loaded


def _parse_date(value: str | None) -> datetime | None:
    """A date or time (ISO 8601); one without a zone is UTC, as task dates are."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise fail(f"--model-cutoff {value!r} is not a date like 2025-06-30") from exc
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def score_cmd(
    run_ids: Annotated[list[str], typer.Argument(help="runs to score")],
    model_cutoff: Annotated[
        str | None, typer.Option(help="the model's training cutoff (YYYY-MM-DD)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    output: Annotated[Path | None, typer.Option("-o", help="also write the JSON here")] = None,
    home: HomeOpt = None,
    runs_dir: RunsOpt = None,
    cache_dir: CacheOpt = None,
) -> None:
    """Resolve rate, dollars, Kprize score, pass@k, cost and breakdowns of runs."""
    from swebounty.report.table import render_breakdowns, render_table
    from swebounty.scoring import score_run
    from swebounty.summary import task_defects

    cutoff = _parse_date(model_cutoff)
    store, loaded = _load_runs(run_ids, *where(home, runs_dir, cache_dir))
    scores, defects = [], {}
    for info, tasks in loaded:
        verdicts = store.verdicts(info["run_id"])
        scores.append(
            score_run(
                tasks,
                store.submissions(info["run_id"]),
                verdicts,
                model_cutoff=cutoff,
                run_id=info["run_id"],
                provenance=store.provenance(info["run_id"]),
            )
        )
        defects[info["run_id"]] = task_defects(verdicts)
    skipped = {info["run_id"]: store.record_errors(info["run_id"]) for info, _ in loaded}
    store.close()
    for run_id, errors in skipped.items():
        if errors:
            first = errors[0]
            console.print(
                f"[yellow]run {run_id}: {len(errors)} input record(s) were skipped[/] and are "
                f"not in its scores (first: {first.source} {first.where}: {first.message}); "
                f"all of them are in the run's report.json"
            )
    payload = json.dumps([s.model_dump(mode="json") for s in scores], indent=2)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(payload + "\n", encoding="utf-8")
    if as_json:
        # Plain text, not rich: the output is for programs, so no highlighting or wrapping.
        typer.echo(payload)
        for run_id, found in defects.items():  # a warning for people: stdout stays JSON
            show_task_defects(found, run_id=run_id, to=console)
        return
    out.print(render_table(scores, width=out.width))
    for table in render_breakdowns(scores):
        out.print(table)
    # A resolve on such a task proves nothing: the numbers above count it all the same.
    for run_id, found in defects.items():
        show_task_defects(found, run_id=run_id)
    if output:
        out.print(f"scores: {output}")


def report_cmd(
    run_ids: Annotated[list[str], typer.Argument(help="runs to put in the report")],
    output: Annotated[Path, typer.Option("-o", help="the HTML file to write")] = Path(
        "report.html"
    ),
    model_cutoff: Annotated[
        str | None, typer.Option(help="the model's training cutoff (YYYY-MM-DD)")
    ] = None,
    home: HomeOpt = None,
    runs_dir: RunsOpt = None,
    cache_dir: CacheOpt = None,
) -> None:
    """Write one self-contained HTML report (works offline) of runs."""
    from swebounty.extras import MissingExtra, require
    from swebounty.report import ReportRun, write_report
    from swebounty.scoring import score_run

    try:
        require("report", "the HTML report", "jinja2", "matplotlib")
    except MissingExtra as exc:
        raise fail(str(exc)) from None

    cutoff = _parse_date(model_cutoff)
    store, loaded = _load_runs(run_ids, *where(home, runs_dir, cache_dir))
    report_runs = []
    for info, tasks in loaded:
        subs, verdicts = store.submissions(info["run_id"]), store.verdicts(info["run_id"])
        score = score_run(
            tasks,
            subs,
            verdicts,
            model_cutoff=cutoff,
            run_id=info["run_id"],
            provenance=store.provenance(info["run_id"]),
        )
        report_runs.append(ReportRun(score, info, tasks, verdicts, subs))
    store.close()
    path = write_report(report_runs, output)
    out.print(f"report: {path}")


def register(app: typer.Typer) -> None:
    """Mount the commands on the main `swebounty` app."""
    app.command("score")(score_cmd)
    app.command("report")(report_cmd)
