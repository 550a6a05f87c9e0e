"""The `swebounty` command line: typer for parsing, rich for people."""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from swebounty.collect.cli import register as register_collect
from swebounty.envs import EnvBuildError, EnvManager
from swebounty.report import ReportRun, render_table, write_report
from swebounty.repos import RepoError
from swebounty.runs import EvalContext, build_task_env, evaluate_run, pair_submissions
from swebounty.scoring import score_run
from swebounty.store import Store
from swebounty.summary import run_report, write_run_report
from swebounty.tasks import (
    RecordError,
    Submission,
    Task,
    Verdict,
    empty_submissions,
    gold_submissions,
    load_predictions,
    load_tasks,
)

app = typer.Typer(
    help="Evaluate AI coding agents on fresh, hidden-test, dollar-valued tasks. No Docker needed.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
console = Console(stderr=True)
out = Console()

DEFAULT_CACHE = Path(os.environ.get("SWEBOUNTY_CACHE", "~/.cache/swebounty"))
STATUS_STYLE = {
    "resolved": "green",
    "unresolved": "red",
    "patch_failed": "yellow",
    "error": "magenta",
}

CacheOpt = Annotated[
    Path, typer.Option(help="environments, mirrors and the demo repo ($SWEBOUNTY_CACHE)")
]
RunsOpt = Annotated[Path, typer.Option(help="where runs.sqlite and the logs of every run go")]


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=console, show_path=False)],
    )


def _fail(message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}")
    return typer.Exit(2)


def _show_record_errors(errors: list[RecordError]) -> None:
    for err in errors[:20]:
        console.print(f"[yellow]skipped[/] {err.source} {err.where}: {err.message}")
    if len(errors) > 20:
        console.print(f"[yellow]… and {len(errors) - 20} more record errors (see report.json)[/]")


def _number_attempts(subs: list[Submission]) -> list[Submission]:
    """Several predictions for one task without an explicit `attempt` become attempts 1, 2, …"""
    seen: dict[str, set[int]] = {}
    for sub in subs:
        taken = seen.setdefault(sub.instance_id, set())
        if "attempt" not in sub.model_fields_set:
            sub.attempt = 1
            while sub.attempt in taken:
                sub.attempt += 1
        taken.add(sub.attempt)
    return subs


def load_dataset(
    dataset: str, cache_dir: Path
) -> tuple[list[Task], list[RecordError], Path | None]:
    """Tasks of a dataset path, or of the bundled demo; also the repos dir the demo needs."""
    if dataset == "demo":
        from swebounty.demo import build_demo

        mirror, tasks = build_demo(cache_dir.expanduser() / "demo")
        return tasks, [], mirror.parent
    tasks, errors = load_tasks(dataset)
    return tasks, errors, None


@app.command("eval")
def eval_cmd(
    dataset: Annotated[
        str | None, typer.Argument(help="tasks: SWE-bench .json/.jsonl/.parquet")
    ] = None,
    demo: Annotated[bool, typer.Option("--demo", help="use the bundled demo tasks")] = False,
    gold: Annotated[
        bool, typer.Option("--gold", help="submit each task's reference patch")
    ] = False,
    empty: Annotated[bool, typer.Option("--empty", help="submit an empty patch")] = False,
    predictions: Annotated[
        list[Path] | None, typer.Option("--predictions", "-p", help="SWE-bench predictions file(s)")
    ] = None,
    run_id: Annotated[
        str | None, typer.Option(help="name of the run (resumes if it exists)")
    ] = None,
    workers: Annotated[int, typer.Option(help="tasks evaluated at once")] = 1,
    instance_ids: Annotated[
        list[str] | None, typer.Option("--instance-id", "-i", help="only these task ids")
    ] = None,
    repos_dir: Annotated[
        Path | None, typer.Option(help="folder of clones named owner__name or owner/name")
    ] = None,
    runs_dir: RunsOpt = Path("runs"),
    cache_dir: CacheOpt = DEFAULT_CACHE,
    timeout: Annotated[float, typer.Option(help="seconds allowed for one task's tests")] = 1800.0,
    force: Annotated[bool, typer.Option(help="redo attempts that already have a verdict")] = False,
    unsafe: Annotated[
        bool, typer.Option("--unsafe", help="run tests WITHOUT a sandbox (no user namespaces)")
    ] = False,
    python_dir: Annotated[
        list[Path] | None, typer.Option(help="extra folders to look for interpreters in")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Evaluate submissions on a dataset, resumably, and print a verdict per task."""
    _setup_logging(verbose)
    if demo == (dataset is not None):
        raise _fail("give a DATASET or --demo (one of them)")
    if sum([gold, empty, bool(predictions)]) != 1:
        raise _fail("say what to evaluate: exactly one of --gold, --empty, --predictions FILE")
    name = "demo" if demo else str(dataset)
    try:
        tasks, errors, demo_repos = load_dataset(name, cache_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    if instance_ids:
        wanted = set(instance_ids)
        unknown = wanted - {t.instance_id for t in tasks}
        if unknown:
            raise _fail(f"no task named {', '.join(sorted(unknown))} in {name}")
        tasks = [t for t in tasks if t.instance_id in wanted]

    if gold:
        subs, kind = gold_submissions(tasks), "gold"
    elif empty:
        subs, kind = empty_submissions(tasks), "empty"
    else:
        subs, kind = [], (predictions or [Path("predictions")])[0].stem
        for pred in predictions or []:
            try:
                loaded, pred_errors = load_predictions(pred)
            except FileNotFoundError as exc:
                raise _fail(str(exc)) from exc
            subs += loaded
            errors += pred_errors
        subs = _number_attempts(subs)
        if instance_ids:
            subs = [s for s in subs if s.instance_id in set(instance_ids)]
    run_id = run_id or f"{Path(name).stem}-{kind}"

    pairs, pair_errors = pair_submissions(tasks, subs, name)
    errors += pair_errors
    if unsafe:
        console.print(
            "[bold red on white] UNSAFE [/] tests run as plain processes with this user's rights:"
            " a submitted patch can read, write and reach anything you can. Use only on a"
            " throw-away machine without user namespaces."
        )
    try:
        ctx = EvalContext.create(
            cache_dir=cache_dir,
            runs_dir=runs_dir,
            repos_dir=repos_dir or demo_repos,
            sandbox="unsafe" if unsafe else "bwrap",
            workers=workers,
            timeout_s=timeout,
            python_dirs=python_dir or [],
        )
    except RuntimeError as exc:
        raise _fail(str(exc)) from exc
    runs_dir.mkdir(parents=True, exist_ok=True)
    store = Store.open(ctx.runs_dir / "runs.sqlite")
    store.ensure_run(
        run_id,
        dataset=name if demo else str(Path(name).resolve()),
        config={"kind": kind, "repos_dir": str(ctx.repos_dir or ""), "timeout": timeout},
        sandbox=ctx.sandbox.name,
        unsafe=unsafe,
    )
    for err in errors:
        store.add_record_error(run_id, err)
    _show_record_errors(errors)

    done = store.finished(run_id)
    remaining = (
        len(pairs) if force else sum((t.instance_id, s.attempt) not in done for t, s in pairs)
    )
    counts: dict[str, int] = {}
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[counts]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task(f"eval {run_id}", total=remaining, counts="")

        def on_verdict(v: Verdict) -> None:
            counts[v.status] = counts.get(v.status, 0) + 1
            text = " ".join(f"[{STATUS_STYLE[k]}]{k} {n}[/]" for k, n in sorted(counts.items()))
            progress.update(bar, advance=1, counts=text)

        evaluate_run(run_id, pairs, ctx, store, workers=workers, force=force, on_verdict=on_verdict)

    verdicts = [
        v for v in store.verdicts(run_id) if v.instance_id in {t.instance_id for t in tasks}
    ]
    table = _verdict_table(run_id, verdicts)
    reasons = _verdict_reasons(verdicts)
    if not reasons:
        table.caption = None
    out.print(table)
    for line in reasons:
        out.print(line, highlight=False)
    report = run_report(
        run_id,
        tasks,
        store.submissions(run_id),
        verdicts,
        store.record_errors(run_id),
        sandbox=ctx.sandbox.name,
        unsafe=unsafe,
    )
    write_run_report(ctx.runs_dir / run_id / "report.json", report)
    out.print(
        f"resolved {report['resolved_instances']}/{report['total_instances']}"
        f" · report: {ctx.runs_dir / run_id / 'report.json'}"
    )
    if unsafe:
        console.print("[bold red]This run was NOT sandboxed (--unsafe).[/]")


def _verdict_table(run_id: str, verdicts: list[Verdict]) -> Table:
    table = Table(title=f"run {run_id}", caption="why: see the lines below the table")
    table.add_column("task", no_wrap=True)
    table.add_column("try", justify="right")
    table.add_column("verdict", no_wrap=True)
    table.add_column("F2P", justify="right")
    table.add_column("P2P", justify="right")
    table.add_column("s", justify="right")
    for v in sorted(verdicts, key=lambda v: (v.instance_id, v.attempt)):
        cells = []
        for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            tests = [t for t in v.tests if t.expected == kind]
            ok = sum(t.status == "passed" for t in tests)
            cells.append(f"{ok}/{len(tests)}" if tests else "-")
        status = f"[{STATUS_STYLE[v.status]}]{v.status}[/]" + (" (empty)" if v.empty_patch else "")
        table.add_row(v.instance_id, str(v.attempt), status, *cells, f"{v.seconds:.1f}")
    return table


def _verdict_reasons(verdicts: list[Verdict]) -> list[str]:
    """One line per verdict that needs explaining: why it is not resolved, and hack flags."""
    lines = []
    for v in sorted(verdicts, key=lambda v: (v.instance_id, v.attempt)):
        why = v.reason.splitlines()[0][:160] if v.reason and not v.resolved else ""
        if v.hack_flags:
            why = f"[yellow]hack flags: {', '.join(v.hack_flags)}[/] {why}"
        if why:
            lines.append(f"[bold]{v.instance_id}[/] ({v.status}): {why}")
    return lines


@app.command("runs")
def runs_cmd(runs_dir: RunsOpt = Path("runs")) -> None:
    """List the runs in the store."""
    store = Store.open(runs_dir.resolve() / "runs.sqlite")
    table = Table(title="runs")
    for col in ("run", "created", "dataset", "sandbox", "verdicts"):
        table.add_column(col)
    for run in store.runs():
        n = len(store.finished(run["run_id"]))
        sandbox = run["sandbox"] + (" [red](UNSAFE)[/]" if run["unsafe"] else "")
        table.add_row(run["run_id"], str(run["created_at"]), run["dataset"], sandbox, str(n))
    out.print(table)


def _load_runs(
    run_ids: list[str], runs_dir: Path, cache_dir: Path
) -> tuple[Store, list[tuple[dict[str, Any], list[Task]]]]:
    db = runs_dir.resolve() / "runs.sqlite"
    # Opening a missing store would create an empty one and hide a mistyped --runs-dir.
    if not db.is_file():
        raise _fail(
            f"no runs in {runs_dir} (no runs.sqlite): run `swebounty eval` or pass --runs-dir"
        )
    store = Store.open(db)
    loaded = []
    for run_id in dict.fromkeys(run_ids):  # a run named twice is scored once
        info = store.run(run_id)
        if info is None:
            known = ", ".join(run["run_id"] for run in store.runs()) or "none"
            store.close()
            raise _fail(f"no run {run_id!r} in {runs_dir} (runs there: {known})")
        try:
            tasks, _, _ = load_dataset(info["dataset"], cache_dir)
        except (FileNotFoundError, ValueError) as exc:
            store.close()
            raise _fail(
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
        raise _fail(f"--model-cutoff {value!r} is not a date like 2025-06-30") from exc
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


@app.command("score")
def score_cmd(
    run_ids: Annotated[list[str], typer.Argument(help="runs to score")],
    model_cutoff: Annotated[
        str | None, typer.Option(help="the model's training cutoff (YYYY-MM-DD)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    output: Annotated[Path | None, typer.Option("-o", help="also write the JSON here")] = None,
    runs_dir: RunsOpt = Path("runs"),
    cache_dir: CacheOpt = DEFAULT_CACHE,
) -> None:
    """Resolve rate, dollars, Kprize score, pass@k, cost and breakdowns of runs."""
    from swebounty.report import render_breakdowns

    cutoff = _parse_date(model_cutoff)
    store, loaded = _load_runs(run_ids, runs_dir, cache_dir)
    scores = [
        score_run(
            tasks,
            store.submissions(info["run_id"]),
            store.verdicts(info["run_id"]),
            model_cutoff=cutoff,
            run_id=info["run_id"],
        )
        for info, tasks in loaded
    ]
    store.close()
    payload = json.dumps([s.model_dump(mode="json") for s in scores], indent=2)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(payload + "\n", encoding="utf-8")
    if as_json:
        # Plain text, not rich: the output is for programs, so no highlighting or wrapping.
        typer.echo(payload)
        return
    out.print(render_table(scores, width=out.width))
    for table in render_breakdowns(scores):
        out.print(table)
    if output:
        out.print(f"scores: {output}")


@app.command("report")
def report_cmd(
    run_ids: Annotated[list[str], typer.Argument(help="runs to put in the report")],
    output: Annotated[Path, typer.Option("-o", help="the HTML file to write")] = Path(
        "report.html"
    ),
    model_cutoff: Annotated[
        str | None, typer.Option(help="the model's training cutoff (YYYY-MM-DD)")
    ] = None,
    runs_dir: RunsOpt = Path("runs"),
    cache_dir: CacheOpt = DEFAULT_CACHE,
) -> None:
    """Write one self-contained HTML report (works offline) of runs."""
    cutoff = _parse_date(model_cutoff)
    store, loaded = _load_runs(run_ids, runs_dir, cache_dir)
    report_runs = []
    for info, tasks in loaded:
        subs, verdicts = store.submissions(info["run_id"]), store.verdicts(info["run_id"])
        score = score_run(tasks, subs, verdicts, model_cutoff=cutoff, run_id=info["run_id"])
        report_runs.append(ReportRun(score, info, tasks, verdicts, subs))
    store.close()
    path = write_report(report_runs, output)
    out.print(f"report: {path}")


envs_app = typer.Typer(help="The environment cache: list, build ahead of a run, prune.")
app.add_typer(envs_app, name="envs")


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)


@envs_app.command("list")
def envs_list(cache_dir: CacheOpt = DEFAULT_CACHE) -> None:
    """Every built environment with its interpreter, build time and size on disk."""
    manager = EnvManager(cache_dir.expanduser().resolve() / "envs")
    table = Table(title=f"environments in {cache_dir}")
    for col in ("key", "project", "python", "build s", "on disk", "own"):
        table.add_column(col, no_wrap=col == "key")
    total = 0
    for env in manager.list():
        total += env.own_bytes or 0
        project = env.project.name if env.project else "-"
        table.add_row(
            env.key[:16],
            project,
            env.interpreter,
            f"{env.build_seconds:.1f}",
            _size(env.size_bytes),
            _size(env.own_bytes),
        )
    out.print(table)
    out.print(f"own disk use (not shared with uv's cache): {_size(total)}")


@envs_app.command("build")
def envs_build(
    dataset: Annotated[str, typer.Argument(help="tasks file, or 'demo'")],
    instance_ids: Annotated[
        list[str] | None, typer.Option("--instance-id", "-i", help="only these task ids")
    ] = None,
    repos_dir: Annotated[Path | None, typer.Option(help="folder of clones")] = None,
    cache_dir: CacheOpt = DEFAULT_CACHE,
    python_dir: Annotated[list[Path] | None, typer.Option(help="extra interpreter folders")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Build (or find cached) the environment of every task, ahead of a run."""
    _setup_logging(verbose)
    tasks, errors, demo_repos = load_dataset(dataset, cache_dir)
    _show_record_errors(errors)
    if instance_ids:
        tasks = [t for t in tasks if t.instance_id in set(instance_ids)]
    ctx = EvalContext.create(
        cache_dir=cache_dir,
        runs_dir=Path("runs"),
        repos_dir=repos_dir or demo_repos,
        sandbox="unsafe",
        python_dirs=python_dir or [],
    )
    table = Table(title="environments")
    for col in ("task", "env", "python", "s", "problem"):
        table.add_column(col, overflow="fold")
    failed = 0
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task("build environments", total=len(tasks))
        for task in tasks:
            progress.update(bar, description=task.instance_id)
            try:
                env = build_task_env(task, ctx)
                table.add_row(
                    task.instance_id, env.key[:16], env.interpreter, f"{env.build_seconds:.1f}", ""
                )
            except (RepoError, EnvBuildError) as exc:
                failed += 1
                table.add_row(task.instance_id, "-", "-", "-", str(exc).splitlines()[0])
            progress.advance(bar)
    out.print(table)
    if failed:
        raise typer.Exit(1)


@envs_app.command("prune")
def envs_prune(
    keep_run: Annotated[
        list[str] | None, typer.Option(help="keep the environments this run's verdicts used")
    ] = None,
    all_envs: Annotated[bool, typer.Option("--all", help="remove every environment")] = False,
    runs_dir: RunsOpt = Path("runs"),
    cache_dir: CacheOpt = DEFAULT_CACHE,
) -> None:
    """Remove cached environments: all of them, or all but those some runs used."""
    if not keep_run and not all_envs:
        raise _fail("say what to keep: --keep-run RUN_ID (repeatable), or --all to remove all")
    keep_keys: set[str] | None = None
    if keep_run:
        store = Store.open(runs_dir.resolve() / "runs.sqlite")
        keep_keys = {v.env_key for r in keep_run for v in store.verdicts(r) if v.env_key}
    freed = EnvManager(cache_dir.expanduser().resolve() / "envs").prune(keep_keys)
    out.print(f"freed {_size(freed)}")


register_collect(app)


def main() -> None:
    app()
