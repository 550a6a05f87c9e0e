"""Building one spec: resolve at the cutoff, pick the interpreter that builds, install, record.

Order of fallbacks, each learnt from real repositories (shared/notes/ENVIRONMENTS.md):
- an inferred spec is resolved at its shared cutoff (the start of the base commit's month) so
  that tasks of one repository and month share an environment; each plan that does not resolve
  there is tried at the exact cutoff before the next plan, and a lock from the shared cutoff
  that fails to build (or lacks wheels) is redone at the exact cutoff on the same interpreter;
- per interpreter, newest first: the spec's dependency plans in order (tox deps, requirement
  files, fewer extras); a *resolver* conflict moves to the next plan, never to another
  interpreter (that only wastes time);
- a release yanked after the cutoff is pinned exactly to the newest release uploaded before it;
- a dependency that fails to *build*, or that has wheels for an older interpreter but not for
  this one (building numpy from source fails after minutes), moves to the next older
  interpreter.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uv as uv_package

from swebounty.envbuild import (
    StepFailed,
    Uv,
    advice,
    copy_project,
    isolated_env,
    log_tail,
    pinned,
    tag_release,
)
from swebounty.envcache import (
    FAILED,
    READY,
    digest,
    dir_sizes,
    read_json,
    recent_failure,
    write_json,
)
from swebounty.envresolve import resolve_lock, wheels_only_older
from swebounty.interpreters import Interpreter, find
from swebounty.tasklayer import install_and_capture

if TYPE_CHECKING:
    from swebounty.envs import Environment, EnvManager, ResolvedSpec
    from swebounty.tasklayer import ProjectInstall
    from swebounty.tasks import EnvSpec

log = logging.getLogger(__name__)

SCHEMA = 1  # bump when the layout or the build recipe changes: old keys then miss


class Builder:
    def __init__(self, manager: EnvManager) -> None:
        self.m = manager
        self.uv_bin = manager.uv_bin or Path(uv_package.find_uv_bin())

    # ------------------------------------------------------------------ entry

    def ensure(self, spec: EnvSpec, workspace: Path) -> Environment:
        from swebounty.envs import EnvBuildError, ResolvedSpec

        rspec = spec if isinstance(spec, ResolvedSpec) else self._plain(spec, workspace)
        candidates = self._candidates(rspec)
        spec_key = digest(
            {
                "schema": SCHEMA,
                "spec": rspec.model_dump(mode="json", exclude={"why"}),
                "interpreters": [str(i.executable) + "=" + i.version for i in candidates],
            }
        )
        with self.m._guard:
            memo = self.m._memo.get(spec_key)
        if memo is not None and (memo.path.parent / READY).exists():
            return memo
        sdir = self.m.cache.spec_dir(spec_key)
        env = self._from_record(spec_key, rspec)
        if env is None:
            failure = recent_failure(sdir)
            if failure:
                raise EnvBuildError(str(failure.get("message")))
            with self.m.cache.lock(f"spec-{spec_key}"):
                env = self._from_record(spec_key, rspec)
                if env is None:
                    failure = recent_failure(sdir)
                    if failure:
                        raise EnvBuildError(str(failure.get("message")))
                    env = self._build(rspec, spec_key, candidates, workspace)
        with self.m._guard:
            self.m._memo[spec_key] = env
        return env

    def _plain(self, spec: EnvSpec, workspace: Path) -> ResolvedSpec:
        """A plain EnvSpec is taken literally: no inference beyond a default interpreter."""
        from swebounty.envinfer import DepSet
        from swebounty.envs import BASE_PACKAGES, ResolvedSpec
        from swebounty.reqfiles import read_requirement_file

        notes: list[str] = []
        lines: list[str] = []
        for rel in spec.requirements:
            got, _ = read_requirement_file(workspace / rel, workspace, None, notes)
            lines += got
        python = spec.python or (self.m.interpreters[0].version if self.m.interpreters else None)
        data = spec.model_dump()
        data.update(
            python=python,
            install=list(dict.fromkeys([*spec.install, *BASE_PACKAGES])),
            plans=[DepSet(label="the EnvSpec as given", lines=lines, extras=spec.extras)],
            why=["EnvSpec taken as given", *notes],
        )
        return ResolvedSpec.model_validate(data)

    def _candidates(self, spec: ResolvedSpec) -> list[Interpreter]:
        from swebounty.envs import EnvBuildError

        found: list[Interpreter] = []
        for want in [spec.python, *spec.python_fallbacks]:
            interp = find(self.m.interpreters, want) if want else None
            if interp is not None and interp not in found:
                found.append(interp)
        if not found:
            raise EnvBuildError(
                f"Python {spec.python} is not installed here. Install it (pyenv install, "
                f"uv python install) or pass its folder with --python-dir."
            )
        return found

    # ------------------------------------------------------------------ cached

    def _from_record(self, spec_key: str, spec: ResolvedSpec) -> Environment | None:
        """The environment a previous build of this spec made, rebuilt from its lock if the
        environment itself was pruned (the same lock gives the same environment)."""
        from swebounty.envs import Environment
        from swebounty.tasklayer import ProjectInstall

        sdir = self.m.cache.spec_dir(spec_key)
        record = read_json(sdir / "record.json")
        if record is None:
            return None
        edir = self.m.cache.env_dir(record["env_key"])
        if not (edir / READY).exists():
            interp = find(self.m.interpreters, record["interpreter_executable"])
            if interp is None:
                return None
            log_path = sdir / "rebuild.log"
            log_path.write_text(f"# rebuild of {record['env_key']} from its lock\n")
            uvr = Uv(self.uv_bin, log_path, offline=self.m.offline)
            # Records written before the shared cutoff existed hold none: the spec's is theirs.
            at = record.get("cutoff")
            cutoff = datetime.fromisoformat(at) if at else spec.cutoff
            try:
                self._ensure_env(record["env_key"], interp, record["lock"], spec, cutoff, uvr)
            except StepFailed:
                return None
        data = read_json(edir / READY) or {}
        project = record.get("project")
        return Environment(
            key=record["env_key"],
            path=edir / "venv",
            python=edir / "venv" / "bin" / "python",
            interpreter=data["interpreter"],
            interpreter_prefix=Path(data["interpreter_prefix"]),
            interpreter_executable=Path(data["interpreter_executable"]),
            spec=spec,
            why=record.get("why", []),
            build_seconds=float(record.get("build_seconds", 0.0)),
            size_bytes=data.get("size_bytes"),
            own_bytes=data.get("own_bytes"),
            spec_key=spec_key,
            project=ProjectInstall.model_validate(project) if project else None,
            project_store=sdir / "meta",
            lock=record["lock"],
        )

    # ------------------------------------------------------------------ build

    def _build(
        self, spec: ResolvedSpec, spec_key: str, candidates: list[Interpreter], workspace: Path
    ) -> Environment:
        from swebounty.envs import EnvBuildError

        started = time.monotonic()
        sdir = self.m.cache.spec_dir(spec_key)
        sdir.mkdir(parents=True, exist_ok=True)
        log_path = sdir / "build.log"
        log_path.write_text(f"# swebounty build of spec {spec_key}\n", encoding="utf-8")
        uvr = Uv(self.uv_bin, log_path, offline=self.m.offline)
        why = list(spec.why)
        last: StepFailed | None = None
        with tempfile.TemporaryDirectory(prefix="swebounty-build-") as tmpdir:
            tmp = Path(tmpdir)
            project = tmp / "project"
            version_env: dict[str, str] = {}
            if spec.install_project:
                copy_project(workspace, project)
                if not self.m.offline:
                    version, version_env = tag_release(
                        project, spec.project_name, spec.vcs_tag_prefix, spec.cutoff
                    )
                    if version:
                        why.append(f"version from git tags: build copy tagged as release {version}")
            stop = False
            for idx, interp in enumerate(candidates):
                older = candidates[idx + 1 :]
                # The shared (coarser) cutoff first; whatever fails with a lock resolved at it is
                # retried once at the exact cutoff on the same interpreter, so sharing never
                # changes the interpreter or the plan the exact cutoff would have chosen.
                for shared in [True, False] if spec.share_cutoff else [False]:
                    used: datetime | None = None
                    try:
                        lock, label, used = resolve_lock(uvr, interp, spec, tmp, shared=shared)
                        why.append(f"Python {interp.version}: resolved with {label}")
                        missing = wheels_only_older(uvr, interp, older, lock, used, tmp)
                        if missing:
                            names = ", ".join(missing)
                            if used != spec.cutoff:
                                why.append(f"no wheels for {names} at the shared cutoff")
                                continue
                            why.append(
                                f"Python {interp.minor_str} has no wheels for {names} that an "
                                f"older Python has: trying {older[0].minor_str}"
                            )
                            break
                        env_key = digest({"schema": SCHEMA, "python": interp.version, "lock": lock})
                        self._ensure_env(env_key, interp, lock, spec, used, uvr)
                        info = None
                        if spec.install_project:
                            info = self._install_project(
                                env_key, interp, lock, spec, tmp, sdir, uvr
                            )
                            info.version_env = version_env
                            why.append(f"project install: {info.mode} ({info.why})")
                    except StepFailed as exc:
                        last = exc
                        if exc.kind in ("build", "python") and shared and used != spec.cutoff:
                            why.append(f"{exc.step} failed at the shared cutoff: exact cutoff")
                            continue
                        if exc.kind in ("build", "python") and older:
                            why.append(
                                f"Python {interp.minor_str}: {exc.step} failed ({exc.kind}); "
                                f"trying {older[0].minor_str}"
                            )
                            break
                        stop = True
                        break
                    record = {
                        "env_key": env_key,
                        "interpreter_executable": str(interp.executable),
                        "lock": lock,
                        "cutoff": used.isoformat() if used else None,
                        "why": why,
                        "project": info.model_dump() if info else None,
                        "build_seconds": round(time.monotonic() - started, 2),
                        "built_at": datetime.now(timezone.utc).isoformat(),
                    }
                    return self._save(spec_key, spec, record)
                if stop:
                    break
        assert last is not None
        message = (
            f"could not build the environment (spec {spec_key}): {last.step} failed "
            f"({last.kind}).\n--- tail of {log_path} ---\n{log_tail(log_path)}\n---\n"
            + advice(last.kind)
            + "\nHow it was chosen:\n  "
            + "\n  ".join(why[-12:])
        )
        if last.kind != "network":
            write_json(
                sdir / FAILED,
                {
                    "at": datetime.now(timezone.utc).isoformat(),
                    "kind": last.kind,
                    "message": message,
                },
            )
        raise EnvBuildError(message)

    def _save(self, spec_key: str, spec: ResolvedSpec, record: dict[str, Any]) -> Environment:
        sdir = self.m.cache.spec_dir(spec_key)
        write_json(sdir / "record.json", record)
        (sdir / FAILED).unlink(missing_ok=True)
        env = self._from_record(spec_key, spec)
        assert env is not None  # just written
        return env

    def _ensure_env(
        self,
        env_key: str,
        interp: Interpreter,
        lock: str,
        spec: ResolvedSpec,
        cutoff: datetime | None,
        uvr: Uv,
    ) -> None:
        edir = self.m.cache.env_dir(env_key)
        if (edir / READY).exists():
            return
        with self.m.cache.lock(f"env-{env_key}"):
            if (edir / READY).exists():
                return
            started = time.monotonic()
            shutil.rmtree(edir, ignore_errors=True)  # a build that died half-way
            edir.mkdir(parents=True)
            (edir / "lock.txt").write_text(lock, encoding="utf-8")
            try:
                uvr.venv(interp.executable, edir / "venv")
                uvr.install(
                    edir / "venv" / "bin" / "python",
                    edir / "lock.txt",
                    cutoff,  # also bounds build dependencies of sdists (build isolation)
                    minor=interp.minor,
                )
                freeze = uvr.freeze(edir / "venv" / "bin" / "python")
            except StepFailed:
                shutil.copy(uvr.log_path, self.m.cache.root / "locks" / f"{env_key}.failed.log")
                shutil.rmtree(edir, ignore_errors=True)
                raise
            (edir / "freeze.txt").write_text(freeze, encoding="utf-8")
            shutil.copy(uvr.log_path, edir / "build.log")
            size, own = dir_sizes(edir)
            write_json(
                edir / READY,
                {
                    "key": env_key,
                    "path": str(edir / "venv"),
                    "python": str(edir / "venv" / "bin" / "python"),
                    "interpreter": interp.version,
                    "interpreter_prefix": str(interp.prefix),
                    "interpreter_executable": str(interp.executable),
                    "spec": spec.model_dump(mode="json"),  # of the first spec to use it
                    "why": spec.why,
                    "cutoff": cutoff.isoformat() if cutoff else None,
                    "build_seconds": round(time.monotonic() - started, 2),
                    "size_bytes": size,
                    "own_bytes": own,
                    "lock": lock,
                },
            )

    def _install_project(
        self,
        env_key: str,
        interp: Interpreter,
        lock: str,
        spec: ResolvedSpec,
        tmp: Path,
        sdir: Path,
        uvr: Uv,
    ) -> ProjectInstall:
        edir = self.m.cache.env_dir(env_key)
        shared = edir / "venv" / "lib" / f"python{interp.minor_str}" / "site-packages"
        env = isolated_env({"PIP_NO_INDEX": "1", "HOME": str(tmp), **spec.env})
        return install_and_capture(
            tmp / "project",
            layer=tmp / "layer",
            interpreter=interp.executable,
            version=interp.version,
            shared_site=shared,
            pip_version=pinned(lock, "pip"),
            store=sdir / "meta",
            env=env,
            log_path=uvr.log_path,
        )
