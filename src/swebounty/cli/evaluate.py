"""Commands `eval` and `runs`: evaluate submissions into a Run, list the runs in the store."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from swebounty.cli._common import (
    AddressOpt,
    BaseFailuresOpt,
    CacheOpt,
    ExecutorOpt,
    HomeOpt,
    LogLevelOpt,
    QuietOpt,
    RunsOpt,
    SourcesOpt,
    TaskCpusOpt,
    TaskMemoryOpt,
    TestLimitOpt,
    VerboseOpt,
    console,
    executor_config,
    fail,
    out,
    progress,
    setup_logging,
    show_record_errors,
    show_task_defects,
    where,
)

if TYPE_CHECKING:
    from rich.table import Table

    from swebounty.evaluation import Evaluation
    from swebounty.verdicts import Verdict

STATUS_STYLE = {
    "resolved": "green",
    "unresolved": "red",
    "patch_failed": "yellow",
    "error": "magenta",
    "agent_error": "red",
}


def eval_cmd(
    dataset: Annotated[
        str | None,
        typer.Argument(
            help="tasks: a SWE-bench .json/.jsonl/.parquet file, or a Hugging Face dataset "
            "name (princeton-nlp/SWE-bench_Lite) read from the local cache"
        ),
    ] = None,
    demo: Annotated[
        bool, typer.Option("--demo", help="use the bundled demo (a pytest-tested library)")
    ] = False,
    demo_js: Annotated[
        bool, typer.Option("--demo-js", help="use the JavaScript demo (a Mocha-tested library)")
    ] = False,
    demo_web: Annotated[
        bool,
        typer.Option(
            "--demo-web", help="use the web-app demo (graded by a hidden Playwright test)"
        ),
    ] = False,
    gold: Annotated[
        bool, typer.Option("--gold", help="submit each task's reference patch")
    ] = False,
    empty: Annotated[bool, typer.Option("--empty", help="submit an empty patch")] = False,
    predictions: Annotated[
        list[Path] | None, typer.Option("--predictions", "-p", help="SWE-bench predictions file(s)")
    ] = None,
    run_id: Annotated[
        str | None,
        typer.Option(help="name of the run (resumes if it exists) [default: DATASET-KIND]"),
    ] = None,
    add_to_run: Annotated[
        bool,
        typer.Option(
            "--add-to-run",
            help="add this dataset's tasks to an existing run of another dataset (a run is "
            "one dataset otherwise)",
        ),
    ] = False,
    split: Annotated[str, typer.Option(help="the split of a Hugging Face dataset")] = "test",
    workers: Annotated[int, typer.Option(help="tasks evaluated at once")] = 1,
    instance_ids: Annotated[
        list[str] | None, typer.Option("--instance-id", "-i", help="only these task ids")
    ] = None,
    repos_dir: Annotated[
        Path | None, typer.Option(help="folder of clones named owner__name or owner/name")
    ] = None,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
    task_cpus: TaskCpusOpt = 1.0,
    task_memory: TaskMemoryOpt = None,
    home: HomeOpt = None,
    runs_dir: RunsOpt = None,
    cache_dir: CacheOpt = None,
    timeout: Annotated[float, typer.Option(help="seconds allowed for one task's tests")] = 1800.0,
    test_limit: TestLimitOpt = None,
    force: Annotated[bool, typer.Option(help="redo attempts that already have a verdict")] = False,
    retry_errors: Annotated[
        bool,
        typer.Option(
            help="re-evaluate attempts whose verdict is `error` (an infrastructure failure)"
        ),
    ] = True,
    unsafe: Annotated[
        bool, typer.Option("--unsafe", help="run tests WITHOUT a sandbox (no user namespaces)")
    ] = False,
    python_dir: Annotated[
        list[Path] | None, typer.Option(help="extra folders to look for interpreters in")
    ] = None,
    sources_dir: SourcesOpt = None,
    keep_test_infra: Annotated[
        bool,
        typer.Option(
            "--keep-test-infra",
            help="grade with the submission's conftest.py, pytest configuration, plugins and "
            "startup files instead of the base commit's (they stay flagged)",
        ),
    ] = False,
    base_failures: BaseFailuresOpt = "network",
    excuse_base_failures: Annotated[
        bool, typer.Option("--excuse-base-failures", help="the same as --base-failures all")
    ] = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
    log_level: LogLevelOpt = None,
) -> None:
    """Evaluate submissions on a dataset, resumably, and print a verdict per task.

    Ctrl-C stops the run (exit 130); the same command resumes it.
    """
    from swebounty.evalinputs import EvalInputError
    from swebounty.evaluation import open_evaluation

    setup_logging(verbose, quiet, log_level)
    demos = [n for n, on in (("demo", demo), ("demo:js", demo_js), ("demo:web", demo_web)) if on]
    if len(demos) + (dataset is not None) != 1:
        raise fail("give a DATASET or one of --demo, --demo-js, --demo-web")
    if sum([gold, empty, bool(predictions)]) != 1:
        raise fail("say what to evaluate: exactly one of --gold, --empty, --predictions FILE")
    if excuse_base_failures and base_failures == "strict":
        raise fail("--excuse-base-failures is --base-failures all: give one of them")
    policy = "all" if excuse_base_failures else base_failures
    runs, cache = where(home, runs_dir, cache_dir)
    config = executor_config(executor, address, task_cpus, task_memory)
    if unsafe:
        console.print(
            "[bold red on white] UNSAFE [/] tests run as plain processes with this user's rights:"
            " a submitted patch can read, write and reach anything you can. Use only on a"
            " throw-away machine without user namespaces."
        )
    # A Ray cluster takes seconds to start or join: say what the wait is.
    waiting = console.status("connecting to Ray…") if config.remote and not quiet else nullcontext()
    try:
        with waiting:
            ev = open_evaluation(
                demos[0] if demos else str(dataset),
                "gold" if gold else "empty" if empty else list(predictions or []),
                run_id=run_id,
                split=split,
                instance_ids=instance_ids,
                runs_dir=runs,
                cache_dir=cache,
                repos_dir=repos_dir,
                workers=workers,
                timeout_s=timeout,
                test_limit_s=test_limit,
                unsafe=unsafe,
                python_dirs=python_dir or [],
                sources_dir=sources_dir,
                keep_test_infra=keep_test_infra,
                base_failures=policy,
                executor=config,
                add_to_run=add_to_run,
            )
    except EvalInputError as exc:
        raise fail(str(exc)) from None
    with ev:
        if ev.executor is not None and not quiet:
            console.print(
                f"[bold]ray[/]: {ev.executor.describe()}", highlight=False, soft_wrap=True
            )
        show_record_errors(ev.record_errors)
        interrupted = _run(ev, force=force, retry_errors=retry_errors, quiet=quiet)
        verdicts = ev.verdicts()
        if not quiet:
            _show_verdicts(ev.run_id, verdicts)
        report = ev.write_report()
        excused = report["swebounty"].get("excused") or {}
        with_excuse = (
            f" ({excused['resolved_with_excuse']} with excused base failures, --base-failures "
            f"{excused['policy']})"
            if excused.get("resolved_with_excuse")
            else ""
        )
        out.print(
            f"resolved {report['resolved_instances']}/{report['total_instances']}{with_excuse}"
            f" · report: {ev.report_path}",
            highlight=False,
            soft_wrap=True,
        )
        show_task_defects(report["task_defects"])
        if report["misses"] and not quiet:
            out.print(_misses_table(report["misses"]))
        _show_limitations(verdicts)
        if unsafe:
            console.print("[bold red]This run was NOT sandboxed (--unsafe).[/]")
        if interrupted:
            missing = len(ev.pairs) - len({(v.instance_id, v.attempt) for v in verdicts})
            console.print(
                f"[bold yellow]interrupted[/]: {missing} attempt(s) without a verdict; "
                "run the same command again to resume"
            )
            raise typer.Exit(130)


def _run(ev: Evaluation, *, force: bool, retry_errors: bool, quiet: bool) -> bool:
    """Evaluate what is pending with a progress bar; True if Ctrl-C interrupted it."""
    counts: dict[str, int] = {}
    bars = progress(fields="{task.fields[counts]}", disable=quiet)
    with bars:
        bar = bars.add_task(
            f"eval {ev.run_id}",
            total=ev.pending(force=force, retry_errors=retry_errors),
            counts="",
        )

        def on_verdict(v: Verdict) -> None:
            counts[v.status] = counts.get(v.status, 0) + 1
            text = " ".join(f"[{STATUS_STYLE[k]}]{k} {n}[/]" for k, n in sorted(counts.items()))
            bars.update(bar, advance=1, counts=text)

        try:
            ev.run(force=force, retry_errors=retry_errors, on_verdict=on_verdict)
        except KeyboardInterrupt:
            return True
    return False


def _misses_table(misses: list[dict[str, Any]]) -> Table:
    """Every verdict not resolved, by class (report.json: misses), a few ids each."""
    from rich.table import Table

    table = Table(title="not resolved, by class", title_justify="left")
    table.add_column("class")
    table.add_column("tasks", justify="right")
    table.add_column("instances")
    for miss in misses:
        ids = miss["instances"]
        shown = ", ".join(ids[:4]) + (f", … (+{len(ids) - 4})" if len(ids) > 4 else "")
        table.add_row(escape(miss["class"]), str(miss["count"]), escape(shown))
    return table


def _show_verdicts(run_id: str, verdicts: list[Verdict]) -> None:
    table = _verdict_table(run_id, verdicts)
    reasons = _verdict_reasons(verdicts)
    if not reasons:
        table.caption = None
    out.print(table)
    for line in reasons:
        out.print(line, highlight=False)


def _show_limitations(verdicts: list[Verdict]) -> None:
    """Say which tasks the harness could not run: their `error` is not the submissions'."""
    limited = sorted({v.instance_id for v in verdicts if v.harness_limitation})
    if limited:
        out.print(
            f"[magenta]{len(limited)} task(s) the harness cannot run (harness limitation, not "
            f"the submission's failure):[/] {escape(', '.join(limited[:10]))}"
            + (f" and {len(limited) - 10} more" if len(limited) > 10 else ""),
            highlight=False,
            soft_wrap=True,
        )


def _verdict_table(run_id: str, verdicts: list[Verdict]) -> Table:
    from rich.table import Table

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
        # a resolve that needed an excuse, or on a task that cannot fail, says so
        explain = not v.resolved or v.excused_tests or v.task_defect
        first = v.reason.splitlines()[0] if v.reason and explain else ""
        # Escaped: a reason quotes what a submission controls (a refused patch's file name),
        # which rich would otherwise read as markup, or fail on.
        why = escape(first[:160]) if first != v.task_defect else ""
        if v.task_defect:  # said once, whole, whatever the reason's first line holds
            why = "; ".join(filter(None, [why, f"[yellow]{escape(v.task_defect)}[/]"]))
        if v.hack_flags:
            why = f"[yellow]hack flags: {', '.join(v.hack_flags)}[/] {why}"
        if why:
            lines.append(f"[bold]{v.instance_id}[/] ({v.status}): {why}")
    return lines


def runs_cmd(home: HomeOpt = None, runs_dir: RunsOpt = None) -> None:
    """List the runs in the store."""
    from rich.table import Table

    from swebounty.baseline import run_policy
    from swebounty.store import Store

    runs, _ = where(home, runs_dir, None)
    if not (runs / "runs.sqlite").is_file():
        out.print(f"no runs in {runs} yet: `swebounty eval` makes one")
        return
    store = Store.open(runs / "runs.sqlite")
    table = Table(title="runs")
    for col in ("run", "created", "dataset", "sandbox", "grading", "verdicts"):
        table.add_column(col)
    for run in store.runs():
        n = len(store.finished(run["run_id"]))
        sandbox = run["sandbox"] + (" [red](UNSAFE)[/]" if run["unsafe"] else "")
        config = run["config"] if isinstance(run["config"], dict) else {}
        grading = f"base failures {run_policy(config)}"
        table.add_row(
            run["run_id"], str(run["created_at"]), run["dataset"], sandbox, grading, str(n)
        )
    out.print(table)


def register(app: typer.Typer) -> None:
    """Mount the commands on the main `swebounty` app."""
    app.command("eval")(eval_cmd)
    app.command("runs")(runs_cmd)
