"""Commands `collect` and `validate` (and cli/seal.py's); `register(app)` mounts them."""

from __future__ import annotations

from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from swebounty.cli import funnel, seal
from swebounty.cli._common import (
    AddressOpt,
    CacheOpt,
    ExecutorOpt,
    HomeOpt,
    LogLevelOpt,
    QuietOpt,
    RunsOpt,
    TaskCpusOpt,
    TaskMemoryOpt,
    TestLimitOpt,
    VerboseOpt,
    console,
    executor_config,
    fail,
    parse_date,
    progress,
    setup_logging,
    where,
)

if TYPE_CHECKING:
    from rich.progress import Progress

    from swebounty.collect.github import GitHubClient
    from swebounty.collect.pipeline import CollectOptions
    from swebounty.collect.repolist import RepoSource

# The names of `collect.filters.FILTERS`, for --help without importing the filters (a test
# keeps the two equal).
FILTER_NAMES = ("binary", "problem_length", "patch_size", "leak", "error_message_only")
LIMIT_HELP = "only the first N candidates, one of each repository in turn (again: the same N)"


def _progress(quiet: bool = False) -> Progress:
    return progress(fields="{task.fields[last]}", disable=quiet)


def collect_cmd(
    since: Annotated[str, typer.Option(help="keep fixes and issues created on or after")],
    repos: Annotated[
        list[str] | None, typer.Argument(help="clone paths (git-only), or owner/name")
    ] = None,
    repo_list: Annotated[
        Path | None,
        typer.Option(
            "--repos",
            help="a file naming one repository a line: owner/name (clone in --repos-dir) "
            "or owner/name=CLONE",
        ),
    ] = None,
    repos_dir: Annotated[
        Path | None, typer.Option(help="folder of clones named owner__name, for --repos")
    ] = None,
    workers: Annotated[
        int, typer.Option(help="repositories mined at once (git-only; API mode: one)")
    ] = 1,
    output: Annotated[Path, typer.Option("-o", "--output", help="candidates JSONL")] = Path(
        "candidates.jsonl"
    ),
    until: Annotated[str | None, typer.Option(help="keep fixes landed before this date")] = None,
    repo_path: Annotated[
        Path | None, typer.Option(help="the local clone of a single owner/name REPO")
    ] = None,
    test_pattern: Annotated[
        list[str] | None, typer.Option(help="extra glob marking test files (repeatable)")
    ] = None,
    no_filter: Annotated[
        list[str] | None, typer.Option(help=f"switch a filter off: {', '.join(FILTER_NAMES)}")
    ] = None,
    hourly_rate: Annotated[float, typer.Option(help="USD per estimated hour")] = 100.0,
    allow_unlinked: Annotated[
        bool, typer.Option(help="API mode: keep PRs without a linked issue")
    ] = False,
    git_only: Annotated[
        bool, typer.Option(help="never call the API; owner/name=CLONE only names the repo")
    ] = False,
    no_direct_commits: Annotated[
        bool, typer.Option(help="git-only: mine merged PRs only, not direct fix commits")
    ] = False,
    home: HomeOpt = None,
    cache_dir: CacheOpt = None,
    max_wait: Annotated[float, typer.Option(help="longest rate-limit wait, seconds")] = 3700.0,
    fresh: Annotated[
        bool, typer.Option(help="start over instead of resuming from the output files")
    ] = False,
    picks: Annotated[
        bool,
        typer.Option(
            help="mine pick tasks instead: issues with 2+ pull requests (refs/pull/N/head), "
            "one of them merged"
        ),
    ] = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
    log_level: LogLevelOpt = None,
) -> None:
    """Mine fixes created in a date window into candidate tasks (resumable).

    With --picks, mine "pick the best proposal" tasks from competing pull requests instead.
    """
    from rich.table import Table

    from swebounty.collect.filters import FILTERS, FilterConfig
    from swebounty.collect.github import GitHubClient, GitHubError
    from swebounty.collect.mining import GitError
    from swebounty.collect.pipeline import CollectOptions, collect
    from swebounty.collect.pricing import PricingConfig
    from swebounty.collect.repolist import parse_repo_arg
    from swebounty.collect.split import SplitRules

    setup_logging(verbose, quiet, log_level)
    start = parse_date(since, "--since")
    end = parse_date(until, "--until") if until else None
    if end is not None and end <= start:
        raise fail("--until must be after --since")
    if workers < 1:
        raise fail(f"--workers must be 1 or more, not {workers}")
    if not repos and repo_list is None:
        raise fail("name the repositories: clone paths or owner/name, or --repos FILE")
    try:
        sources = [parse_repo_arg(r, repo_path, git_only=git_only) for r in repos or []]
        if repo_list is not None:
            sources += _listed_sources(repo_list, repos_dir, git_only=git_only)
    except (GitError, ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    rules = SplitRules()
    rules.test_globs += list(test_pattern or [])
    off = set(no_filter or [])
    if off - set(FILTERS):
        raise fail(f"unknown filter(s) {sorted(off - set(FILTERS))}; known: {', '.join(FILTERS)}")
    options = CollectOptions(
        since=start,
        until=end,
        rules=rules,
        filters=FilterConfig(enabled=[f for f in FILTERS if f not in off]),
        pricing=PricingConfig(hourly_rate=hourly_rate),
        direct_commits=not no_direct_commits,
        allow_unlinked=allow_unlinked,
    )
    client = None
    if any(s.api for s in sources):
        client = GitHubClient.from_env(
            cache_dir=where(home, None, cache_dir)[1] / "github", max_wait=max_wait
        )
    if picks:
        _collect_picks(sources, options, output, client)
        return
    with _progress(quiet) as bars:
        repo_bar = bars.add_task("repositories", total=len(sources), last="")
        bar = bars.add_task("fixes", total=None, last="")

        def on_fix(iid: str, outcome: str) -> None:
            bars.update(bar, advance=1, last=f"{iid}: {outcome}"[:70])

        def on_repo(repo: str, outcome: str) -> None:
            bars.update(repo_bar, advance=1, last=f"{repo}: {outcome}"[:70])

        try:
            summary = collect(
                sources,
                options,
                output,
                client=client,
                on_fix=on_fix,
                on_repo=on_repo,
                fresh=fresh,
                workers=workers,
            )
        except (GitHubError, GitError) as exc:
            partial = output.with_name(output.name + ".partial")
            raise fail(
                f"{exc}\nWhat was collected so far is in {partial}; "
                "re-run the same command to resume."
            ) from None
        finally:
            if client is not None:
                client.close()
    table = Table(title=f"collected {summary.candidates} candidates into {output}")
    table.add_column("outcome")
    table.add_column("fixes", justify="right")
    table.add_row("candidate", str(summary.candidates))
    for stage, n in summary.rejected.most_common():
        table.add_row(f"rejected: {stage}", str(n))
    if summary.resumed:
        table.add_row("already decided (resumed)", str(summary.resumed))
    console.print(table)
    for repo, why in summary.failed_repos.items():
        console.print(f"[red]✗ {repo}[/]: {why.splitlines()[0] if why else 'failed'}")
    if summary.failed_repos:
        console.print(
            f"{len(summary.failed_repos)} of {len(sources)} repositories failed; the others "
            "were collected. Fix them and re-run the same command: it tries them again."
        )


def _listed_sources(path: Path, repos_dir: Path | None, *, git_only: bool) -> list[RepoSource]:
    """The sources of a --repos file; a repository whose clone is missing is kept with its
    problem, so it is reported as failed while the others run."""
    from swebounty.collect.repolist import RepoSource, read_repo_list

    if not path.is_file():
        raise ValueError(
            f"{path} does not exist: write one owner/name (or owner/name=CLONE) a line"
        )
    return [
        RepoSource(line.clone or Path(), line.repo, api=not git_only, problem=line.problem)
        for line in read_repo_list(path, repos_dir)
    ]


def _collect_picks(
    sources: list[RepoSource], options: CollectOptions, output: Path, client: GitHubClient | None
) -> None:
    """`collect --picks`: pick tasks of every source into `output`, rejects beside it."""
    import json

    from swebounty.collect.github import GitHubError
    from swebounty.collect.mining import GitError
    from swebounty.collect.picks import mine_picks
    from swebounty.records import write_jsonl

    tasks, rejects = [], []
    try:
        for source in sources:
            found, rejected = mine_picks(
                source.path,
                repo=source.repo,
                since=options.since,
                until=options.until,
                client=client if source.api else None,
                pricing=options.pricing,
            )
            tasks += found
            rejects += rejected
    except (GitHubError, GitError) as exc:
        raise fail(str(exc)) from None
    finally:
        if client is not None:
            client.close()
    output.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(output, tasks)
    rejects_path = output.with_name(output.stem + ".rejects.jsonl")
    rejects_path.write_text("".join(json.dumps(r) + "\n" for r in rejects), encoding="utf-8")
    console.print(
        f"{len(tasks)} pick tasks into {output}; {len(rejects)} issues rejected ({rejects_path})"
    )
    if not tasks:
        console.print(
            "[yellow]no pick task: the clone needs GitHub's pull refs[/] "
            "(git fetch origin '+refs/pull/*/head:refs/pull/*/head')"
        )


def validate_cmd(
    candidates: Annotated[Path, typer.Argument(help="candidates JSONL from `collect`")],
    output: Annotated[Path, typer.Option("-o", "--output", help="validated tasks JSONL")] = Path(
        "tasks.jsonl"
    ),
    workers: Annotated[int, typer.Option(help="candidates validated in parallel")] = 1,
    runs: Annotated[int, typer.Option(help="runs before and after the patch")] = 3,
    prefetch_envs: Annotated[
        int, typer.Option(min=0, help="threads building next candidates' envs meanwhile")
    ] = 1,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
    task_cpus: TaskCpusOpt = 1.0,
    task_memory: TaskMemoryOpt = None,
    home: HomeOpt = None,
    cache_dir: CacheOpt = None,
    runs_dir: RunsOpt = None,
    repos_dir: Annotated[Path | None, typer.Option(help="local clones, owner__name")] = None,
    unsafe: Annotated[
        bool, typer.Option("--unsafe", help="run tests WITHOUT a sandbox (no user namespaces)")
    ] = False,
    timeout: Annotated[float, typer.Option(help="seconds allowed for one test run")] = 1800.0,
    test_limit: TestLimitOpt = None,
    python_dir: Annotated[
        list[Path] | None, typer.Option(help="extra folders to look for interpreters in")
    ] = None,
    retry_errors: Annotated[
        bool, typer.Option(help="retry candidates rejected for infrastructure errors")
    ] = False,
    fresh: Annotated[
        bool, typer.Option(help="start over instead of resuming from the output files")
    ] = False,
    max_f2p: Annotated[
        int, typer.Option(help="reject a task with more FAIL_TO_PASS tests (not one change)")
    ] = 40,
    limit: Annotated[int | None, typer.Option(min=1, help=LIMIT_HELP)] = None,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
    log_level: LogLevelOpt = None,
) -> None:
    """Run each candidate's tests before and after its reference patch; keep the valid ones.

    Prints the yield funnel (and writes it to <output stem>.funnel.json)."""
    from swebounty.cli.funnel import print_funnel
    from swebounty.collect.batch import interleave, validate
    from swebounty.collect.funnel import compute, decided, funnel_path
    from swebounty.collect.funnel import write as write_funnel
    from swebounty.collect.gates import Gates
    from swebounty.evalcontext import EvalContext
    from swebounty.executors import ExecutorError, open_executor
    from swebounty.tasks import load_tasks

    setup_logging(verbose, quiet, log_level)
    config = executor_config(executor, address, task_cpus, task_memory)
    if not candidates.exists():
        raise fail(f"{candidates} does not exist: run `swebounty collect` first")
    if workers < 1:
        raise fail(f"--workers must be 1 or more, not {workers}")
    if repos_dir is not None and not repos_dir.is_dir():
        raise fail(f"repos dir {repos_dir} does not exist: give the folder holding your clones")
    runs_at, cache = where(home, runs_dir, cache_dir)
    tasks, errors = load_tasks(candidates)
    for err in errors[:20]:
        console.print(f"[yellow]skipped[/] {err.source} {err.where}: {err.message}")
    if not tasks:
        raise fail(f"{candidates} holds no candidate")
    every, tasks = tasks, interleave(tasks)[:limit] if limit else tasks  # records: all kept
    if unsafe:
        console.print("[bold red]--unsafe: candidate code runs with no isolation[/]")
    ctx = EvalContext.create(
        cache_dir=cache, runs_dir=runs_at, repos_dir=repos_dir, workers=workers,
        sandbox="unsafe" if unsafe else "bwrap", timeout_s=timeout, test_limit_s=test_limit,
        python_dirs=python_dir or (),
    )  # fmt: skip
    try:
        with console.status("connecting to Ray…") if config.remote else nullcontext():
            remote = open_executor(config, ctx, workers=workers)
    except (ExecutorError, ImportError) as exc:
        ctx.close()
        raise fail(str(exc)) from None
    if remote is not None and not quiet:
        console.print(f"[bold]ray[/]: {remote.describe()}", highlight=False, soft_wrap=True)
    repo_of = {t.instance_id: t.repo for t in tasks}
    done_before = set() if fresh else decided(output, retrying_infra=retry_errors)
    left = Counter(repo for iid, repo in repo_of.items() if iid not in done_before)
    n_repos = len(set(repo_of.values()))
    with ctx, _progress(quiet) as bars, remote or nullcontext():
        repo_bar = bars.add_task(
            "repositories", total=n_repos, completed=n_repos - len(left), last=""
        )
        bar = bars.add_task("candidates", total=len(tasks), last="")

        def on_done(iid: str, outcome: str) -> None:
            bars.update(bar, advance=1, last=f"{iid}: {outcome}"[:70])
            repo = repo_of.get(iid, "")
            left[repo] -= 1
            if left[repo] == 0:
                bars.update(repo_bar, advance=1, last=repo)

        summary = validate(
            every,
            output,
            ctx,
            runs=runs,
            workers=workers,
            retry_errors=retry_errors,
            on_done=on_done,
            fresh=fresh,
            executor=remote,
            gates=Gates(max_fail_to_pass=max_f2p),
            prefetch=prefetch_envs,
            limit=limit,
        )
        bars.update(bar, completed=len(tasks))
    console.print(
        f"{summary.valid} valid of {summary.candidates - summary.resumed} validated "
        f"({summary.resumed} decided before) in {summary.seconds:.0f} s -> {output}; "
        f"rejected: {summary.rejected or 'none'}"
    )
    numbers = compute(candidates, output)
    numbers["last_run"] = summary.as_dict()
    write_funnel(numbers, funnel_path(output))
    if not quiet:
        print_funnel(numbers)
    console.print(f"funnel -> {funnel_path(output)}")


def register(app: typer.Typer) -> None:
    """Mount the commands on the main `swebounty` app."""
    app.command("collect")(collect_cmd)
    app.command("validate")(validate_cmd)
    seal.register(app)
    funnel.register(app)
