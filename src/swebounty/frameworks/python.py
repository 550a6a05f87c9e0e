"""The steps every Python test framework shares before its runner starts.

A fresh workspace at the base commit and the task's Python environment (`workspace_and_env`,
`build_task_env`), the test services its repository declares, the bytecode cache; then the
submission's patch, compiled files it added removed, the test patch's files and the test
infrastructure (integrity.py, plus the framework's own `extra_infra` files: a runner script,
a settings module) put back as at the base commit, and the hidden tests applied (`prepare`).
What starts the runner and reads its results is the framework's (pytest.py, ...).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from swebounty import bytecode, pristine, safefs
from swebounty.diffs import PatchError, files_in_patch
from swebounty.envs import Environment
from swebounty.frameworks.base import RunContext, TestRun
from swebounty.integrity import revert_test_infra, revert_test_paths, strip_compiled
from swebounty.patches import apply_patch, reset_files
from swebounty.pristine import linked_workspace
from swebounty.repos import commit_date, make_workspace
from swebounty.sandbox import Sandbox
from swebounty.services.catalog import for_task
from swebounty.services.runtime import StandIns, build, shipped_catalog
from swebounty.setups import starting_point
from swebounty.submodules import Sources
from swebounty.tasks import Task
from swebounty.workdirs import PACK_CACHE, memory_place, tree_size

log = logging.getLogger(__name__)

# (workspace, files the patch touched) -> more base-commit files that decide how tests run
ExtraInfra = Callable[[Path, list[str]], list[str]]


@dataclass
class Prepared:
    """A workspace ready for the runner: patched, infrastructure reset, hidden tests applied."""

    workspace: Path
    env: Environment
    services: StandIns
    test_paths: list[str]  # every file the test patch touches


def prepare(
    task: Task,
    patch: str,
    ctx: RunContext,
    sandbox: Sandbox,
    scratch: Path,
    result: TestRun,
    extra_infra: ExtraInfra | None = None,
) -> Prepared | None:
    """The shared steps (module docstring) in `scratch`, for a run in `sandbox`; None when
    there is nothing to run (`result` says why: the patch or the test patch does not apply,
    or the test patch names no test file)."""
    owner = getattr(sandbox, "workdir_owner", None)
    began = time.time()  # a file written since may not get a timestamp pyc (bytecode.py)
    workspace, env, when = checkout(task, ctx, scratch, overlaid=True, owner=owner)
    result.env_key = env.key
    wanted, data = for_task(task, ctx.envs.overrides, shipped_catalog(), when)
    services = build(wanted, ctx.envs, scratch, tests_env=env.path, data=data)
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
        touched = files_in_patch(patch)
        reverted = revert_test_paths(workspace, patch) + revert_test_infra(workspace)
        if extra_infra is not None:
            own = [p for p in extra_infra(workspace, touched) if p in touched]
            reset_files(workspace, own)
            reverted += own
        result.test_infra_reverted = sorted(set(reverted) - set(test_paths))
    try:
        apply_patch(workspace, task.test_patch)
    except PatchError as exc:
        result.error = f"the task's test patch does not apply: {exc}"
        return None
    # A data file is handed to pytest for the project's conftest.py to collect (testing.py's
    # `data_files`): only as a regular file, never a link the test patch made to elsewhere.
    links = [f for f in result.test_files if not f.endswith(".py")]
    links = [f for f in links if not safefs.regular_beneath(workspace, f)]
    if links:
        log.warning("%s: not running test files that are not regular files: %s",
                    task.instance_id, links)  # fmt: skip
        result.test_files = [f for f in result.test_files if f not in links]
    if not result.test_files:
        result.error = (
            "the task's test patch touches no test file to run (regular files only); check"
            " its test_patch"
        )
        return None
    if pyc is not None:
        skip = {*files_in_patch(patch), *test_paths}
        bytecode.seed(pyc, workspace, skip=skip, stamp_before=began)
    return Prepared(workspace=workspace, env=env, services=services, test_paths=test_paths)


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
    workspace, env, _ = checkout(task, ctx, scratch, overlaid=overlaid, owner=owner)
    return workspace, env


def checkout(
    task: Task,
    ctx: RunContext,
    scratch: Path,
    *,
    overlaid: bool = False,
    owner: tuple[int, int] | None = None,
) -> tuple[Path, Environment, datetime]:
    """workspace_and_env's, and the base commit's date."""
    # The base commit, or the task's starting state (its setup patch applied: setups.py).
    mirror, base = starting_point(task, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir)
    scratch.mkdir(mode=0o711)
    place = None
    if overlaid and ctx.memory_dir is not None:
        place = memory_place(ctx.memory_dir, scratch.name, *tree_size(mirror, base))
    packs = place.parent / PACK_CACHE if place else None  # packcache.py
    dest = (place or scratch) / "workspace"
    subs = Sources(task.repo, ctx.repos_dir, ctx.cache_dir)  # submodules.py
    if place is not None and ctx.memory_dir is not None and owner and pristine.ENABLED:
        workspace = linked_workspace(
            mirror,
            base,
            dest,
            memory_dir=ctx.memory_dir,
            owner=owner,
            pack_cache=packs,
            fill_submodules=subs.fill,
        )
    else:
        workspace = make_workspace(mirror, base, dest, pack_cache=packs, fill_submodules=subs.fill)
    when = commit_date(mirror, base)
    spec = ctx.envs.spec_for(task, workspace, when)
    return workspace, ctx.envs.ensure(spec, workspace), when


def build_task_env(task: Task, ctx: RunContext) -> Environment:
    """Build (or find) a task's environment, and those of the test services its repository
    declares, without running anything (`swebounty envs build`)."""
    scratch = ctx.work_dir / f"env-{task.instance_id}-{uuid.uuid4().hex[:8]}"
    try:
        _, env, when = checkout(task, ctx, scratch)
        wanted, data = for_task(task, ctx.envs.overrides, shipped_catalog(), when)
        build(wanted, ctx.envs, scratch, data=data)
        return env
    finally:
        safefs.remove_tree(scratch)


def python_runtime(task: Task, ctx: RunContext) -> tuple[Environment, str]:
    """`Framework.runtime` of every Python framework."""
    env = build_task_env(task, ctx)
    return env, env.interpreter
