"""Test services at run time: their environments, and the test command that runs them beside
the tests, in the tests' sandbox.

`build` gives each declared service its environment: an ordinary cached swebounty environment
of the service's exact pins on its own interpreter, resolved with the index as of the catalog's
date, built once and shared (nothing of the task's environment, which may be Python 2012's).
`StandIns.wrap` puts the driver (driver.py, the same one the e2e tasks' app runs under) in
front of the test command, once per service: inside the sandbox the driver starts the service
on the loopback, waits for its port, runs the tests and stops it. The service's environment
and the driver are mounted read-only; the service runs from its environment's folder with `-I`
and a clean environment, so nothing of the workspace (the submission's files) is on its path.
Its log is the one thing it writes outside the sandbox's private /tmp.
"""

from __future__ import annotations

import functools
import socket
from dataclasses import dataclass
from pathlib import Path

from swebounty import safefs
from swebounty.envs import Environment, EnvManager
from swebounty.sandbox.base import Mount, RunResult, Sandbox
from swebounty.services.catalog import Catalog, Service, load_catalog
from swebounty.services.models import ServiceUse
from swebounty.tasks import EnvSpec

DRIVER = Path(__file__).resolve().with_name("driver.py")
APP_DID_NOT_ANSWER = 90  # driver.py's exit code when a service never answered
LOG_LIMIT = 16 << 20


@functools.lru_cache(maxsize=1)
def shipped_catalog() -> Catalog:
    return load_catalog()


def service_spec(service: Service) -> EnvSpec:
    """The service's environment: its pins on its interpreter, as of its date; no project."""
    return EnvSpec(python=service.python, install=list(service.packages),
                   install_project=False, cutoff=service.cutoff)  # fmt: skip


@dataclass
class Built:
    service: Service
    env: Environment
    port: int = 0  # chosen by wrap()


@dataclass
class StandIns:
    """The services of one test run, built; `wrap` says how they run beside the tests."""

    built: list[Built]
    logs: Path  # the folder their logs go to (the sandbox's to write)

    def __bool__(self) -> bool:
        return bool(self.built)

    def wrap(self, argv: list[str], *, isolated: bool) -> list[str]:
        """`argv` run under one driver per service (the first declared outermost). In a
        sandbox of its own the network namespace is new, so the catalog's port is free; with
        --unsafe, services of runs side by side share the host's loopback: a free one."""
        for b in self.built:
            b.port = b.service.port if isolated else _free_port()
        for b in reversed(self.built):
            python = str(b.env.python)
            cmd = b.service.command(python, b.port, str(DRIVER.parent))
            clean = ["/usr/bin/env", "-i", f"PATH={b.env.path / 'bin'}:/usr/bin:/bin",
                     "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "LC_ALL=C.UTF-8"]  # fmt: skip
            argv = [python, "-I", str(DRIVER), "--port", str(b.port),
                    "--app-log", str(self.logs / f"{b.service.name}.log"),
                    "--app-cwd", str(b.env.path), "--ready-s", str(b.service.ready_s),
                    "--", *clean, cmd[0], "-I", *cmd[1:], "--pytest", *argv]  # fmt: skip
        return argv

    def attach(
        self, sandbox: Sandbox, argv: list[str], env: dict[str, str], mounts: list[Mount]
    ) -> tuple[list[str], dict[str, str]]:
        """The test command and its variables with the services beside it (`mounts` gets
        theirs); unchanged without services."""
        if not self.built:
            return argv, env
        sandbox.prepare_workdir(self.logs)
        argv = self.wrap(argv, isolated=sandbox.isolated)
        mounts += self.mounts()
        return argv, {**env, **self.variables()}

    def explain(self, crash: str | None, run: RunResult) -> str | None:
        """A run without results whose driver said a service never answered. Still a crash
        for baseline.py to attribute: the tests could exit with that code too."""
        if crash and self.built and run.returncode == APP_DID_NOT_ANSWER and not run.channel:
            names = ", ".join(f"service-{b.service.name}.log" for b in self.built)
            crash += f"; a test service may not have answered on its port (see {names})"
        return crash

    def variables(self) -> dict[str, str]:
        """What the tests are told (call after `wrap`: the ports are chosen there)."""
        found: dict[str, str] = {}
        for b in self.built:
            found.update(b.service.variables(b.port))
        return found

    def mounts(self) -> list[Mount]:
        paths = {DRIVER.parent} | {p for b in self.built for p in (b.env.path,
                                                                     b.env.interpreter_prefix)}  # fmt: skip
        return [Mount(path=p) for p in sorted(paths)] + [Mount(path=self.logs, writable=True)]

    def uses(self) -> list[ServiceUse]:
        """What the verdict records: which services stood in, and which versions."""
        return [
            ServiceUse(
                name=b.service.name,
                version=b.service.version,
                packages=list(b.service.packages),
                python=b.env.interpreter,
                env_key=b.env.key,
                url=f"http://127.0.0.1:{b.port}/" if b.port else "",
                env=b.service.variables(b.port) if b.port else {},
            )
            for b in self.built
        ]

    def keep_logs(self, log_dir: Path) -> None:
        """Copy the services' logs (written in the sandbox: read link-free, bounded)."""
        for b in self.built:
            name = f"{b.service.name}.log"
            data = safefs.read_beneath(self.logs, name, LOG_LIMIT)
            if data is not None:
                (log_dir / f"service-{name}").write_bytes(data)


def build(services: list[Service], envs: EnvManager, scratch: Path) -> StandIns:
    """Each service's environment (built once per cache, then shared), and a folder for their
    logs under `scratch`. Raises EnvBuildError when one cannot be built: the tests would fail
    for want of it, which is the harness's failure, not the submission's."""
    logs = scratch / "services"
    if not services:
        return StandIns(built=[], logs=logs)
    empty = scratch / "service-project"  # the build installs no project: nothing to read
    empty.mkdir(exist_ok=True)
    built = [Built(service=s, env=envs.ensure(service_spec(s), empty)) for s in services]
    logs.mkdir(mode=0o755)
    return StandIns(built=built, logs=logs)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
