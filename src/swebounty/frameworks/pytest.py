"""pytest: the Python default, run through the guarded runner (pytest_guard/).

After the shared Python steps (python.py), the install step, if any, and pytest run in one
sandboxed process tree whose writes land in a bounded scratch area. The guard's plugin inside
the test process records every report; the runner sends the JUnit XML and those statuses on
the sandbox's result channel, signed with a key only it was given: results never come from a
file. The harness checks the XML against the recorded statuses and the exit status
(`disagreements`, `unusable`); a reporting that was tampered with is the submission's
failure, flagged `tampers_with_test_runner`. SWE-bench's ids (`path::Class::test[param]`, or
the bare names older datasets use) are matched onto JUnit's by testids.py.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import defusedxml.ElementTree as DefusedET

from swebounty import fontcache
from swebounty.dataitems import pytest_targets
from swebounty.diffs import files_in_patch
from swebounty.envs import TaskEnv
from swebounty.frameworks.base import BaseTree, BuiltEnv, RunContext, TestRun, grade_by_rules
from swebounty.frameworks.pyflags import hack_flags
from swebounty.frameworks.python import prepare, python_runtime
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
from swebounty.sandbox import Sandbox
from swebounty.sandbox.base import Mount, RunResult
from swebounty.services.runtime import StandIns
from swebounty.tasks import Submission, Task
from swebounty.testids import match_results
from swebounty.testing import (
    MESSAGE_CHARS,
    JUnitError,
    TestOutcome,
    cross_check,
    data_files,
    not_loaded,
    parse_junit_bytes,
    relocated,
    test_files,
    without_workspace,
)
from swebounty.verdicts import Verdict

# Files whose change by a submission can legitimately break the per-task install: then a failed
# install is the submission's doing, not an infrastructure error.
BUILD_FILES = ("setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in")
JUNIT_IN_SANDBOX = "/tmp/swebounty-junit.xml"  # the sandbox's private /tmp


class Pytest:
    """The default for Python tasks: it applies to every one no more specific framework took."""

    name = "pytest"

    def applies(self, task: Task, tree: BaseTree) -> bool:
        return task.ecosystem == "python"

    def test_files(self, task: Task) -> list[str]:
        files = test_files(task.test_patch, expected=task.FAIL_TO_PASS + task.PASS_TO_PASS)
        if test_files(task.test_patch):
            return files
        # No test module in the patch: its data files too, which a conftest.py may collect
        # (pygments' snippets), the same in validation as in evaluation (dataitems.py).
        return list(dict.fromkeys([*files, *data_files(task.test_patch)]))

    def run(
        self, task: Task, patch: str, ctx: RunContext, log_dir: Path, scratch: Path, result: TestRun
    ) -> str | None:
        # Leased first: a workspace in memory is linked from a checkout owned by its sandbox's uid.
        with ctx.lease() as sandbox:
            return _prepare_and_run(task, patch, ctx, sandbox, log_dir, scratch, result)

    def grade(self, task: Task, submission: Submission, run: TestRun) -> Verdict:
        return grade_by_rules(self, task, submission, run)

    # grading.Rules
    def hack_flags(self, task: Task, patch: str) -> list[str]:
        return hack_flags(patch, self.test_files(task), task=task)

    def check(
        self, exit_code: int | None, outcomes: dict[str, TestOutcome] | None
    ) -> tuple[str | None, str | None]:
        problem = cross_check(exit_code, outcomes)
        return problem, None if outcomes is None else unusable(exit_code, outcomes)

    def match(
        self, expected: list[str], outcomes: dict[str, TestOutcome]
    ) -> dict[str, TestOutcome]:
        return match_results(expected, outcomes)

    def runtime(self, task: Task, ctx: RunContext) -> tuple[BuiltEnv, str]:
        return python_runtime(task, ctx)


def _prepare_and_run(
    task: Task,
    patch: str,
    ctx: RunContext,
    sandbox: Sandbox,
    log_dir: Path,
    scratch: Path,
    result: TestRun,
) -> str | None:
    ready = prepare(task, patch, ctx, sandbox, scratch, result)
    if ready is None:
        return None
    workspace, env = ready.workspace, ready.env
    targets = pytest_targets(workspace, result.test_files)
    result.test_files += targets.companions  # their items' results are read as the files'
    config = runner_config(
        patch, env, workspace, ready.test_paths, result.test_infra_reverted, targets.paths,
        JUNIT_IN_SANDBOX, targets.ignore,
    )  # fmt: skip
    config["test_limit_s"] = ctx.policy.test_limit_s  # one hung test fails alone: timelimit.py
    if coverage_plugin(env.lock, env.path):
        # A configuration's `--cov ... --cov-fail-under=N` fails a run whose tests all pass;
        # the hidden tests are a part of the suite, so coverage says nothing here.
        config["args"] = ["--no-cov", *config["args"]]  # type: ignore[misc]
    task_env = ctx.envs.for_task(env, workspace, scratch / "layer")
    seeded = fontcache.seeds(env, sandbox, ctx.policy, task_env.env)
    runner = compiled_runner(ctx.cache_dir, env.interpreter, env.interpreter_executable)
    return _run_guarded(task, patch, ctx, sandbox, task_env, workspace, scratch, log_dir,
                        config, result, seeded, ready.services, runner)  # fmt: skip


_PYTEST_COV = re.compile(r"(?im)^pytest[-_.]cov==(\d+)\.(\d+)")


def coverage_plugin(lock: str, venv: Path) -> bool:
    """Whether pytest-cov 2.4 or later (the first with `--no-cov`) is in the environment: its
    pinned version in the lock, else its package in the venv (an environment without a lock)."""
    pinned = _PYTEST_COV.search(lock)
    if pinned:
        return (int(pinned[1]), int(pinned[2])) >= (2, 4)
    return any(venv.glob("lib/python*/site-packages/pytest_cov/__init__.py"))


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
    policy = ctx.policy.model_copy(update={"env": variables, **services.network()})
    run = sandbox.run(
        argv, workdir=workspace, mounts=mounts, policy=policy, stdin=key, result_channel=True
    )
    _write(log_dir / "test_output.txt", run.stdout + "\n--- stderr ---\n" + run.stderr)
    result.exit_code = run.returncode
    services.keep_logs(log_dir)
    result.services = services.uses()  # after the run: what the services' logs said
    return services.explain(read_results(ctx, run, key, log_dir, result, workspace), run)


def read_results(
    ctx: RunContext,
    run: RunResult,
    key: bytes,
    log_dir: Path,
    result: TestRun,
    workspace: Path | None = None,
) -> str | None:
    """What the guarded runner sent on the channel, into `result` (outcomes, the exit status
    it saw, tampering); why the run gave no usable results, or None. Also e2e.py's.
    `workspace`: the run's checkout, whose path a test id holds as /testbed (without_workspace)."""
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
    if guard.errors:  # before its problems: a guard that broke may see false ones after
        return "; ".join(guard.errors[:3])
    if guard.problems:
        _tampered(result, guard.problems)
        return None
    if guard.exitstatus is not None:
        result.exit_code = guard.exitstatus
    if guard.xml is None and guard.unloaded_conftest and run.returncode == 4:
        # pytest's exit code for it; no session, so the guard saw none (exitstatus is None)
        result.exit_code = run.returncode
        return unloaded(result, *guard.unloaded_conftest) if not run.timed_out else timeout
    if guard.xml is None:
        return timeout if run.timed_out else f"no JUnit XML: {guard.xml_problem}"
    (log_dir / "junit.xml").write_bytes(guard.xml)
    try:
        result.outcomes = parse_junit_bytes(guard.xml, files=result.test_files)
    except JUnitError as exc:
        return str(exc)
    result.uncollected = uncollected(guard.xml, result.outcomes)
    problems = disagreements(guard.xml, result.outcomes, guard.statuses)
    if problems:
        _tampered(result, problems)
        return None
    if workspace is not None:  # after the check: the guard's statuses name the ids as they ran
        result.outcomes = without_workspace(result.outcomes, workspace)
    if run.timed_out:
        return timeout
    return unusable(result.exit_code, result.outcomes)


def _tampered(result: TestRun, problems: list[str]) -> None:
    """Not a crash to attribute: the reporting itself cannot be trusted, so never resolved."""
    result.failure = "the tests' reporting was tampered with: " + "; ".join(problems[:5])
    result.flags.append("tampers_with_test_runner")


def uncollected(xml: bytes, outcomes: dict[str, TestOutcome]) -> dict[str, str]:
    """The test files that failed to import (one JUnit testcase each, named by its file alone,
    with pytest's "collection failure" message), each with the last line of its traceback:
    the exception that stopped it."""
    broken = {k: o.message for k, o in outcomes.items() if "::" not in k and o.status == "error"}
    if not broken:
        return {}
    errors: dict[str, str] = {}  # the testcase's name -> the traceback's last line
    for case in DefusedET.fromstring(xml, forbid_dtd=True).iter("testcase"):
        error = case.find("error")
        lines = [ln.strip() for ln in (error.text or "").splitlines() if ln.strip()] if (
            error is not None) else []  # fmt: skip
        if lines:
            name = ".".join(filter(None, (case.get("classname"), case.get("name"))))
            errors[name] = re.sub(r"^E\s+", "", lines[-1])  # pytest's mark of error lines
    for path in broken:
        dotted = path.removesuffix(".py").replace("/", ".")
        found = [e for n, e in errors.items()
                 if n in (dotted, path) or n.endswith(("." + dotted, "/" + path))]  # fmt: skip
        if not found and len(broken) == len(errors) == 1:
            found = list(errors.values())
        if found:
            broken[path] = found[0][:MESSAGE_CHARS]
    return broken


def unloaded(result: TestRun, conftest: str, why: str) -> str | None:
    """A run whose conftest.py did not import (pytest ends with exit code 4 before its session,
    writing no results), read as pytest reports one it meets during collection: every test
    file of the run failed to collect, with why. The tests ran as far as the code let them
    (none): gradable, like a test module that does not import. None, or why it cannot be read."""
    if not result.test_files:
        return f"a conftest.py did not import, and the run names no test file: {conftest}: {why}"
    message = f"{conftest} does not import: {why}"[:MESSAGE_CHARS]
    result.outcomes = {f: TestOutcome("error", message) for f in result.test_files}
    result.uncollected = dict.fromkeys(result.test_files, message)
    return None


def unusable(exit_code: int | None, outcomes: dict[str, TestOutcome]) -> str | None:
    """Why a run's results cannot be graded (no test at all, pytest exit code 2 without import
    errors to explain it, 3, 4, 5 or a signal, exit code 1 contradicted by the XML), or None.
    Exit code 2 with modules that failed to import is gradable: the tests ran as far as the
    code let them; so is exit code 4 when every result is such a module (`unloaded`)."""
    problem = cross_check(exit_code, outcomes)
    if not outcomes:
        return problem or "no test ran: the JUnit XML is empty"
    if not_loaded(exit_code, outcomes):
        return None
    imports_failed = any("::" not in k and o.status == "error" for k, o in outcomes.items())
    untrusted = exit_code is not None and (
        exit_code not in (0, 1, 2)
        or (exit_code == 2 and not imports_failed)
        or (exit_code == 1 and problem is not None)
    )
    return (problem or f"exit code {exit_code}") if untrusted else None


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="replace")
