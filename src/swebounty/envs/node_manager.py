"""Node environments for tasks: spec inference, the shared cache, and the per-task view.

`NodeEnvs.spec_for` reads the workspace at the base commit (see `project.py`) and picks the Node
release (`versions.choose`), the package manager and its version; `ensure` builds or finds the
environment (`build.py`); `for_task` links the shared `node_modules` into one workspace and
says how to run its tests in the sandbox. Same cache root and commands as Python environments
(`swebounty envs list/build/prune` show both kinds).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from pathlib import Path

from swebounty.envs.node_build import NodeBuildError, NodeCache, NodeEnvironment, NodeSpec
from swebounty.envs.node_project import NodeProject, read_project
from swebounty.envs.node_scripts import RunnerCall
from swebounty.envs.node_semver import parse_version
from swebounty.envs.node_versions import (
    Constraints,
    NodeVersionError,
    available_versions,
    choose,
    npm_for,
    registry_times_are_real,
    system_node,
)
from swebounty.envs.node_workspaces import (
    NESTED,
    has_project_links,
    is_monorepo,
    link_modules,
    nested_packages,
)
from swebounty.envs.projectfiles import read_head
from swebounty.tasks import Task

log = logging.getLogger(__name__)

_PNPM_FOR_LOCKFILE = [(5.4, "6.35.1"), (6.0, "7.33.7"), (9.0, "8.15.9"), (99.0, "9.15.9")]
DEFAULT_YARN1 = "1.22.22"
DEFAULT_YARN_BERRY = "3.8.7"


@dataclass
class NodeTaskEnv:
    """How to run one task's tests in its workspace (the Node analogue of `TaskEnv`)."""

    env: NodeEnvironment
    runner: RunnerCall | None
    ro_paths: list[Path]
    variables: dict[str, str]


def commit_cutoff(commit_date: datetime) -> datetime:
    """Midnight (UTC) after the day following the commit, as for Python environments."""
    when = commit_date if commit_date.tzinfo else commit_date.replace(tzinfo=timezone.utc)
    day = when.astimezone(timezone.utc).date() + timedelta(days=2)
    return datetime.combine(day, time(0), tzinfo=timezone.utc)


class NodeEnvs:
    """Infers, builds and hands out Node environments; safe to share between threads."""

    def __init__(self, cache_dir: Path, *, offline: bool = False) -> None:
        self.cache = NodeCache(Path(cache_dir), offline=offline)
        self.offline = offline
        self._guard = threading.Lock()
        self._versions: list[tuple[int, int, int]] | None = None
        self._system = system_node()
        self._times_real: bool | None = None

    def versions(self) -> list[tuple[int, int, int]]:
        with self._guard:
            if self._versions is None:
                cache_file = self.cache.root / "node-versions.json"
                self._versions = available_versions(cache_file, offline=self.offline)
                # Offline with no list yet: the Node builds already in the cache still count.
                for d in (self.cache.root / "dist").iterdir():
                    if re.match(r"^\d+\.\d+\.\d+$", d.name) and (d / "bin" / "node").exists():
                        self._versions.append(parse_version(d.name))
            return self._versions

    def spec_for(
        self, task: Task, workspace: Path, commit_date: datetime | None
    ) -> tuple[NodeSpec, NodeProject]:
        """The environment a task needs, from its workspace at the base commit."""
        try:
            project = read_project(workspace)
        except ValueError as exc:
            raise NodeBuildError(f"{task.instance_id}: {exc}") from exc
        given = task.env_spec
        when = commit_date or datetime.now(timezone.utc)
        constraints = project.constraints
        if given and given.node:
            constraints = Constraints(pinned=given.node)
        system = self._system[1] if self._system else None
        why = list(project.why)
        cutoff: datetime | None = given.cutoff if given and given.cutoff else commit_cutoff(when)
        era = when
        if not project.lockfile and not self.times_are_real():
            # No lockfile and no time travel: the dependencies will be today's releases within
            # package.json's ranges, so Node is today's too (within the repo's constraints).
            # The CI matrix said what the project was tested on then, not what today's
            # releases need; engines and .nvmrc still bind.
            cutoff, era = None, datetime.now(timezone.utc)
            constraints = Constraints(pinned=constraints.pinned, engines=constraints.engines)
            why.append("no lockfile and the registry's publish times are not real: today's "
                       "releases within package.json's ranges, on today's Node")  # fmt: skip
        try:
            choice = choose(constraints, era, self.versions(), system)
        except NodeVersionError as exc:
            raise NodeBuildError(f"{task.instance_id}: {exc}") from exc
        manager, version = project.manager, project.manager_version
        if not version:
            version = self._default_manager_version(workspace, project, choice.version)
        spec = NodeSpec(
            node=choice.text,
            node_system=choice.system,
            manager=manager,
            manager_version=version,
            manager_hash=project.manager_hash if version == project.manager_version else None,
            lockfile=project.lockfile,
            lock_digest=project.lock_digest,
            cutoff=None if project.lockfile else cutoff,
            workspaces=is_monorepo(workspace, project.package),
            why=[*why, choice.why, f"{manager}@{version}"],
        )
        return spec, project

    def times_are_real(self) -> bool:
        with self._guard:
            if self._times_real is None:
                cache_file = self.cache.root / "registry-times-real.txt"
                self._times_real = registry_times_are_real(cache_file, offline=self.offline)
            return self._times_real

    def _default_manager_version(
        self, workspace: Path, project: NodeProject, node: tuple[int, int, int]
    ) -> str:
        if project.manager == "yarn":
            lock = workspace / "yarn.lock"
            berry = "__metadata:" in read_head(lock, workspace, 2000)
            return DEFAULT_YARN_BERRY if berry else DEFAULT_YARN1
        if project.manager == "pnpm":
            lock = workspace / "pnpm-lock.yaml"
            text = read_head(lock, workspace, 300)
            m = re.search(r"lockfileVersion:\s*'?([\d.]+)", text)
            number = float(m[1]) if m else 9.0
            return next(v for bound, v in _PNPM_FOR_LOCKFILE if number < bound)
        return npm_for(node, project.lockfile_version)

    def ensure(self, spec: NodeSpec, workspace: Path) -> NodeEnvironment:
        return self.cache.ensure(spec, workspace)

    def for_task(
        self, env: NodeEnvironment, project: NodeProject, workspace: Path, extra_env: dict[str, str]
    ) -> NodeTaskEnv:
        """Link the shared `node_modules` into `workspace` and give the sandbox's view."""
        link = workspace / "node_modules"
        nested = nested_packages(env.path)
        if nested or has_project_links(env.node_modules):
            # A monorepo: its links to its own packages must land in this workspace.
            link_modules(env.node_modules, workspace, "")
            for rel in nested:
                link_modules(env.path / NESTED / rel / "node_modules", workspace, rel)
        elif not link.exists() and not link.is_symlink():
            os.symlink(env.node_modules, link)
        runner = project.runner
        variables = {
            "PATH": f"{env.node_bin}:{workspace / 'node_modules' / '.bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "CI": "true",
            "NO_COLOR": "1",
            "FORCE_COLOR": "0",
            "NODE_OPTIONS": "",
            "npm_config_offline": "true",
            **(runner.env if runner else {}),
            **extra_env,
        }
        ro = [env.path]
        if env.node_bin.parent.parent == self.cache.root / "dist":
            ro.append(env.node_bin.parent)
        return NodeTaskEnv(env=env, runner=runner, ro_paths=ro, variables=variables)

    def list(self) -> list[NodeEnvironment]:
        return self.cache.list()

    def prune(self, keep: set[str] | None) -> int:
        return self.cache.prune(keep)
