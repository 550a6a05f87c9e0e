"""The environment manager: one object that infers, builds, caches and hands out environments.

`EnvManager.spec_for` says what a task needs (`spec.infer_spec`); `ensure` builds it once
(`build.Builder`: dependencies resolved as of the cutoff, with uv) and shares it by content;
`for_task` gives the argv and mounts that run the tests of one workspace on top of it, importing
the workspace's code (`tasklayer`); `list` and `prune` look after the cache (`cache`).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from pathlib import Path

from swebounty.envs.build import Builder
from swebounty.envs.cache import CacheLayout, dir_size, read_json, remove_tree
from swebounty.envs.complete import complete
from swebounty.envs.failures import StepFailed
from swebounty.envs.interpreters import Interpreter, discover
from swebounty.envs.models import EnvBuildError, Environment, ResolvedSpec, TaskEnv
from swebounty.envs.natives import NativeBuild, changed_inputs, ensure_native, place, rebuild_argv
from swebounty.envs.overrides import Override, load_overrides
from swebounty.envs.sources import Sources
from swebounty.envs.spec import infer_spec, literal_spec
from swebounty.envs.switches import system_library_env
from swebounty.envs.tasklayer import make_layer, packaging_digest, pip_argv, replay
from swebounty.patches import head_tree
from swebounty.tasks import EnvSpec, Task

log = logging.getLogger(__name__)


class EnvManager:
    """Infers, builds, caches and hands out environments. Safe to share between threads; any
    number of processes may use one cache_dir at once.

    `share` (default on) resolves inferred specs at `share_cutoff` first; off, every task
    resolves at its own `default_cutoff` (as a task's explicit cutoff always does)."""

    def __init__(
        self,
        cache_dir: Path,
        *,
        python_dirs: list[Path] | tuple[Path, ...] = (),
        offline: bool = False,
        overrides_path: Path | None = None,
        uv_bin: Path | None = None,
        share: bool = True,
        sources_dir: Path | None = None,
    ) -> None:
        # Sources the projects' builds would download, provided by the user (sources.py).
        self.sources_dir = Path(sources_dir) if sources_dir is not None else None
        sources = Sources(self.sources_dir) if self.sources_dir is not None else None
        self.cache = CacheLayout(Path(cache_dir), sources)
        self.uv_bin = uv_bin  # default: the binary of the `uv` package swebounty depends on
        self.python_dirs = [Path(p) for p in python_dirs]
        self.offline = offline
        self.share = share
        self.overrides: list[Override] = load_overrides(overrides_path)
        self._interpreters: list[Interpreter] | None = None
        self._guard = threading.Lock()
        self._memo: dict[str, Environment] = {}
        self._specs: dict[tuple[str | None, ...], ResolvedSpec] = {}

    @property
    def interpreters(self) -> list[Interpreter]:
        with self._guard:
            if self._interpreters is None:
                cache_file = self.cache.root / "interpreters.json"
                self._interpreters = discover(self.python_dirs, cache_file=cache_file)
            return self._interpreters

    # ------------------------------------------------------------------ spec

    def spec_for(self, task: Task, workspace: Path, commit_date: datetime | None) -> ResolvedSpec:
        """What `task` needs: its own EnvSpec fields win, then overrides.toml for its repo
        (and version range), then inference from `workspace` (a checkout of the base commit).

        Inferred once per checked-out tree (HEAD's: `workspace` is a fresh checkout), repository,
        version, EnvSpec and commit date: every evaluation of a task, and every task of one
        commit, reads the same files, and parsing them (CI workflows, setup.cfg, tox.ini) took
        20-50 ms per evaluation."""
        tree = head_tree(workspace)
        given = task.env_spec.model_dump_json(exclude_unset=True) if task.env_spec else None
        when = commit_date.isoformat() if commit_date else None
        key = (tree, task.repo, task.version, given, when)
        spec = self._specs.get(key) if tree else None
        if spec is None:
            spec = infer_spec(
                task,
                workspace,
                commit_date,
                interpreters=self.interpreters,
                overrides=self.overrides,
                share=self.share,
            )
            if tree:
                self._specs[key] = spec
        return spec.model_copy(deep=True)  # the caller's to change

    # ------------------------------------------------------------------ build

    def ensure(self, spec: EnvSpec, workspace: Path) -> Environment:
        """The built environment for `spec`, building it if needed (once, whatever the number
        of threads and processes asking). Raises EnvBuildError."""
        rspec = (
            spec
            if isinstance(spec, ResolvedSpec)
            else literal_spec(spec, workspace, self.interpreters)
        )
        env = self._builder().ensure(rspec, workspace)
        if env.project is not None and env.project.natives and env.spec.install_project:
            env = env.model_copy(update={"native": self._native(env, workspace)})
        return env

    def _native(self, env: Environment, workspace: Path) -> NativeBuild:
        """The compiled extensions of `workspace` (the unpatched base commit) in `env`."""
        assert env.project is not None
        minor = ".".join(env.interpreter.split(".")[:2])
        try:
            return ensure_native(
                self.cache,
                env_key=env.key,
                interpreter=env.interpreter_executable,
                version=env.interpreter,
                shared_site=env.path / "lib" / f"python{minor}" / "site-packages",
                pip_version=env.project.pip_version,
                version_env=env.project.version_env,
                spec_env=env.spec.env,
                workspace=workspace,
                interpreter_prefix=env.interpreter_prefix,
            )
        except StepFailed as exc:
            raise EnvBuildError(
                f"the base commit's extensions do not build here: {exc.describe()}.\n"
                f"--- tail of the build log ---\n{exc.output[-3000:]}",
                kind="build",
            ) from exc

    def complete(self, env: Environment, modules: list[str], workspace: Path) -> bool:
        """Rebuild `env`'s spec with the distributions of `modules` (what the base commit's
        skipped tests lacked; complete.py); `workspace` is a checkout of its base commit.
        True when the spec now has another environment: `ensure` returns it."""
        return complete(self._builder(), env, modules, workspace)

    def _builder(self) -> Builder:
        """A builder over this manager's cache, memo and lock (it keeps nothing else)."""
        return Builder(
            self.cache,
            self.interpreters,
            offline=self.offline,
            uv_bin=self.uv_bin,
            memo=self._memo,
            guard=self._guard,
        )

    def for_task(self, env: Environment, workspace: Path, scratch: Path) -> TaskEnv:
        """The per-task layer in `scratch` and how to run tests with it. Call it after the
        patches are applied: a patch that changes packaging files gets a real install."""
        layer = Path(scratch) / "env"
        minor = ".".join(env.interpreter.split(".")[:2])
        shared = env.path / "lib" / f"python{minor}" / "site-packages"
        python = make_layer(layer, env.interpreter_executable, env.interpreter, shared)
        setup: list[str] | None = None
        project = env.project
        if env.spec.install_project:
            same_packaging = (
                project is not None and packaging_digest(workspace) == project.packaging_digest
            )
            changed = changed_inputs(env.native, workspace) if env.native else []
            if env.native is not None and same_packaging:
                place(env.native, workspace, changed)  # rebuilt below if the patch changed it
            if (
                project is not None
                and project.mode == "pth"
                and env.project_store is not None
                and same_packaging
                and not changed
                and (env.native is not None or not project.natives)
            ):
                replay(layer, minor, project, env.project_store, workspace)
            else:
                pip_version = project.pip_version if project else None
                editable = project.editable if project else True
                setup = pip_argv(python, workspace, pip_version, editable)
                if project and project.version_env:
                    # The workspace has no tags: give VCS-versioned builds the release the
                    # environment was resolved against, for this install only.
                    pairs = [f"{k}={v}" for k, v in project.version_env.items()]
                    setup = ["/usr/bin/env", *pairs, *setup]
                if env.native is not None and same_packaging:
                    setup = rebuild_argv(setup, env.native)
        cmd = env.spec.test_cmd or ["python", "-m", "pytest"]
        prefix = [str(python) if c in ("python", "python3") else c for c in cmd]
        variables = {
            "PATH": f"{layer / 'bin'}:{env.path / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "VIRTUAL_ENV": str(layer),
            "PYTHONNOUSERSITE": "1",
            "PIP_CONFIG_FILE": "/dev/null",
            "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
            "MPLBACKEND": "Agg",  # old matplotlib defaults to a GUI backend and fails headless
            # The tests see the release the environment was resolved against, as the install
            # does: a project that asks git for its version at import (astropy's
            # _dev/scm_version.py) got 0.1.dev1 from the workspace's one untagged commit, and
            # pytest-astropy-header then imported astropy 2's plugins (every test erred).
            **(project.version_env if project else {}),
            # An install in the sandbox builds against the system's libraries (switches.py).
            **(system_library_env(workspace, layer) if setup is not None else {}),
            **env.spec.env,
        }
        return TaskEnv(
            setup_argv=setup,
            test_prefix=prefix,
            ro_paths=[env.path, env.interpreter_prefix],
            rw_paths=[layer],
            env=variables,
        )

    # ------------------------------------------------------------------ housekeeping

    def list(self) -> list[Environment]:
        """Every complete environment in the cache, with its size on disk."""
        found: list[Environment] = []
        for d in sorted((self.cache.root / "envs").iterdir()):
            data = read_json(d / "ready.json")
            if data is None:
                continue
            try:
                # Stored specs are ResolvedSpecs; EnvSpec alone would refuse their fields.
                data["spec"] = ResolvedSpec.model_validate(data.get("spec", {}))
                found.append(Environment.model_validate(data))
            except ValueError:
                log.warning("unreadable environment record in %s", d)
        return found

    def prune(self, keep_keys: set[str] | None = None) -> int:
        """Remove environments whose key is not in keep_keys, dead builds and remembered
        failures; with keep_keys None, everything. Returns the bytes freed. Builds in progress
        are left alone. With a keep set, spec records stay (a few KB each): their locks rebuild
        a pruned environment identically, without resolving again."""
        freed = 0
        for d in sorted((self.cache.root / "envs").iterdir()):
            if keep_keys is not None and d.name in keep_keys and (d / "ready.json").exists():
                continue
            with self.cache.try_lock(f"env-{d.name}") as free:
                if free:  # else it is being built right now
                    freed += remove_tree(d)
        for d in sorted((self.cache.root / "specs").iterdir()):
            (d / "failed.json").unlink(missing_ok=True)
            if keep_keys is None:
                with self.cache.try_lock(f"spec-{d.name}") as free:
                    if free:
                        freed += remove_tree(d)
        with self._guard:
            self._memo = {k: v for k, v in self._memo.items() if v.path.exists()}
        return freed

    def size(self, env: Environment) -> int:
        return dir_size(env.path.parent)
