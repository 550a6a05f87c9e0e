"""What every environment test does around its own checks: build a small project's environment
as of a date, and run its `tests/` folder there (the per-task layer's setup first, if any)."""

from __future__ import annotations

import subprocess
from datetime import datetime
from pathlib import Path

from swebounty.envs import Environment, EnvManager, TaskEnv
from swebounty.tasks import Task


def build_env(
    manager: EnvManager, ws: Path, when: datetime, instance_id: str, repo: str, **task: str
) -> Environment:
    """The environment of a task on the checkout `ws` (its HEAD) at cutoff `when`."""
    spec = Task(instance_id=instance_id, repo=repo, base_commit="HEAD", **task)
    return manager.ensure(manager.spec_for(spec, ws, when), ws)


def run_tests(tenv: TaskEnv, ws: Path) -> str:
    """Run `ws`'s tests/ with `tenv` and assert they pass; pytest's output."""
    if tenv.setup_argv:
        subprocess.run(tenv.setup_argv, cwd=ws, env=tenv.env, check=True, capture_output=True)
    proc = subprocess.run(
        [*tenv.test_prefix, "-q", "-p", "no:cacheprovider", "tests"],
        cwd=ws,
        env=tenv.env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def tls_refusing_uv(path: Path, calls: Path, *, log: str = "$*", before: str = "") -> Path:
    """A stand-in for uv behind a TLS-intercepting proxy, written to `path`: it appends
    `$UV_SYSTEM_CERTS <log>` to `calls`, runs the shell lines `before`, then succeeds (printing
    `ok`) with UV_SYSTEM_CERTS=1 and otherwise fails as uv does when its bundled roots refuse
    the index's certificate."""
    path.write_text(
        "#!/bin/sh\n"
        f'echo "$UV_SYSTEM_CERTS {log}" >> {calls}\n'
        f"{before}"
        'if [ "$UV_SYSTEM_CERTS" = 1 ]; then echo ok; exit 0; fi\n'
        "echo 'error: Failed to fetch: https://pypi.org/simple/six/' >&2\n"
        "echo '  cause: client error (Connect)' >&2\n"
        "echo '  cause: invalid peer certificate: UnknownIssuer' >&2\n"
        "exit 2\n"
    )
    path.chmod(0o755)
    return path
