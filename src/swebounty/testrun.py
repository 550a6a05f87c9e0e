"""Running a task's hidden tests against a patch, once: the step under every verdict.

`run_tests` makes a fresh workspace at the base commit, applies the patch, removes compiled
files it added, resets the test patch's files and the test infrastructure to the base
(integrity.py), applies the hidden tests, and runs them in the sandbox through the guarded
runner (pytest_guard/): the install step, if any, and pytest run in one sandboxed process
tree whose writes land in a bounded scratch area; results come back on the harness's channel,
never from a file. Whatever the patch does, it comes back as data:
- `patch_error`: the patch does not apply;
- `failure`: the submission broke the run (tampered with the reporting): graded `unresolved`,
  with a flag;
- `error`: the harness or the task could not run the tests, or the run crashed, hung or lost
  its results (`crash`: baseline.py decides whose fault that was from the unpatched base's run).
Cleanup never recurses into the sandbox's leftovers and never replaces any of these.
"""

from __future__ import annotations

import logging
import time
import uuid
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Protocol

from swebounty import bytecode, fontcache, pristine, safefs
from swebounty.diffs import PatchError, files_in_patch
from swebounty.ecosystems import EcosystemError
from swebounty.ecosystems import resolve as resolve_ecosystem
from swebounty.envs import EnvBuildError, Environment, EnvManager, TaskEnv
from swebounty.grading import unusable
from swebounty.integrity import (
    IntegrityError,
    revert_test_infra,
    revert_test_paths,
    strip_compiled,
)
from swebounty.patches import apply_patch, reset_files
from swebounty.pristine import linked_workspace
from swebounty.pytest_guard import (
    GUARD_DIR,
    ChannelTampered,
    disagreements,
    new_key,
    read_channel,
    runner_argv,
    runner_config,
    split_prefix,
    write_config,
)
from swebounty.pytest_guard.compiled import compiled_runner
from swebounty.remover import remove_trees
from swebounty.repos import RepoError, commit_date, ensure_mirror, make_workspace
from swebounty.sandbox import Sandbox, SandboxError
from swebounty.sandbox.base import Mount, Policy, RunResult
from swebounty.services.catalog import ServiceError, declared
from swebounty.services.models import ServiceUse
from swebounty.services.runtime import StandIns, build, shipped_catalog
from swebounty.tasks import Task
from swebounty.testing import JUnitError, TestOutcome, parse_junit_bytes, relocated, test_files
from swebounty.workdirs import PACK_CACHE, memory_place, tree_size

log = logging.getLogger(__name__)

# Files whose change by a submission can legitimately break the per-task install: then a failed
# install is the submission's doing, not an infrastructure error.
BUILD_FILES = ("setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in")
JUNIT_IN_SANDBOX = "/tmp/swebounty-junit.xml"  # the sandbox's private /tmp


class RunContext(Protocol):
    """What running tests needs from an evaluation context (evalcontext.EvalContext has it)."""

    cache_dir: Path
    repos_dir: Path | None
    envs: EnvManager
    policy: Policy
    work_dir: Path
    memory_dir: Path | None
    keep_test_infra: bool

    def lease(self) -> AbstractContextManager[Sandbox]: ...


@dataclass
class TestRun:
    """What running a task's tests once gave."""

    __test__ = False

    outcomes: dict[str, TestOutcome] = field(default_factory=dict)
    exit_code: int | None = None
    patch_method: str | None = None
    patch_error: str | None = None
    error: str | None = None
    failure: str | None = None
    flags: list[str] = field(default_factory=list)
    test_infra_reverted: list[str] = field(default_factory=list)
    env_key: str | None = None
    test_files: list[str] = field(default_factory=list)
    timed_out: bool = False
    seconds: float = 0.0
    cleanup_error: str | None = None
    problem: str | None = None  # Node tasks: the exit code and the results disagree
    crash: str | None = None  # the run gave no usable results (whose fault: baseline.attribute)
    services: list[ServiceUse] = field(default_factory=list)  # test services that stood in


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="replace")


def run_tests(task: Task, patch: str, ctx: RunContext, log_dir: Path) -> TestRun:
    """Apply `patch` and the hidden tests to a fresh workspace and run them in the sandbox.

    Never raises for problems of the task, the patch or the infrastructure (see the module
    docstring). A run that crashed, hung or lost its results is an `error` with `crash` set:
    `baseline.attribute` compares it with the unpatched base's run to say whose fault it was.
    """
    start = time.monotonic()
    log_dir.mkdir(parents=True, exist_ok=True)
    _write(log_dir / "patch.diff", patch)
    expected = task.FAIL_TO_PASS + task.PASS_TO_PASS
    result = TestRun(test_files=test_files(task.test_patch, expected=expected))
    scratch = ctx.work_dir / f"{task.instance_id}-{uuid.uuid4().hex[:8]}"
    crash: str | None = None
    try:
        task = resolve_ecosystem(task, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir)
        crash = _run_tests_in(task, patch, ctx, log_dir, scratch, result)
    except (
        RepoError, EcosystemError, EnvBuildError, SandboxError, IntegrityError, ServiceError
    ) as exc:  # fmt: skip
        result.error = str(exc)
    except Exception as exc:  # a harness bug must not take the run down with it
        cancelled = getattr(ctx, "cancelled", None)  # EvalContext's, set by Ctrl-C
        if cancelled is not None and cancelled.is_set():
            # a step cut short by Ctrl-C (its tools got SIGINT too): expected, not a bug
            log.info("%s: stopped by the interruption (%s)", task.instance_id, exc)
        else:
            log.exception("evaluating %s failed", task.instance_id)
        result.error = f"harness error: {type(exc).__name__}: {exc}"
    finally:
        # Never recursive, never raising: a tree the tests left cannot cost the verdict; off
        # the critical path, after the run, when the context has a remover (remover.py).
        trees = [scratch]
        if ctx.memory_dir is not None:  # the workspace, if it was made in memory
            trees.append(ctx.memory_dir / scratch.name)
        result.cleanup_error = remove_trees(getattr(ctx, "remover", None), trees, task.instance_id)
    if crash is not None:
        result.error = result.crash = crash
    result.seconds = time.monotonic() - start
    if result.error:
        _write(log_dir / "error.txt", result.error)
    return result


def _run_tests_in(
    task: Task, patch: str, ctx: RunContext, log_dir: Path, scratch: Path, result: TestRun
) -> str | None:
    """Returns why the run gave no usable result (to attribute), else None."""
    if task.ecosystem == "node":  # JavaScript/TypeScript: its own environments and runners
        from swebounty.node.evaluate import run_node_tests

        run_node_tests(task, patch, ctx, log_dir, scratch, result)
        return None
    # Leased first: a workspace in memory is linked from a checkout owned by its sandbox's uid.
    with ctx.lease() as sandbox:
        return _prepare_and_run(task, patch, ctx, sandbox, log_dir, scratch, result)


def _prepare_and_run(
    task: Task,
    patch: str,
    ctx: RunContext,
    sandbox: Sandbox,
    log_dir: Path,
    scratch: Path,
    result: TestRun,
) -> str | None:
    owner = getattr(sandbox, "workdir_owner", None)
    began = time.time()  # a file written since may not get a timestamp pyc (bytecode.py)
    workspace, env, when = _checkout(task, ctx, scratch, overlaid=True, owner=owner)
    result.env_key = env.key
    wanted = declared(ctx.envs.overrides, shipped_catalog(), task.repo, task.version, when)
    services = build(wanted, ctx.envs, scratch, tests_env=env.path)
    pyc = bytecode.prepare(
        ctx.cache_dir, env, workspace, lambda: nullcontext(sandbox), ctx.policy, scratch / "pyc"
    )
    try:
        result.patch_method = apply_patch(workspace, patch)
    except PatchError as exc:
        result.patch_error = str(exc)
        return None
    removed = strip_compiled(workspace, patch)
    if removed:
        log.info("%s: removed compiled files the patch added: %s", task.instance_id, removed)
        result.flags.append("adds_binary")
    test_paths = files_in_patch(task.test_patch)
    reset_files(workspace, test_paths)
    if not ctx.keep_test_infra:
        reverted = revert_test_paths(workspace, patch) + revert_test_infra(workspace)
        result.test_infra_reverted = sorted(set(reverted) - set(test_paths))
    try:
        apply_patch(workspace, task.test_patch)
    except PatchError as exc:
        result.error = f"the task's test patch does not apply: {exc}"
        return None
    if not result.test_files:
        result.error = "the task's test patch touches no test file to run"
        return None
    if pyc is not None:
        skip = {*files_in_patch(patch), *test_paths}
        bytecode.seed(pyc, workspace, skip=skip, stamp_before=began)
    config = runner_config(
        patch, env, workspace, test_paths, result.test_infra_reverted, result.test_files,
        JUNIT_IN_SANDBOX,
    )  # fmt: skip
    task_env = ctx.envs.for_task(env, workspace, scratch / "layer")
    seeded = fontcache.seeds(env, sandbox, ctx.policy, task_env.env)
    runner = compiled_runner(ctx.cache_dir, env.interpreter, env.interpreter_executable)
    return _run_guarded(task, patch, ctx, sandbox, task_env, workspace, scratch, log_dir,
                        config, result, seeded, services, runner)  # fmt: skip


def _run_guarded(
    task: Task,
    patch: str,
    ctx: RunContext,
    sandbox: Sandbox,
    task_env: TaskEnv,
    workspace: Path,
    scratch: Path,
    log_dir: Path,
    config: dict[str, object],
    result: TestRun,
    seeded: dict[str, str],
    services: StandIns,
    runner: Path | None = None,
) -> str | None:
    """`seeded`: files the run's first process copies into its private /tmp (fontcache.py);
    `services`: the test services to start beside the tests (services/runtime.py); `runner`:
    the runner's precompiled copy (pytest_guard/compiled.py), None for its source."""
    layer = scratch / "layer"
    touched_build = any(PurePosixPath(f).name in BUILD_FILES for f in files_in_patch(patch))
    config["setup"] = task_env.setup_argv
    config["setup_may_fail"] = touched_build
    # Entry-point plugins come from the base's metadata, unless the patch's build wrote it.
    config["trust_entry_points"] = not (task_env.setup_argv and touched_build)
    # Code from these is the environment's; the layer is only the harness's without an install.
    trusted = [*task_env.ro_paths, GUARD_DIR, *([] if task_env.setup_argv else task_env.rw_paths)]
    config["trusted_dirs"] = [str(p) for p in trusted]
    # A project that is pytest tests itself with its own code: the workspace's, or the copy
    # its install put in the layer.
    config["own_dirs"] = [str(workspace), *map(str, task_env.rw_paths)]
    python, extra = split_prefix(task_env.test_prefix)
    args: list[str] = [*extra, *config["args"]]  # type: ignore[misc]
    if not sandbox.isolated:
        # The unsafe backend has no private /tmp: runs side by side would share one file.
        config["junit"] = str(scratch / "junit.xml")
        args = relocated(args, Path(config["junit"]))  # type: ignore[arg-type]
    config["args"] = args
    config["tmp_files"] = seeded
    guard_dir = scratch / "guard"
    guard_dir.mkdir(mode=0o755)
    write_config(guard_dir / "config.json", config)
    for path in (workspace, layer):
        sandbox.prepare_workdir(path)
    runners = [runner.parent] if runner else []
    mounts = [Mount(path=p) for p in [*task_env.ro_paths, GUARD_DIR, *runners, guard_dir]]
    mounts += [Mount(path=p) for p in sorted({Path(s).parent for s in seeded.values()})]
    mounts += [Mount(path=p, ephemeral=True) for p in [workspace, *task_env.rw_paths]]
    key = new_key()
    argv = runner_argv(python, guard_dir / "config.json", runner)
    argv, variables = services.attach(sandbox, argv, task_env.env, mounts)
    result.services = services.uses()
    policy = ctx.policy.model_copy(update={"env": variables, **services.network()})
    run = sandbox.run(
        argv, workdir=workspace, mounts=mounts, policy=policy, stdin=key, result_channel=True
    )
    _write(log_dir / "test_output.txt", run.stdout + "\n--- stderr ---\n" + run.stderr)
    result.exit_code = run.returncode
    services.keep_logs(log_dir)
    return services.explain(_read_results(task, ctx, run, key, log_dir, result), run)


def _read_results(
    task: Task, ctx: RunContext, run: RunResult, key: bytes, log_dir: Path, result: TestRun
) -> str | None:
    if run.timed_out:
        result.timed_out = True
    try:
        guard = read_channel(run.channel, key, run.channel_truncated)
    except ChannelTampered as exc:
        _tampered(result, [str(exc)])
        return None
    timeout = f"tests timed out after {ctx.policy.timeout_s:.0f} s"
    if guard is None:
        return (
            timeout
            if run.timed_out
            else (f"the test process ended without sending results (exit code {run.returncode})")
        )
    if guard.setup_exit is not None:
        return f"installing the workspace failed (exit {guard.setup_exit}); see test_output.txt"
    if guard.infra_restored:
        result.test_infra_reverted += [f"{p} (after the install)" for p in guard.infra_restored]
    if guard.problems:
        _tampered(result, guard.problems)
        return None
    if guard.exitstatus is not None:
        result.exit_code = guard.exitstatus
    if guard.xml is None:
        return timeout if run.timed_out else f"no JUnit XML: {guard.xml_problem}"
    (log_dir / "junit.xml").write_bytes(guard.xml)
    try:
        result.outcomes = parse_junit_bytes(guard.xml, files=result.test_files)
    except JUnitError as exc:
        return str(exc)
    problems = disagreements(guard.xml, result.outcomes, guard.statuses)
    if problems:
        _tampered(result, problems)
        return None
    if run.timed_out:
        return timeout
    return unusable(result.exit_code, result.outcomes)


def _tampered(result: TestRun, problems: list[str]) -> None:
    """Not a crash to attribute: the reporting itself cannot be trusted, so never resolved."""
    result.failure = "the tests' reporting was tampered with: " + "; ".join(problems[:5])
    result.flags.append("tampers_with_test_runner")


def workspace_and_env(
    task: Task,
    ctx: RunContext,
    scratch: Path,
    *,
    overlaid: bool = False,
    owner: tuple[int, int] | None = None,
) -> tuple[Path, Environment]:
    """A fresh workspace at the base commit (`scratch/workspace`, or in the memory work
    directory if every sandbox that sees it overlays it and it fits: workdirs.memory_place;
    there, linked from a pristine checkout given to `owner`, the uid and gid of the sandbox
    that will run it: pristine.py), and the task's built environment."""
    workspace, env, _ = _checkout(task, ctx, scratch, overlaid=overlaid, owner=owner)
    return workspace, env


def _checkout(
    task: Task,
    ctx: RunContext,
    scratch: Path,
    *,
    overlaid: bool = False,
    owner: tuple[int, int] | None = None,
) -> tuple[Path, Environment, datetime]:
    """workspace_and_env's, and the base commit's date."""
    mirror = ensure_mirror(
        task.repo,
        repos_dir=ctx.repos_dir,
        cache_dir=ctx.cache_dir,
        url=task.repo_url,
        commits=[task.base_commit],  # a cached clone older than the task is fetched once
    )
    scratch.mkdir(mode=0o711)
    place = None
    if overlaid and ctx.memory_dir is not None:
        place = memory_place(ctx.memory_dir, scratch.name, *tree_size(mirror, task.base_commit))
    packs = place.parent / PACK_CACHE if place else None  # packcache.py
    dest = (place or scratch) / "workspace"
    if place is not None and ctx.memory_dir is not None and owner and pristine.ENABLED:
        workspace = linked_workspace(
            mirror, task.base_commit, dest, memory_dir=ctx.memory_dir, owner=owner,
            pack_cache=packs,
        )  # fmt: skip
    else:
        workspace = make_workspace(mirror, task.base_commit, dest, pack_cache=packs)
    when = commit_date(mirror, task.base_commit)
    spec = ctx.envs.spec_for(task, workspace, when)
    return workspace, ctx.envs.ensure(spec, workspace), when


def build_task_env(task: Task, ctx: RunContext) -> Environment:
    """Build (or find) a task's environment, and those of the test services its repository
    declares, without running anything (`swebounty envs build`)."""
    scratch = ctx.work_dir / f"env-{task.instance_id}-{uuid.uuid4().hex[:8]}"
    try:
        _, env, when = _checkout(task, ctx, scratch)
        build(declared(ctx.envs.overrides, shipped_catalog(), task.repo, task.version, when),
              ctx.envs, scratch)  # fmt: skip
        return env
    finally:
        safefs.remove_tree(scratch)
