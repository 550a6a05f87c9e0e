"""Evaluate a Node task: fresh workspace → Node environment → patches → sandboxed tests.

The same steps as the Python frameworks' (frameworks/python.py): the submission's patch first,
then every file of the hidden test patch reset and the test patch applied; the test runner's
configuration (jest/vitest/mocha config files, the `jest`/`mocha` keys of package.json) put
back as at the base commit (testfiles.py); tests run in the sandbox with no network, their
results sent signed through the result channel (runners/) or, for Jest before 21, written to a
directory outside the workspace (writable by the run: see frameworks/node.py).
`prepare_node` is what the Node frameworks share; `run_node_tests` runs the project's runner
(frameworks/node.py), `e2e.py` the app and the browser tests (frameworks/e2e.py).
"""

from __future__ import annotations

import fnmatch
import json
import logging
import re
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from swebounty import safefs
from swebounty.diffs import PatchError, files_in_patch
from swebounty.envs.node_build import NodeBuildError, NodeEnvironment
from swebounty.envs.node_manager import NodeEnvs, NodeTaskEnv
from swebounty.envs.node_project import NodeProject
from swebounty.envs.node_scripts import RunnerCall
from swebounty.envs.node_workspaces import plan_package_runs
from swebounty.integrity import revert_test_infra
from swebounty.node.dispatch import argv_for, results_of
from swebounty.node.prepare import no_runner, run_build_steps, unnamed_tests
from swebounty.node.results import (
    JsResults,
    cross_check,
    match,
    outcomes_of,
    write_junit,
)
from swebounty.node.runner import RunnerError
from swebounty.node.runners import tools_dir
from swebounty.node.selection import files_to_run
from swebounty.node.testfiles import base_packages, js_test_files, restore_test_config
from swebounty.patches import apply_patch, reset_files
from swebounty.pytest_guard import new_key
from swebounty.repos import commit_date, make_workspace
from swebounty.sandbox.base import Mount
from swebounty.setups import starting_point
from swebounty.submodules import Sources
from swebounty.tasks import Task
from swebounty.testing import JUnitError

log = logging.getLogger(__name__)

# evalcontext.py imports the evaluation path, which imports this module: the context and
# frameworks/base.py's TestRun are taken as they come, typed as Any.
EvalContext = Any
TestRun = Any

_ERROR_LINE = re.compile(r"^(\w+(Error|Exception)|Error|error|ERR!?)\b.*:")
_NOISE = re.compile(r"^(at |\^+$|Node\.js v\d|-+$|npm (ERR|error)!?\s*$)")

_node_envs: dict[Path, NodeEnvs] = {}


def node_envs(ctx: EvalContext) -> NodeEnvs:
    """The Node environments of an evaluation context's cache (one manager per cache)."""
    root = ctx.cache_dir / "node"
    if root not in _node_envs:
        _node_envs[root] = NodeEnvs(root, offline=ctx.envs.offline)
    return _node_envs[root]


def _workspace_env(
    task: Task, ctx: EvalContext, scratch: Path
) -> tuple[Path, NodeEnvironment, NodeProject]:
    """A fresh workspace at the base commit in `scratch`, and the task's Node environment."""
    # The base commit, or the task's starting state (its setup patch applied: setups.py).
    mirror, base = starting_point(task, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir)
    scratch.mkdir(mode=0o711)
    subs = Sources(task.repo, ctx.repos_dir, ctx.cache_dir)  # submodules.py
    workspace = make_workspace(mirror, base, scratch / "workspace", fill_submodules=subs.fill)
    envs = node_envs(ctx)
    try:
        spec, project = envs.spec_for(task, workspace, commit_date(mirror, base))
        return workspace, envs.ensure(spec, workspace), project
    except NodeBuildError as exc:
        from swebounty.envs import EnvBuildError

        raise EnvBuildError(str(exc)) from exc


def build_node_env(task: Task, ctx: EvalContext) -> NodeEnvironment:
    """Build (or find) a Node task's environment without running anything (`envs build`)."""
    scratch = ctx.work_dir / f"env-{task.instance_id}-{uuid.uuid4().hex[:8]}"
    try:
        return _workspace_env(task, ctx, scratch)[1]
    finally:
        safefs.remove_tree(scratch)


@dataclass
class NodeReady:
    """A Node workspace ready for its tests: patched, configuration reset, hidden tests in."""

    workspace: Path
    env: NodeEnvironment
    project: NodeProject
    task_env: NodeTaskEnv
    out_dir: Path  # where the runners write their results (scratch/out)


def prepare_node(
    task: Task,
    patch: str,
    ctx: EvalContext,
    scratch: Path,
    result: TestRun,
    python_infra: bool = False,
) -> NodeReady | None:
    """The steps every Node framework shares (module docstring); None when there is nothing
    to run (`result` says why). `python_infra`: the hidden tests are pytest's (e2e), whose
    test infrastructure is reset too. Raises only what `Framework.run` may raise."""
    workspace, env, project = _workspace_env(task, ctx, scratch)
    envs = node_envs(ctx)
    result.env_key = env.key
    packages_before = base_packages(workspace, files_in_patch(patch))

    try:
        result.patch_method = apply_patch(workspace, patch)
    except PatchError as exc:
        result.patch_error = str(exc)
        return None
    # The environment's node_modules hold the test runner, its reporters and plugins: a
    # patch's own (a fake jest or mocha that reports passes) never takes their place.
    vendored = [p for p in files_in_patch(patch) if "node_modules" in PurePosixPath(p).parts]
    if vendored:
        reset_files(workspace, vendored)
        result.test_infra_reverted += vendored
    reset_files(workspace, files_in_patch(task.test_patch))
    if python_infra and not ctx.keep_test_infra:
        # Browser tests are pytest's: its configuration, conftest.py and start-up files are
        # put back as at the base commit too, before the hidden tests bring their own.
        result.test_infra_reverted += revert_test_infra(workspace)
    restored = restore_test_config(workspace, packages_before, files_in_patch(patch))
    if restored:
        log.info("%s: restored test configuration %s", task.instance_id, restored)
        result.test_infra_reverted += restored
    try:
        apply_patch(workspace, task.test_patch)
    except PatchError as exc:
        result.error = f"the task's test patch does not apply: {exc}"
        return None

    extra_env = dict(task.env_spec.env) if task.env_spec else {}
    task_env = envs.for_task(env, project, workspace, extra_env)
    out_dir = scratch / "out"
    out_dir.mkdir()
    return NodeReady(workspace, env, project, task_env, out_dir)


def run_node_tests(
    task: Task, patch: str, ctx: EvalContext, log_dir: Path, scratch: Path, result: TestRun
) -> None:
    """The project's own runner (Jest, Vitest, Mocha) on the hidden tests: fills `result`."""
    ready = prepare_node(task, patch, ctx, scratch, result)
    if ready is None:
        return
    workspace, env, project = ready.workspace, ready.env, ready.project
    task_env, out_dir = ready.task_env, ready.out_dir
    extra_env = dict(task.env_spec.env) if task.env_spec else {}  # as prepare_node gave them
    expected = task.FAIL_TO_PASS + task.PASS_TO_PASS
    files, whole_suite = files_to_run(
        workspace, js_test_files(task.test_patch), task.test_patch, expected, _file_prefix
    )
    result.test_files = files
    # (runner call, files to run or None for its whole suite, workspace package it runs in)
    calls: list[tuple[RunnerCall, list[str] | None, str]] = []
    if task_env.runner is not None:
        if task_env.runner.files_only and whole_suite:
            result.error = unnamed_tests(task_env.runner, files)
            return
        # The main call, then the script's other calls that concern these tests (dayjs's runs
        # of its time-zone tests under other TZs): a test fails if it fails in any of them.
        calls = [(task_env.runner, None if whole_suite else files, "")]
        calls += [(c, None, "") for c in project.other_calls if whole_suite or _concerns(c, files)]
    else:
        # A monorepo whose root hands its tests to the workspace packages: each package
        # runs the tests it holds as its own test script does (the test patch may change no
        # test file, only a snapshot: its files say which package).
        calls, expected = plan_package_runs(
            workspace, files, files_in_patch(task.test_patch), expected, _file_prefix
        )
    if not calls:
        result.error = no_runner(project.package)
        return
    tools = tools_dir(ctx.cache_dir)
    mounts = [Mount(path=p) for p in [*task_env.ro_paths, tools]]
    mounts.append(Mount(path=out_dir, writable=True))
    # V8 reserves far more address space than it uses (each WebAssembly memory reserves
    # ~10 GB: Node 18's fetch dies with "Out of memory: wasm memory" under an 8 GB
    # RLIMIT_AS). Memory stays capped by the run's memory cgroup.
    policy = ctx.policy.model_copy(update={"env": task_env.variables, "limit_address_space": False})
    if task_env.runner is not None:
        guarded = [*files_in_patch(task.test_patch), *files]
        variables = json.dumps(extra_env, sort_keys=True)  # the task's own (PATH names the run)
        tree = "\0".join([task.base_commit, env.key, variables, patch, task.test_patch])
        build_log, restored = run_build_steps(
            ctx, project.package, workspace, files, guarded, mounts, policy, scratch, tree
        )
        result.test_infra_reverted += restored
        if build_log:
            _write(log_dir / "build_output.txt", build_log)
    originals = list(zip(task.FAIL_TO_PASS + task.PASS_TO_PASS, expected, strict=True))
    merged: JsResults | None = None
    problems: list[str] = []
    outputs: list[str] = []
    # Every call's runner is found before any test runs: a run may rewrite the workspace's
    # node_modules links, and a later call must not start the runner it planted.
    argvs: list[tuple[list[str], bool]] = []  # (argv, whether its results are signed)
    for i, (call, call_files, package_dir) in enumerate(calls):
        run_dir = out_dir if i == 0 else out_dir / f"call-{i}"
        run_dir.mkdir(exist_ok=True)
        try:
            argvs.append(
                argv_for(env.node, workspace, call, call_files, run_dir, package_dir, tools)
            )
        except RunnerError as exc:
            result.error = str(exc)
            return
    for i, (call, _, package_dir) in enumerate(calls):
        run_dir = out_dir if i == 0 else out_dir / f"call-{i}"
        argv, signed = argvs[i]
        call_policy = policy.model_copy(update={"env": {**task_env.variables, **call.env}})
        with ctx.lease() as sandbox:
            sandbox.prepare_workdir(scratch)
            if package_dir:
                # The whole workspace is the sandbox's (the package's tests import its
                # siblings); the runner starts in the package, as its own script would.
                argv = [
                    "/bin/sh",
                    "-c",
                    'cd "$0" && exec "$@"',
                    str(workspace / package_dir),
                    *argv,
                ]
            key = new_key()  # the call's reporter signs its results with it (runners/)
            run = sandbox.run(argv, workdir=workspace, mounts=mounts, policy=call_policy,
                              stdin=key if signed else b"", result_channel=signed)  # fmt: skip
        outputs.append(f"$ {' '.join(argv)}\n{run.stdout}\n--- stderr ---\n{run.stderr}")
        if i == 0:
            result.exit_code = run.returncode
        if run.timed_out:
            _write(log_dir / "test_output.txt", "\n\n".join(outputs))
            result.timed_out = True
            result.error = f"tests timed out after {ctx.policy.timeout_s:.0f} s"
            return
        js: JsResults | None = None
        try:
            # Read as the package's runner names its files, then named from the root.
            js, tampered = results_of(call, run, key, signed, run_dir, workspace / package_dir)
            js = js.under(package_dir) if js is not None and package_dir else js
        except JUnitError as exc:
            log.warning("%s: %s", task.instance_id, exc)
            tampered = []
        if tampered:
            # Not a crash: the reporting itself cannot be trusted, so never resolved.
            result.failure = "the tests' reporting was tampered with: " + "; ".join(tampered[:5])
            result.flags.append("tampers_with_test_runner")
            if js is None:
                continue  # nothing trustworthy to grade
        problem = cross_check(call.runner, run.returncode, js)
        if problem and js is None:
            problem += f" after {run.seconds:.1f} s{_last_words(run.stderr)}"
        if problem:
            where = " ".join(f"{k}={v}" for k, v in call.env.items())
            problems.append(problem if i == 0 else f"run {i + 1} ({where}): {problem}")
        if js is not None:
            merged = js if merged is None else merged.merged(js)
        elif i == 0:
            break
    _write(log_dir / "test_output.txt", "\n\n".join(outputs))
    if merged is not None:
        write_junit(merged, log_dir / "junit.xml")
        matched = match(expected, merged)
        result.outcomes = {
            **outcomes_of(merged),
            **{orig: matched[local] for orig, local in originals},
        }
    if problems and merged is None and not result.failure:
        result.error = f"no test result: {problems[0]}"
    elif problems:
        result.problem = "; ".join(problems)  # exit codes the results contradict: not trusted


def _concerns(call: RunnerCall, files: list[str]) -> bool:
    """Whether a call of the test script runs any of `files` (jest's paths are patterns)."""
    for path in call.paths:
        for f in files:
            if call.runner == "mocha":
                if fnmatch.fnmatch(f, path) or f.startswith(path.rstrip("/") + "/") or f == path:
                    return True
            elif re.search(path, f):
                return True
    return False


def _last_words(stderr: str) -> str:
    """What the runner last said on stderr, to say why it wrote no results: its last error
    line (`Error: Cannot find module '../build'`), else its last line that is not a stack
    frame, a caret, nor the `Node.js v20.1.0` line node ends a crash with."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not _NOISE.match(ln)]
    errors = [ln for ln in lines if _ERROR_LINE.match(ln)]
    said = errors or lines
    return f"; it said: {said[-1][:300]}" if said else ""


def _file_prefix(test_id: str) -> str:
    from swebounty.node.results import _file_of

    return _file_of(test_id, set()) or ""


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="replace")
