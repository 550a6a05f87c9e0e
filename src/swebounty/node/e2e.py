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
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import stat
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from swebounty import safefs
from swebounty.envs.node_manager import NodeTaskEnv
from swebounty.report.browser import find_chromium
from swebounty.sandbox.base import Mount
from swebounty.services.catalog import for_task
from swebounty.services.runtime import StandIns, build, shipped_catalog
from swebounty.tasks import EnvSpec, Task
from swebounty.testing import (
    JUnitError,
    cross_check,
    parse_junit_bytes,
    pytest_command,
    test_files,
)

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


def tools_dir(cache_dir: Path) -> Path:
    """The driver and the pytest plugin, copied to a place the sandbox user can read."""
    texts = {
        name: resources.files(package).joinpath(src).read_text(encoding="utf-8")
        for name, package, src in (
            ("e2e_driver.py", "swebounty.services", "driver.py"),  # shared with test services
            ("swebounty_e2e.py", "swebounty.node", "e2e_plugin.py"),
        )
    }
    digest = hashlib.sha256("\0".join(texts.values()).encode()).hexdigest()[:12]
    dest = cache_dir / "node" / "e2e-tools" / digest
    if not (dest / "swebounty_e2e.py").is_file():
        tmp = dest.with_name(f".{digest}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, text in texts.items():
            (tmp / name).write_text(text, encoding="utf-8")
        tmp.chmod(0o755)
        try:
            tmp.rename(dest)
        except OSError:  # another worker got there first
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def e2e_spec() -> EnvSpec:
    return EnvSpec(install=E2E_PACKAGES, install_project=False, cutoff=E2E_CUTOFF)


def run_e2e(
    task: Task,
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
    junit = out_dir / "junit.xml"
    python = py_task_env.test_prefix[0]
    pytest_argv = pytest_command([python, "-m", "pytest", "-p", "swebounty_e2e"], files, junit)
    argv = [python, str(tools / "e2e_driver.py"), "--port", str(spec.app_port),
            "--app-log", str(out_dir / "app.log"), "--ready-s", str(APP_READY_S),
            "--", *spec.app_cmd, "--pytest", *pytest_argv]  # fmt: skip
    variables = {
        **py_task_env.env,
        **node_env.variables,
        "PATH": f"{node_env.variables['PATH']}:{py_task_env.env['PATH']}",
        "PYTHONPATH": str(tools),
        "SWEBOUNTY_CHROMIUM": str(chromium),
        "SWEBOUNTY_ARTIFACTS": str(artifacts),
    }
    mounts = [Mount(path=p) for p in [*node_env.ro_paths, *py_task_env.ro_paths, tools]]
    mounts += [Mount(path=p, writable=True) for p in [*py_task_env.rw_paths, out_dir]]
    with ctx.lease() as sandbox:
        sandbox.prepare_workdir(scratch)
        argv, variables = services.attach(sandbox, argv, variables, mounts)
        # Chromium reserves terabytes of address space: no RLIMIT_AS (the memory cgroup stays).
        update = {"env": variables, "limit_address_space": False, **services.network()}
        run = sandbox.run(argv, workdir=workspace, mounts=mounts,
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
    if run.timed_out:
        result.timed_out = True
        result.error = f"tests timed out after {ctx.policy.timeout_s:.0f} s"
        return
    if run.returncode == APP_DID_NOT_ANSWER:
        result.error = (
            f"the app ({' '.join(spec.app_cmd)}) did not answer on port {spec.app_port} within "
            f"{APP_READY_S:.0f} s; see {log_dir / 'app.log'}"
        )
        if services:
            names = ", ".join(f"service-{b.service.name}.log" for b in services.built)
            result.error += f"; or a test service did not answer on its port (see {names})"
        return
    xml = safefs.read_regular(junit, 64 << 20)
    if xml is not None:
        (log_dir / "junit.xml").write_bytes(xml)
        try:
            result.outcomes = parse_junit_bytes(xml, files=files)
        except JUnitError as exc:
            log.warning("%s: %s", task.instance_id, exc)
    problem = cross_check(run.returncode, result.outcomes or None)
    if problem and not result.outcomes:
        result.error = f"no test result: {problem}"


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
