"""Installed agents: an open-source agent's pinned PyPI release, run unchanged in the sandbox.

An `InstalledAgent` is a `command` agent whose command the harness writes: the agent's package,
installed by uv into a cached environment of its own (never the task's: its dependencies must
not leak into the code under test), is run by a short runner (agents/tools/run_<agent>.py) in
the workspace, in the sandbox, pointed at the model proxy the way that agent is configured.
The runner leaves the agent's own trajectory file in $SWEBOUNTY_OUTPUT and its exit status in
`agent_exit.json`; both go into the attempt. Everything else (the model proxy, the budget, the
skip and error rules, the diff as the submission) is the command agent's.

A subclass names its package, pinned version, runner and trajectory file; `AGENTS` in
agents/__init__.py maps its name to it. The environment lives under `agents_dir` (the run's
cache: the sandbox's uid can read it), keyed by the requirement, the runner and the Python.
The Python is /usr/bin/python3 unless the agent needs another (`requires_python`): then the
oldest interpreter here that it supports (pyenv's, under root's 700 home, is mounted for the
sandbox's uid like a task environment's interpreter).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from swebounty.agents.base import AgentResult
from swebounty.agents.command import CommandAgent, CommandConfig
from swebounty.agents.session import Session
from swebounty.envs.failures import tls_refused
from swebounty.envs.steps import SYSTEM_CERTS
from swebounty.safefs import read_regular
from swebounty.tasks import Task

log = logging.getLogger(__name__)

AGENT_PYTHON = Path("/usr/bin/python3")  # world-readable, so the sandbox's uid can run it
INSTALL_TIMEOUT_S = 1800.0
EXIT_FILE = "agent_exit.json"


class AgentInstallError(RuntimeError):
    """The agent's package did not install on this machine (the message says why)."""


class InstalledConfig(CommandConfig):
    command: str = Field("", description="written by the harness: the agent's runner")
    agents_dir: Path = Field(description="where agent environments are cached (readable)")
    version: str | None = Field(None, description="the release to install (default: pinned)")
    python: Path | None = Field(
        None, description="the agent environment's interpreter (default: see agent_python)"
    )
    settings: dict[str, Any] = Field(
        default_factory=dict, description="the agent's own settings, passed to its runner"
    )


class InstalledAgent(CommandAgent):
    """Subclasses set these; `settings_for` turns the config into what the runner reads."""

    package: ClassVar[str]
    pinned: ClassVar[str]
    runner: ClassVar[str]  # file name under agents/tools/
    trajectory_file: ClassVar[str]  # what the runner leaves in $SWEBOUNTY_OUTPUT
    requires_python: ClassVar[str | None] = None  # a specifier, when /usr/bin/python3 won't do
    requires_model: ClassVar[bool] = True
    installs: ClassVar[bool] = True  # `run` gives it an agents_dir under the cache

    config: InstalledConfig

    def __init__(
        self, config: InstalledConfig, env_dir: Path, version: str, python_home: Path
    ) -> None:
        self.env_dir, self.version = env_dir, version
        # Named through a variable: the environment is the harness's own mount (under the
        # cache), not a path the user's command names.
        env = "$SWEBOUNTY_AGENT_ENV"
        command = f'"{env}/venv/bin/python" -I "{env}/{self.runner}"'
        super().__init__(config.model_copy(update={"command": command}))
        self.harness_mounts = [env_dir]
        # The interpreter's folder, unless the sandbox has it (/usr): a mount like the user's,
        # which `run` checks against what the agent must not see (the store, the data).
        self.python_mounts = [] if python_home.is_relative_to("/usr") else [python_home]
        self.env_vars = {
            "SWEBOUNTY_AGENT_ENV": str(env_dir),
            "SWEBOUNTY_AGENT_SETTINGS": json.dumps(self.settings_for(config)),
        }

    @classmethod
    def create(cls, options: dict[str, Any], tasks: Sequence[Task]) -> InstalledAgent:
        config = InstalledConfig.model_validate(options)
        if cls.requires_model and not (config.base_url and config.model):
            raise ValueError(f"{cls.name} needs a model: give --model and --base-url")
        requirement = f"{cls.package}=={config.version or cls.pinned}"
        runner = (resources.files("swebounty.agents") / "tools" / cls.runner).read_bytes()
        python = config.python or agent_python(cls.name, cls.requires_python)
        env_dir = install(config.agents_dir, cls.name, requirement, runner, cls.runner, python)
        version, python_home = installed_version(env_dir, cls.package)
        agent = cls(config, env_dir, version, python_home)
        CommandAgent.create(agent.config.model_dump(), tasks)  # the command agent's checks
        return agent

    def mounts(self) -> list[Path]:
        return [*super().mounts(), *self.python_mounts]

    def settings_for(self, config: InstalledConfig) -> dict[str, Any]:
        return dict(config.settings)

    def _result(self, session: Session, run: Any, proxy: Any) -> AgentResult:
        result = super()._result(session, run, proxy)
        raw = read_regular(session.output_dir / self.trajectory_file, 64 << 20)
        exit_info = _json(read_regular(session.output_dir / EXIT_FILE, 1 << 20))
        events = self.trajectory(raw) if raw else []
        end = result.trajectory.pop()  # the command agent's "end" event stays last
        result.trajectory += [{"type": "agent_trajectory", "agent": self.name, **e} for e in events]
        if isinstance(exit_info, dict):
            result.trajectory.append({"type": "agent_exit", **exit_info})
            status = str(exit_info.get("exit_status") or "")[:100]
            if status and result.stop_reason in ("submit", "skip", "crash"):
                result.stop_reason = f"{result.stop_reason}:{status}"
        end.update(reason=result.stop_reason)
        result.trajectory.append(end)
        return result

    def trajectory(self, raw: bytes) -> list[dict[str, Any]]:
        """The agent's own trajectory file as events (default: one event holding it all)."""
        data = _json(raw)
        return [{"file": self.trajectory_file, "content": data}] if data is not None else []

    def provenance(self) -> dict[str, Any]:
        record = super().provenance()
        record.update(
            agent=self.name,
            package=self.package,
            version=self.version,
            command=None,
            agent_sha256=self.env_dir.name.rsplit("-", 1)[-1],
            settings=self.config.settings,
        )
        return record


def _json(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def install(
    root: Path, name: str, requirement: str, runner: bytes, runner_name: str, python: Path
) -> Path:
    """The agent's environment (installing it once, under a lock): `root/<name>-<key>`."""
    from uv import find_uv_bin

    uv = find_uv_bin()
    key = hashlib.sha256(
        b"\0".join([requirement.encode(), runner, str(python).encode(), uv.encode()])
    ).hexdigest()[:16]
    dest = root / f"{name}-{key}"
    if (dest / ".complete").exists():
        return dest
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    with open(root / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (dest / ".complete").exists():
            return dest
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(mode=0o755)
        log.info("installing %s into %s", requirement, dest)
        env = dict(os.environ)
        for argv in (
            [uv, "venv", "-q", "-p", str(python), str(dest / "venv")],
            [uv, "pip", "install", "-q", "--compile-bytecode", "-p",
             str(dest / "venv" / "bin" / "python"), requirement],
        ):  # fmt: skip
            try:
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=env
                )
                if done.returncode and tls_refused(done.stderr) and SYSTEM_CERTS.keys() - env:
                    # As environment builds do (envs/steps.Uv.run): uv's own roots were
                    # refused; the system's store is what this machine trusts.
                    env.update(SYSTEM_CERTS)
                    done = subprocess.run(
                        argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=env
                    )
            except subprocess.TimeoutExpired as exc:
                raise AgentInstallError(f"installing {requirement} took too long") from exc
            if done.returncode != 0:
                raise AgentInstallError(
                    f"{requirement} does not install here with {python}: "
                    f"{done.stderr.strip()[-1500:]}"
                )
        (dest / runner_name).write_bytes(runner)
        subprocess.run(["chmod", "-R", "a+rX", str(dest)], check=True)
        (dest / ".complete").write_text(requirement)
    return dest


def agent_python(name: str, requires: str | None) -> Path:
    """/usr/bin/python3, or the oldest interpreter here that satisfies `requires`."""
    if requires is None:
        return AGENT_PYTHON
    from packaging.specifiers import SpecifierSet

    from swebounty.envs.interpreters import discover

    spec = SpecifierSet(requires)
    found = [i for i in discover() if spec.contains(i.version)]
    if not found:
        raise AgentInstallError(
            f"{name} needs Python {spec} and none is installed here: install one "
            "(pyenv install 3.12, uv python install 3.12) or give its path with "
            "--option python=/path/to/python3.12"
        )
    return min(found, key=lambda i: i.minor).executable


def installed_version(env_dir: Path, package: str) -> tuple[str, Path]:
    """The version of `package` in the agent's environment, as it says, and the folder of the
    environment's interpreter (its base prefix: the sandbox mounts it)."""
    python = env_dir / "venv" / "bin" / "python"
    code = (
        "import importlib.metadata as m, sys; print(sys.base_prefix); print(m.version(sys.argv[1]))"
    )
    try:
        done = subprocess.run(
            [str(python), "-I", "-c", code, package], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise AgentInstallError(f"the environment {env_dir} does not run: {exc}") from exc
    lines = done.stdout.splitlines()
    if not lines:
        raise AgentInstallError(
            f"the environment {env_dir} does not run: {done.stderr.strip()[-500:]} "
            f"(remove the folder to install it again)"
        )
    version = lines[1].strip() if done.returncode == 0 and len(lines) > 1 else "unknown"
    return version, Path(lines[0].strip())
