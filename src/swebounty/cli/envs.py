"""Commands `envs list|build|prune`: the environment cache from the command line."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from swebounty.cli._common import (
    CacheOpt,
    HomeOpt,
    LogLevelOpt,
    QuietOpt,
    RunsOpt,
    SourcesOpt,
    VerboseOpt,
    fail,
    load_dataset,
    out,
    progress,
    setup_logging,
    show_record_errors,
    where,
)

envs_app = typer.Typer(
    help="The environment cache: list, build ahead of a run, prune.", rich_markup_mode=None
)


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)


@envs_app.command("list")
def envs_list(home: HomeOpt = None, cache_dir: CacheOpt = None) -> None:
    """Every built environment with its interpreter, build time and size on disk."""
    from rich.table import Table

    from swebounty.envs import EnvManager

    _, cache = where(home, None, cache_dir)
    manager = EnvManager(cache / "envs")
    table = Table(title=f"environments in {cache}")
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
    _list_node(cache / "node")


def _list_node(root: Path) -> None:
    """Node environments (one node_modules per lockfile), when there are any."""
    from rich.table import Table

    from swebounty.envs.node_build import NodeCache

    if not (root / "envs").is_dir():
        return
    found = NodeCache(root).list()
    if not found:
        return
    table = Table(title=f"Node environments in {root}")
    for col in ("key", "node", "installer", "build s", "on disk"):
        table.add_column(col, no_wrap=col == "key")
    for env in found:
        installer = Path(env.manager_cli[-1]).parts[-3] if env.manager_cli else env.manager
        table.add_row(env.key, env.node_version, installer, f"{env.build_seconds:.1f}",
                      _size(env.size_bytes))  # fmt: skip
    out.print(table)


@envs_app.command("build")
def envs_build(
    dataset: Annotated[str, typer.Argument(help="tasks file, 'demo', or a Hugging Face name")],
    instance_ids: Annotated[
        list[str] | None, typer.Option("--instance-id", "-i", help="only these task ids")
    ] = None,
    repos_dir: Annotated[Path | None, typer.Option(help="folder of clones")] = None,
    home: HomeOpt = None,
    cache_dir: CacheOpt = None,
    python_dir: Annotated[list[Path] | None, typer.Option(help="extra interpreter folders")] = None,
    sources_dir: SourcesOpt = None,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
    log_level: LogLevelOpt = None,
) -> None:
    """Build (or find cached) the environment of every task, ahead of a run."""
    from rich.table import Table

    from swebounty.envs import EnvBuildError
    from swebounty.evalcontext import EvalContext
    from swebounty.frameworks import FrameworkError, resolve
    from swebounty.repos import RepoError

    setup_logging(verbose, quiet, log_level)
    runs, cache = where(home, None, cache_dir)
    if repos_dir is not None and not repos_dir.is_dir():
        raise fail(f"repos dir {repos_dir} does not exist: give the folder holding your clones")
    try:
        tasks, errors, demo_repos = load_dataset(dataset, cache)
    except (FileNotFoundError, ValueError, ImportError) as exc:
        raise fail(str(exc)) from None
    show_record_errors(errors)
    if instance_ids:
        unknown = set(instance_ids) - {t.instance_id for t in tasks}
        if unknown:
            raise fail(f"no task named {', '.join(sorted(unknown))} in {dataset}")
        tasks = [t for t in tasks if t.instance_id in set(instance_ids)]
    if not tasks:
        raise fail(f"dataset {dataset} holds no task")
    ctx = EvalContext.create(
        cache_dir=cache,
        runs_dir=runs,
        repos_dir=repos_dir or demo_repos,
        sandbox="none",  # building runs nothing of the tasks' code
        python_dirs=python_dir or [],
        sources_dir=sources_dir,
    )
    table = Table(title="environments")
    for col in ("task", "env", "runtime", "s", "problem"):
        table.add_column(col, overflow="fold")
    failed = 0
    with ctx, progress(disable=quiet) as bars:
        bar = bars.add_task("build environments", total=len(tasks))
        for task in tasks:
            bars.update(bar, description=task.instance_id)
            try:
                task, framework = resolve(task, ctx)
                env, runtime = framework.runtime(task, ctx)
                key, seconds = env.key[:16], env.build_seconds
                table.add_row(task.instance_id, key, runtime, f"{seconds:.1f}", "")
            except (RepoError, EnvBuildError, FrameworkError) as exc:
                failed += 1
                table.add_row(task.instance_id, "-", "-", "-", str(exc).splitlines()[0])
            bars.advance(bar)
    if not quiet:
        out.print(table)
    out.print(f"{len(tasks) - failed}/{len(tasks)} environments ready")
    if failed:
        raise typer.Exit(1)


@envs_app.command("prune")
def envs_prune(
    keep_run: Annotated[
        list[str] | None, typer.Option(help="keep the environments this run's verdicts used")
    ] = None,
    all_envs: Annotated[bool, typer.Option("--all", help="remove every environment")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "-n", help="list what would go; delete nothing")
    ] = False,
    home: HomeOpt = None,
    runs_dir: RunsOpt = None,
    cache_dir: CacheOpt = None,
) -> None:
    """Remove cached environments: all of them, or all but those some runs used.

    Lists what it deletes. A run it does not know is an error, and nothing is deleted.
    """
    from swebounty import safefs
    from swebounty.bytecode import cache_tag
    from swebounty.envs import EnvManager
    from swebounty.store import Store

    if not keep_run and not all_envs:
        raise fail("say what to keep: --keep-run RUN_ID (repeatable), or --all to remove all")
    if keep_run and all_envs:
        raise fail("--keep-run and --all contradict each other: give one")
    runs, cache = where(home, runs_dir, cache_dir)
    keep_keys: set[str] | None = None
    if keep_run:
        db = runs / "runs.sqlite"
        if not db.is_file():
            raise fail(f"no runs in {runs} (no runs.sqlite), so no run {keep_run[0]!r} to keep")
        with Store.open(db) as store:
            known = {r["run_id"] for r in store.runs()}
            unknown = [r for r in keep_run if r not in known]
            if unknown:
                raise fail(
                    f"no run {', '.join(map(repr, unknown))} in {runs}; nothing deleted "
                    f"(runs there: {', '.join(sorted(known)) or 'none'})"
                )
            verdicts = [v for r in keep_run for v in store.verdicts(r)]
            # the tests' environments, and those of the test services that ran beside them
            keep_keys = {v.env_key for v in verdicts if v.env_key}
            keep_keys |= {s.env_key for v in verdicts for s in v.services if s.env_key}
    manager = EnvManager(cache / "envs")
    node = None
    if (cache / "node" / "envs").is_dir():
        from swebounty.envs.node_build import NodeCache

        node = NodeCache(cache / "node")
    # (key, what) of everything that goes, listed before anything is deleted.
    found = [(e.key, f"{e.key[:16]} python {e.interpreter}", e.size_bytes) for e in manager.list()]
    if node is not None:
        found += [(e.key, f"{e.key} node {e.node_version}", e.size_bytes) for e in node.list()]
    doomed = [
        (what, size) for key, what, size in found if keep_keys is None or key not in keep_keys
    ]
    # The bytecode cache (bytecode.py) of each interpreter no kept environment uses.
    kept_tags = {
        cache_tag(e.interpreter, e.interpreter_executable)
        for e in manager.list()
        if keep_keys is not None and e.key in keep_keys
    }
    stores = sorted((cache / "bytecode").iterdir()) if (cache / "bytecode").is_dir() else []
    stale = [p for p in stores if p.name not in kept_tags and p.is_dir() and not p.is_symlink()]
    gone = len(doomed)  # environments; the bytecode caches are listed with them
    doomed += [(f"bytecode cache {p.name}", _tree_bytes(p)) for p in stale]
    verb = "would remove" if dry_run else "removing"
    for what, size in doomed:
        out.print(f"{verb} {what} ({_size(size)})")
    kept = len(found) - gone
    if dry_run:
        out.print(f"dry run: {gone} environment(s) would go, {kept} kept; nothing deleted")
        return
    freed = manager.prune(keep_keys)
    if node is not None:
        freed += node.prune(keep_keys)
    for path in stale:
        freed += _tree_bytes(path)
        safefs.remove_tree(path)
    out.print(f"removed {gone} environment(s), kept {kept}; freed {_size(freed)}")


def _tree_bytes(root: Path) -> int:
    """Bytes of the regular files under `root` (links not followed)."""
    return sum(os.lstat(os.path.join(d, f)).st_size for d, _, files in os.walk(root) for f in files)


def register(app: typer.Typer) -> None:
    """Mount the `envs` group on the main `swebounty` app."""
    app.add_typer(envs_app, name="envs")
