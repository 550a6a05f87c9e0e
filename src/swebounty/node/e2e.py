"""End-to-end tasks: the app started in the sandbox, hidden Playwright tests driving Chromium.

SWE-Lancer's individual-contributor tasks are graded this way: not by the project's unit tests
but by browser tests written against the running app. An `e2e` task names the command that
starts its app (`env_spec.app_cmd`) and the port it listens on (`env_spec.app_port`); its hidden
tests are pytest files using Playwright (fixtures `app_url`, `browser`, `page` from
`e2e_plugin.py`). Everything runs in one sandbox: the app, the tests and the browser share its
network namespace, whose only interface is its own loopback. The tests' Python environment
(pytest, Playwright) is an ordinary swebounty environment, cached and shared like any other;
the browser is the machine's Chromium. Screenshots and traces of failed tests are kept in the
verdict's logs (`artifacts/`) and linked from the HTML report.

The test services of the task (its `requires.services`, with their files in `service_data`: a
replaying backend and its recorded flows; its repository's) start in the same sandbox before
the app, each under its own driver (services/runtime.py), and stop after the tests; the app and
the tests are told where they are (the catalog's variables, e.g. REPLAY_URL).

The tests run through the guarded pytest runner (pytest_guard/), as every Python task's do:
pytest is imported before anything of the workspace (a `pytest.py` of the submission's is not
it), its reporting is watched, and the results come signed through the result channel, which
the drivers hand to the tests alone (the app gets neither the channel nor the key on stdin):
the app, the submission's code running beside them, can rewrite no result.
"""

from __future__ import annotations

import logging
import stat
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from swebounty import safefs
from swebounty.diffs import files_in_patch
from swebounty.envs.node_manager import NodeTaskEnv
from swebounty.integrity import infra_manifest
from swebounty.node.tools import published
from swebounty.pytest_guard import GUARD_DIR, new_key, runner_argv, write_config
from swebounty.report.browser import find_chromium
from swebounty.sandbox.base import Mount
from swebounty.services.catalog import for_task
from swebounty.services.runtime import StandIns, build, shipped_catalog
from swebounty.tasks import EnvSpec, Task
from swebounty.testing import pytest_command, relocated, test_files

log = logging.getLogger(__name__)

# evalcontext.py imports the evaluation path, which imports this module (frameworks/e2e.py):
# the context and frameworks/base.py's TestRun are taken as they come, typed as Any.
EvalContext = Any
TestRun = Any

# The browser tests' own toolchain, resolved as of one date so every run gets the same one.
E2E_PACKAGES = ["pytest", "playwright"]
E2E_CUTOFF = datetime(2025, 6, 1, tzinfo=timezone.utc)
APP_READY_S = 60.0
APP_DID_NOT_ANSWER = 90  # the driver's exit code (services/driver.py)
JUNIT_IN_SANDBOX = Path("/tmp/swebounty-junit.xml")  # the sandbox's private /tmp


def tools_dir(cache_dir: Path) -> Path:
    """The driver and the pytest plugin, copied to a place the sandbox user can read."""
    texts = {
        name: resources.files(package).joinpath(src).read_text(encoding="utf-8")
        for name, package, src in (
            ("e2e_driver.py", "swebounty.services", "driver.py"),  # shared with test services
            ("swebounty_e2e.py", "swebounty.node", "e2e_plugin.py"),
        )
    }
    return published(texts, cache_dir / "node" / "e2e-tools")


def e2e_spec() -> EnvSpec:
    return EnvSpec(install=E2E_PACKAGES, install_project=False, cutoff=E2E_CUTOFF)


def run_e2e(
    task: Task,
    patch: str,
    ctx: EvalContext,
    node_env: NodeTaskEnv,
    workspace: Path,
    out_dir: Path,
    log_dir: Path,
    result: TestRun,
) -> None:
    spec = task.env_spec
    if spec is None or not spec.app_cmd or not spec.app_port:
        result.error = "an e2e task needs env_spec.app_cmd and env_spec.app_port"
        return
    chromium = find_chromium()
    if chromium is None:
        result.error = "no Chromium for the browser tests: apt-get install chromium"
        return
    files = test_files(task.test_patch, expected=task.FAIL_TO_PASS + task.PASS_TO_PASS)
    result.test_files = files
    if not files:
        result.error = "the task's test patch adds no pytest file for the browser tests"
        return

    # The browser tests' Python environment, built like any task's (and shared by all).
    scratch = out_dir.parent
    empty = scratch / "e2e-project"
    empty.mkdir()
    tools_task = Task(instance_id="e2e-tools", repo="swebounty/e2e-tools",
                      base_commit="0" * 40, env_spec=e2e_spec())  # fmt: skip
    py_spec = ctx.envs.spec_for(tools_task, empty, None)
    py_env = ctx.envs.ensure(py_spec, empty)
    py_task_env = ctx.envs.for_task(py_env, empty, scratch / "e2e-layer")
    tools = tools_dir(ctx.cache_dir)
    services = _services(task, ctx, scratch, py_env.path)

    artifacts = out_dir / "artifacts"
    artifacts.mkdir()
    python = py_task_env.test_prefix[0]
    guard_dir = scratch / "guard"
    guard_dir.mkdir(mode=0o755)
    guarded = runner_argv(python, guard_dir / "config.json")
    argv = [python, str(tools / "e2e_driver.py"), "--port", str(spec.app_port),
            "--app-log", str(out_dir / "app.log"), "--ready-s", str(APP_READY_S),
            "--", *spec.app_cmd, "--pytest", *guarded]  # fmt: skip
    variables = {
        **py_task_env.env,
        **node_env.variables,
        "PATH": f"{node_env.variables['PATH']}:{py_task_env.env['PATH']}",
        "PYTHONPATH": str(tools),
        "SWEBOUNTY_CHROMIUM": str(chromium),
        "SWEBOUNTY_ARTIFACTS": str(artifacts),
    }
    mounts = [Mount(path=p) for p in [*node_env.ro_paths, *py_task_env.ro_paths, tools]]
    mounts += [Mount(path=p) for p in (GUARD_DIR, guard_dir)]
    mounts += [Mount(path=p, writable=True) for p in [*py_task_env.rw_paths, out_dir]]
    key = new_key()
    with ctx.lease() as sandbox:
        junit = JUNIT_IN_SANDBOX if sandbox.isolated else scratch / "junit.xml"
        config = _guard_config(patch, workspace, files, result.test_infra_reverted, junit,
                               [*py_task_env.ro_paths, tools])  # fmt: skip
        write_config(guard_dir / "config.json", config)
        sandbox.prepare_workdir(scratch)
        argv, variables = services.attach(sandbox, argv, variables, mounts)
        # Chromium reserves terabytes of address space: no RLIMIT_AS (the memory cgroup stays).
        update = {"env": variables, "limit_address_space": False, **services.network()}
        run = sandbox.run(argv, workdir=workspace, mounts=mounts, stdin=key, result_channel=True,
                          policy=ctx.policy.model_copy(update=update))  # fmt: skip
    services.keep_logs(log_dir)
    result.services = services.uses()
    text = f"$ {' '.join(argv)}\n{run.stdout}\n--- stderr ---\n{run.stderr}"
    (log_dir / "test_output.txt").write_text(text, encoding="utf-8", errors="replace")
    result.exit_code = run.returncode
    # out_dir was the sandbox's to write: read link-free, as regular files, bounded (safefs).
    for name in ("app.log",):
        data = safefs.read_beneath(out_dir, name, 64 << 20)
        if data is not None:
            (log_dir / name).write_bytes(data)
    copy_artifacts(artifacts, log_dir / "artifacts")
    if run.returncode == APP_DID_NOT_ANSWER and not run.channel:
        result.error = (
            f"the app ({' '.join(spec.app_cmd)}) did not answer on port {spec.app_port} within "
            f"{APP_READY_S:.0f} s; see {log_dir / 'app.log'}"
        )
        if services:
            names = ", ".join(f"service-{b.service.name}.log" for b in services.built)
            result.error += f"; or a test service did not answer on its port (see {names})"
        return
    from swebounty.frameworks.pytest import read_results  # it imports the evaluation path

    crash = read_results(ctx, run, key, log_dir, result, workspace)
    if run.timed_out:
        result.timed_out = True
        result.error = f"tests timed out after {ctx.policy.timeout_s:.0f} s"
    elif crash and not result.failure:
        result.error = f"no test result: {crash}"


def _guard_config(
    patch: str, workspace: Path, files: list[str], reverted: list[str], junit: Path,
    trusted: list[Path],
) -> dict[str, object]:  # fmt: skip
    """What the guarded runner needs (pytest_guard.runner_config's, for browser tests): the
    fixtures' plugin first, and the files the patch brought (the app's) untrusted."""
    kept = set(reverted) | set(files)
    return {
        "workspace": str(workspace),
        "infra": infra_manifest(workspace),
        "self_hosted": False,
        "untrusted_files": [str(workspace / p) for p in files_in_patch(patch) if p not in kept],
        "junit": str(junit),
        "args": relocated(["-p", "swebounty_e2e", *pytest_command([], files, junit)], junit),
        "trusted_dirs": [str(p) for p in trusted],
        "own_dirs": [],
        "trust_entry_points": True,
        "tmp_files": {},
    }


def _services(task: Task, ctx: EvalContext, scratch: Path, tests_env: Path) -> StandIns:
    """The test services of the task (its own `requires`, its repository's), built."""
    wanted, data = for_task(task, ctx.envs.overrides, shipped_catalog(), None)
    return build(wanted, ctx.envs, scratch, tests_env=tests_env, data=data)


def copy_artifacts(src: Path, dest: Path, limit_bytes: int = 64 << 20) -> list[str]:
    """Copy regular files (no links, none reached through one) from a sandbox-written dir into
    the logs, bounded in bytes and in the entries walked."""
    copied: list[str] = []
    total = 0
    if not src.is_dir() or src.is_symlink():
        return copied
    try:
        found = sorted(safefs.walk_files(src, max_entries=100_000))
    except safefs.UnsafePathError:
        return copied
    for rel, info in found:
        if not stat.S_ISREG(info.st_mode) or total + info.st_size > limit_bytes:
            continue
        data = safefs.read_beneath(src, rel, limit_bytes - total)
        if data is None:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        total += len(data)
        copied.append(rel)
    return copied
