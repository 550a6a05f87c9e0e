"""Command `run`: run an agent on a dataset, k attempts per task, and grade every attempt."""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from swebounty.cli._common import (
    AddressOpt,
    BaseFailuresOpt,
    CacheOpt,
    ExecutorOpt,
    HomeOpt,
    RunsOpt,
    SourcesOpt,
    TaskCpusOpt,
    TaskMemoryOpt,
    TestLimitOpt,
    console,
    executor_config,
    fail,
    load_dataset,
    out,
    progress,
    setup_logging,
    show_record_errors,
    where,
)
from swebounty.cli._run_output import attempts_table, print_summary
from swebounty.cli.evaluate import STATUS_STYLE

if TYPE_CHECKING:
    from swebounty.tasks import Attempt
    from swebounty.verdicts import Verdict

AGENT_HELP = (
    "gold, predictions, command, llm, mini-swe-agent or aider (installed from PyPI), or a "
    "dotted path to an Agent class"
)


def _options(
    name: str,
    *,
    command: str | None,
    mounts: list[Path],
    model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    max_steps: int | None,
    max_tokens: int | None,
    max_cost: float | None,
    temperature: float | None,
    predictions: list[Path],
    extra: list[str],
) -> dict[str, Any]:
    """The agent's options from the flags given (its config model validates them)."""
    given: dict[str, Any] = {
        "command": command,
        "mounts": [str(m.resolve()) for m in mounts] or None,
        "model": model,
        "base_url": base_url,
        "api_key_env": api_key_env,
        "max_steps": max_steps,
        "max_tokens": max_tokens,
        "max_cost_usd": max_cost,
        "temperature": temperature,
        "paths": [str(p.resolve()) for p in predictions] or None,
    }
    options = {k: v for k, v in given.items() if v is not None}
    if name == "llm":
        options.pop("mounts", None)
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep:
            raise fail(f"--option {item!r}: write KEY=VALUE (VALUE as JSON, or a plain string)")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


def hidden_overlap(mounts: list[Path], hidden: list[Path]) -> list[str]:
    """Mounts that would show the agent something hidden: a hidden path, or a folder holding
    one (the dataset, the runs dir with the store, the mirrors with future history)."""
    problems = []
    for mount in mounts:
        m = mount.resolve()
        for h in hidden:
            if h.resolve().is_relative_to(m) or m.is_relative_to(h.resolve()):
                problems.append(f"{mount} would show the agent {h}")
    return problems


def run_cmd(
    dataset: Annotated[
        str | None, typer.Argument(help="tasks: SWE-bench .json/.jsonl/.parquet")
    ] = None,
    demo: Annotated[bool, typer.Option("--demo", help="use the bundled demo tasks")] = False,
    agent: Annotated[str, typer.Option(help=AGENT_HELP)] = "llm",
    attempts: Annotated[int, typer.Option(min=1, help="attempts per task (pass@k)")] = 1,
    run_id: Annotated[
        str | None, typer.Option(help="name of the run (resumes if it exists)")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="attempts run at once")] = 1,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
    task_cpus: TaskCpusOpt = 1.0,
    task_memory: TaskMemoryOpt = None,
    instance_ids: Annotated[
        list[str] | None, typer.Option("--instance-id", "-i", help="only these task ids")
    ] = None,
    time_limit: Annotated[
        float, typer.Option(help="seconds one attempt's agent may take (wall clock)")
    ] = 1800.0,
    hints: Annotated[
        bool, typer.Option(help="give the agent the task's hints (pre-fix discussion)")
    ] = False,
    command: Annotated[
        str | None, typer.Option(help="command agent: the shell command run in the sandbox")
    ] = None,
    mount: Annotated[
        list[Path] | None,
        typer.Option(help="command agent: a path it needs, mounted read-only (repeatable)"),
    ] = None,
    model: Annotated[str | None, typer.Option(help="the model's name at the endpoint")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint ending in /v1")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="environment variable holding the endpoint's API key")
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option(help="llm agent: model calls per attempt")
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(help="budget: tokens (in + out) per attempt, enforced at the model proxy"),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            help="budget: dollars per attempt (SWE-Lancer's price limit); the model needs a "
            "price (--prices); past it the model is refused and the attempt stops ('budget')"
        ),
    ] = None,
    temperature: Annotated[float | None, typer.Option(help="llm agent: sampling")] = None,
    predictions: Annotated[
        list[Path] | None, typer.Option("--predictions", "-p", help="predictions agent: files")
    ] = None,
    option: Annotated[
        list[str] | None, typer.Option(help="any agent option, KEY=VALUE (repeatable)")
    ] = None,
    prices: Annotated[
        Path | None, typer.Option(help="price table (TOML) added to the built-in one")
    ] = None,
    weights: Annotated[
        list[Path] | None,
        typer.Option(help="the model's weight files: their sha256 goes in the provenance"),
    ] = None,
    code_url: Annotated[
        str | None, typer.Option(help="where the agent's code is published (open code)")
    ] = None,
    model_cutoff: Annotated[
        str | None, typer.Option(help="the model's training cutoff (YYYY-MM-DD)")
    ] = None,
    repos_dir: Annotated[
        Path | None, typer.Option(help="folder of clones named owner__name or owner/name")
    ] = None,
    home: HomeOpt = None,
    runs_dir: RunsOpt = None,
    cache_dir: CacheOpt = None,
    timeout: Annotated[float, typer.Option(help="seconds allowed for one task's tests")] = 1800.0,
    test_limit: TestLimitOpt = None,
    force: Annotated[bool, typer.Option(help="redo attempts the run already has")] = False,
    unsafe: Annotated[
        bool, typer.Option("--unsafe", help="run agents and tests WITHOUT a sandbox")
    ] = False,
    python_dir: Annotated[
        list[Path] | None, typer.Option(help="extra folders to look for interpreters in")
    ] = None,
    sources_dir: SourcesOpt = None,
    base_failures: BaseFailuresOpt = "network",
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run an agent on every task, k attempts each, sandboxed; store and grade each attempt.

    Resumable: the same command again skips every graded attempt (--force redoes them).
    """
    from datetime import date

    from pydantic import ValidationError

    from swebounty.agents import agent_class, create_agent
    from swebounty.agents.installed import AgentInstallError
    from swebounty.agents.prices import load_prices, price_for
    from swebounty.agents.provenance import build_provenance
    from swebounty.attempts import AttemptOptions, run_agent
    from swebounty.evalcontext import EvalContext
    from swebounty.evalinputs import run_conflict
    from swebounty.executors import ExecutorError, open_executor
    from swebounty.store import Store, check_run_id
    from swebounty.summary import run_report, write_run_report

    setup_logging(verbose)
    if demo == (dataset is not None):
        raise fail("give a DATASET or --demo (one of them)")
    executor_cfg = executor_config(executor, address, task_cpus, task_memory)
    if run_id is not None:
        try:
            check_run_id(run_id)
        except ValueError as exc:
            raise fail(str(exc)) from None
    if repos_dir is not None and not repos_dir.is_dir():
        raise fail(f"repos dir {repos_dir} does not exist: give the folder holding your clones")
    runs_dir, cache_dir = where(home, runs_dir, cache_dir)
    name = "demo" if demo else str(dataset)
    try:
        tasks, errors, demo_repos = load_dataset(name, cache_dir)
    except (FileNotFoundError, ValueError, ImportError) as exc:
        raise fail(str(exc)) from exc
    if not tasks:
        raise fail(f"dataset {name} holds no task")
    if instance_ids:
        unknown = set(instance_ids) - {t.instance_id for t in tasks}
        if unknown:
            raise fail(f"no task named {', '.join(sorted(unknown))} in {name}")
        tasks = [t for t in tasks if t.instance_id in set(instance_ids)]
    options = _options(
        agent,
        command=command,
        mounts=mount or [],
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        max_steps=max_steps,
        max_tokens=max_tokens,
        max_cost=max_cost,
        temperature=temperature,
        predictions=predictions or [],
        extra=option or [],
    )
    try:
        if getattr(agent_class(agent), "installs", False):
            # An installed agent's environment: cached beside the task environments.
            options.setdefault("agents_dir", str(cache_dir / "agents"))
        price_table = load_prices(prices)
        if max_cost is not None:
            # The budget is counted at the proxy, in the model's own price.
            price = price_for(model or "", price_table)
            if price is None:
                raise ValueError(
                    f"--max-cost needs the price of model {model!r}: add it to a price table "
                    '(TOML, [models."NAME"] input/output in USD per million tokens) and pass '
                    "--prices FILE"
                )
            options["price"] = price.model_dump()
        the_agent = create_agent(agent, options, tasks)
        cutoff = date.fromisoformat(model_cutoff) if model_cutoff else None
    except (ValidationError, ValueError, OSError, AgentInstallError) as exc:
        raise fail(f"agent {agent}: {exc}") from exc
    if api_key_env and api_key_env not in os.environ:
        raise fail(f"--api-key-env {api_key_env}: that variable is not set")
    # Nothing the agent mounts may show it the store, the mirrors (future history) or the data.
    hidden = [runs_dir, cache_dir]
    hidden += [Path(name)] if not demo else []
    hidden += [repos_dir] if repos_dir else []
    # The folders of the files a task's tests read (SWE-Lancer's issues/<id>/: flows and tests).
    hidden += sorted({Path(f).parent for t in tasks if t.requires for f in t.requires.data_files})
    mounts: list[Path] = getattr(the_agent, "mounts", list)()
    if problems := hidden_overlap(mounts, hidden):
        raise fail("; ".join(problems) + ": mount only the agent's own code")
    if run_id is None:
        from swebounty.evaluation import default_run_id

        run_id = default_run_id(name if demo else str(Path(name).resolve()), agent)
    if unsafe:
        console.print(
            "[bold red on white] UNSAFE [/] agents and tests run as plain processes with this "
            "user's rights, with the network, the dataset and the store in reach."
        )
    try:
        ctx = EvalContext.create(
            cache_dir=cache_dir,
            runs_dir=runs_dir,
            repos_dir=repos_dir or demo_repos,
            sandbox="unsafe" if unsafe else "bwrap",
            workers=workers,
            timeout_s=timeout,
            test_limit_s=test_limit,
            python_dirs=python_dir or [],
            base_failures=base_failures,
            sources_dir=sources_dir,
        )
    except RuntimeError as exc:
        raise fail(str(exc)) from exc
    try:
        with console.status("connecting to Ray…") if executor_cfg.remote else nullcontext():
            remote = open_executor(executor_cfg, ctx, workers=workers)
    except (ExecutorError, ImportError) as exc:
        ctx.close()
        raise fail(str(exc)) from None
    if remote is not None:
        console.print(f"[bold]ray[/]: {remote.describe()}", highlight=False, soft_wrap=True)
    provenance = build_provenance(
        the_agent.provenance(),
        sandbox=ctx.sandbox.name,
        isolated=ctx.sandbox.isolated,
        weights=weights or [],
        code_url=code_url,
        model_cutoff=cutoff,
    )
    ctx.runs_dir.mkdir(parents=True, exist_ok=True)
    store = Store.open(ctx.runs_dir / "runs.sqlite")
    label = name if demo else str(Path(name).resolve())
    if problem := run_conflict(store, run_id, label, ctx.base_failures):
        if remote is not None:
            remote.close()
        raise fail(problem)
    config = {"kind": f"agent:{agent}", "agent": agent, "options": options,
              "attempts": attempts, "time_limit": time_limit, "timeout": timeout,
              "hints": hints, "repos_dir": str(ctx.repos_dir or ""),
              "base_failures": ctx.base_failures,
              "executor": executor_cfg.model_dump(exclude_defaults=True)
              | {"kind": executor_cfg.kind}}  # fmt: skip
    store.ensure_run(
        run_id,
        dataset=label,
        config=config,
        sandbox=ctx.sandbox.name,
        unsafe=unsafe,
    )
    store.save_provenance(run_id, provenance.model_dump(mode="json"))
    for err in errors:
        store.add_record_error(run_id, err)
    show_record_errors(errors)

    ids = {t.instance_id for t in tasks}
    graded = {(v.instance_id, v.attempt) for v in store.verdicts(run_id) if v.status != "error"}
    total = len(tasks) * attempts
    todo = (
        total if force else sum((i, n) not in graded for i in ids for n in range(1, attempts + 1))
    )
    if todo < total:
        console.print(f"resuming {run_id}: {total - todo} of {total} attempts already graded")
    counts: dict[str, int] = {}
    opts = AttemptOptions(time_limit_s=time_limit, hints=hints, prices=price_table)
    with progress(fields="{task.fields[counts]}") as bars:
        bar = bars.add_task(f"run {run_id}", total=todo, counts="")

        def on_attempt(attempt: Attempt, verdict: Verdict) -> None:
            counts[verdict.status] = counts.get(verdict.status, 0) + 1
            text = " ".join(f"[{STATUS_STYLE[k]}]{k} {n}[/]" for k, n in sorted(counts.items()))
            bars.update(bar, advance=1, counts=text)

        try:
            run_agent(run_id, tasks, the_agent, ctx, store, attempts=attempts, workers=workers,
                      force=force, opts=opts, on_attempt=on_attempt, executor=remote)  # fmt: skip
        finally:
            if remote is not None:
                remote.close()

    verdicts = [v for v in store.verdicts(run_id) if v.instance_id in ids]
    stored = {(a.instance_id, a.attempt): a for a in store.attempts(run_id)}
    out.print(attempts_table(run_id, verdicts, stored))
    report = run_report(
        run_id,
        tasks,
        [s for s in store.submissions(run_id) if s.instance_id in ids],
        verdicts,
        store.record_errors(run_id),
        sandbox=ctx.sandbox.name,
        unsafe=unsafe,
        provenance=provenance.model_dump(mode="json"),
    )
    write_run_report(ctx.runs_dir / run_id / "report.json", report)
    store.close()
    print_summary(run_id, report, ctx.runs_dir / run_id / "report.json")
    if unsafe:
        console.print("[bold red]This run was NOT sandboxed (--unsafe).[/]")


def register(app: typer.Typer) -> None:
    """Mount the command on the main `swebounty` app."""
    app.command("run")(run_cmd)
