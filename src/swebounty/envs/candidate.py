"""One candidate environment of a build, on one interpreter: from a lock (or a plan to resolve)
to an installed environment, the project installed over it the way each task will, and the
base commit's tests collected in it (probe.py).

build.Builder makes the first candidate from the lock it resolved; repair.py asks for more
(`candidate`) when collection says the environment is incomplete, and `settle` makes the one
chosen the one whose project metadata the spec keeps.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from swebounty.envs import buildcopy, natives
from swebounty.envs.cache import SCHEMA, CacheLayout, digest
from swebounty.envs.environment import install_env
from swebounty.envs.interpreters import Interpreter
from swebounty.envs.models import DepSet, ResolvedSpec
from swebounty.envs.probe import Probe, own_roots, probe
from swebounty.envs.repair import Built, notes
from swebounty.envs.resolve import resolve_lock
from swebounty.envs.steps import Uv, isolated_env, pinned
from swebounty.envs.tasklayer import ProjectInstall, install_and_capture, packaging_digest


def probing(spec: ResolvedSpec) -> bool:
    """Collection is checked for pytest-run tests (another runner collects otherwise)."""
    return spec.test_cmd is None or any("pytest" in part for part in spec.test_cmd)


class Candidates:
    """Makes candidate environments for one spec on one interpreter, at the cutoff `used`."""

    def __init__(
        self,
        cache: CacheLayout,
        interp: Interpreter,
        spec: ResolvedSpec,
        used: datetime | None,
        tmp: Path,
        sdir: Path,
        uvr: Uv,
        pristine: set[str] | None,
        version_env: dict[str, str],
        workspace: Path,
    ) -> None:
        self.cache, self.interp, self.spec, self.used = cache, interp, spec, used
        self.tmp, self.sdir, self.uvr, self.pristine = tmp, sdir, uvr, pristine
        self.version_env, self.workspace = version_env, workspace
        self.last_key = ""
        # An environment whose build of the tree may be placed here too (complete.py: the one
        # a completion replaces, when the new lock keeps every pin of its and only adds).
        self.natives_from: str | None = None

    def make(self, lock: str, plan: int | None = None) -> Built:
        """Install `lock` (once per cache), the project over it, and probe when the spec's
        tests are pytest's."""
        env_key = digest({"schema": SCHEMA, "python": self.interp.version, "lock": lock})
        install_env(self.cache, env_key, self.interp, lock, self.spec, self.used, self.uvr)
        info = self._install_project(env_key, lock) if self.spec.install_project else None
        self.last_key = env_key
        found = self._probe(env_key) if probing(self.spec) else Probe()
        return Built(lock=lock, env_key=env_key, info=info, probe=found)

    def candidate(self, plan: DepSet, adds: list[str], excludes: list[str]) -> Built:
        """Resolve `plan` without `excludes` at the same cutoff, then `make` it. Raises
        StepFailed."""
        trial = self.spec.model_copy(
            update={"plans": [plan], "share_cutoff": None, "cutoff": self.used}
        )
        lock, label, _, _ = resolve_lock(
            self.uvr, self.interp, trial, self.tmp, shared=False, excludes=excludes
        )
        built = self.make(notes(adds, excludes) + lock)
        built.label = label
        return built

    def settle(self, best: Built) -> Built:
        """`best`, with the project metadata in the spec's store its own (a later candidate
        may have replaced it)."""
        if best.env_key != self.last_key and self.spec.install_project:
            best.info = self._install_project(best.env_key, best.lock)
            self.last_key = best.env_key
        return best

    def _site(self, env_key: str) -> Path:
        venv = self.cache.env_dir(env_key) / "venv"
        return venv / "lib" / f"python{self.interp.minor_str}" / "site-packages"

    def _install_project(self, env_key: str, lock: str) -> ProjectInstall:
        env = isolated_env({"PIP_NO_INDEX": "1", "HOME": str(self.tmp), **self.spec.env})
        # The tree's extensions already built in this environment (natives.py): placed first,
        # an in-place build (setup.py develop) finds them up to date and compiles nothing.
        ready = None
        for key in dict.fromkeys(k for k in (env_key, self.natives_from) if k):
            ready = natives.built(
                self.cache, env_key=key, workspace=self.workspace, version_env=self.version_env
            )
            if ready is not None:
                break
        if ready is not None:
            natives.place(ready, self.tmp / "project", [])
        info = install_and_capture(
            self.tmp / "project",
            layer=self.tmp / "layer",
            interpreter=self.interp.executable,
            version=self.interp.version,
            shared_site=self._site(env_key),
            pip_version=pinned(lock, "pip"),
            store=self.sdir / "meta",
            env=env,
            log_path=self.uvr.log_path,
            before=self.pristine,
            interpreter_prefix=self.interp.prefix,
        )
        info.version_env = self.version_env
        if ready is not None:  # placed, so not built by this install: still the project's
            info.natives = sorted({*info.natives, *ready.natives})
            info.generated = sorted({*info.generated, *ready.generated})
        # The build copy's packaging files may differ (buildcopy): a task's workspace is
        # compared with the base commit's own.
        info.packaging_digest = packaging_digest(self.workspace)
        return info

    def _probe(self, env_key: str) -> Probe:
        project = self.tmp / "project"
        if self.spec.install_project:
            python = self.tmp / "layer" / "bin" / "python"
        else:
            if not project.exists():  # collecting writes bytecode: never in the workspace
                buildcopy.copy_project(self.workspace, project)
            python = self.cache.env_dir(env_key) / "venv" / "bin" / "python"
        env = isolated_env({"HOME": str(self.tmp), "MPLBACKEND": "Agg", **self.spec.env})
        site = self._site(env_key)
        reads = [self.interp.prefix, self.cache.env_dir(env_key) / "venv", self.tmp / "layer"]
        return probe(python, project, [site], own_roots(project), env, self.uvr.log_path,
                     reads=reads)  # fmt: skip
