"""Compiled extensions: built once per tree of build inputs, placed in each task's workspace.

A project with C, C++ or Cython extensions (scikit-learn, matplotlib, astropy) must have them
built before any test imports it, and building takes minutes. Tasks on the same commit, or on
commits whose compiled sources and packaging files are equal, need the same build; so a build
is keyed by its environment and the digest of those inputs (`tree_inputs`), made once from the
*unpatched* base commit (the repository's own code, never a submission's: in the build
sandbox, buildbox.py, like the environment build's install), and kept in

    CACHE/natives/<key>/  tree/ (the extensions and the files the build generated, by their
                          place in the project), build.log, ready.json last, failed.json

Per task, `place` copies them into the workspace. A patch that changes a compiled input is
rebuilt inside the sandbox before the tests (manager.for_task: the era's pip, in place, within
the task's time limit): the placed files are stamped now and the changed inputs later, so the
build redoes only what they feed (a changed header: every extension, since a build cannot say
which include it). If that build fails, the extensions placed are removed (`rebuild_argv`):
the tests then cannot import a stale extension, and a build the patch broke is the patch's.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swebounty import safefs
from swebounty.envs import buildcopy, buildoutput
from swebounty.envs.cache import (
    FAILED,
    READY,
    SCHEMA,
    CacheLayout,
    digest,
    read_json,
    recent_failure,
    write_json,
)
from swebounty.envs.failures import NOT_THE_SPEC, StepFailed
from swebounty.envs.sources import Sources
from swebounty.envs.steps import isolated_env
from swebounty.envs.tasklayer import ProjectInstall, install_and_capture, project_files

log = logging.getLogger(__name__)

COMPILED_SUFFIXES = (
    ".pyx", ".pxd", ".pxi", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx",
    ".f", ".f90", ".tp",
)  # fmt: skip
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx")
# Anywhere in the tree: files that say how extensions are built (numpy.distutils projects,
# scikit-learn before 1.0, declare them in a setup.py per subpackage).
BUILD_NAMES = ("meson.build", "meson_options.txt", "meson.options", "setup.py")
# At the project's root: setup.py and its helpers (matplotlib's setupext.py), setup.cfg,
# pyproject.toml, mplsetup.cfg-style files, MANIFEST.in. Not conftest.py: no build reads it.
ROOT_SUFFIXES = (".py", ".cfg", ".toml", ".in")
MAX_INPUT_BYTES = 64 << 20
MAX_INPUTS = 50_000
BUILD_TIMEOUT = 3600.0  # two cores, shared: scikit-learn's extensions take many minutes


class NativeBuild(BaseModel):
    """One tree's compiled extensions, as stored."""

    key: str
    store: Path  # CACHE/natives/<key>/tree
    natives: list[str] = []  # the extension modules, relative to the project
    generated: list[str] = []  # what the build wrote beside them (Cython's .c, version files)
    inputs: dict[str, str] = {}  # compiled input -> sha256, as in the base commit
    build_seconds: float = 0.0


def is_input(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if "/" not in rel and name != "conftest.py" and name.endswith(ROOT_SUFFIXES):
        return True
    return name in BUILD_NAMES or name.endswith(COMPILED_SUFFIXES)


def tree_inputs(root: Path) -> dict[str, str]:
    """Every build input under `root` (relative path -> sha256), read without following
    links (the tree may hold what a patch made)."""
    found: dict[str, str] = {}
    for rel in safefs.walk_paths(root, skip_dirs=frozenset({".git"}), max_entries=MAX_INPUTS):
        if not is_input(rel):
            continue
        data = safefs.read_beneath(root, rel, MAX_INPUT_BYTES)
        found[rel] = hashlib.sha256(data if data is not None else b"\0not a file").hexdigest()
    return found


def changed_inputs(build: NativeBuild, workspace: Path) -> list[str]:
    """The build inputs the workspace has changed, added or removed since the base commit."""
    now = tree_inputs(workspace)
    return sorted(k for k in set(now) | set(build.inputs) if now.get(k) != build.inputs.get(k))


def ensure_native(
    cache: CacheLayout,
    *,
    env_key: str,
    interpreter: Path,
    version: str,
    shared_site: Path,
    pip_version: str | None,
    version_env: dict[str, str],
    spec_env: dict[str, str],
    workspace: Path,
    interpreter_prefix: Path | None = None,
) -> NativeBuild:
    """The build of `workspace`'s extensions (a checkout of the unpatched base commit) in
    environment `env_key`: found, or made once whatever the number of tasks asking. Raises
    StepFailed("build the extensions", ...) when the base commit cannot build here."""
    inputs = tree_inputs(workspace)
    key = _key(env_key, inputs, version_env, cache.key_part(workspace))
    home = cache.root / "natives" / key
    found = _ready(home)
    if found is not None:
        return found
    with cache.lock(f"native-{key}"):
        found = _ready(home)
        if found is not None:
            return found
        failure = recent_failure(home)
        if failure is not None:
            raise StepFailed("build the extensions", "build", str(failure.get("output", "")))
        return _build(home, key, inputs, interpreter, version, shared_site, pip_version,
                      version_env, spec_env, workspace, interpreter_prefix,
                      cache.sources)  # fmt: skip


def _key(
    env_key: str, inputs: dict[str, str], version_env: dict[str, str], sources: dict[str, Any]
) -> str:
    """`sources`: the sources provided to the build (CacheLayout.key_part)."""
    data = {"schema": SCHEMA, "env": env_key, "inputs": inputs, "vars": version_env}
    return digest(data | sources)


def seed(
    cache: CacheLayout,
    *,
    env_key: str,
    workspace: Path,
    project: Path,
    info: ProjectInstall,
    version_env: dict[str, str],
) -> None:
    """Keep what the environment build compiled in `project` (its copy of `workspace`) as the
    build of `workspace`'s tree: the first task of a spec then builds nothing more."""
    inputs = tree_inputs(workspace)
    key = _key(env_key, inputs, version_env, cache.key_part(workspace))
    home = cache.root / "natives" / key
    with cache.lock(f"native-{key}"):
        if _ready(home) is None:
            safefs.remove_tree(home)
            home.mkdir(parents=True)
            _store(home, key, inputs, project, info, 0.0)


def built(
    cache: CacheLayout, *, env_key: str, workspace: Path, version_env: dict[str, str]
) -> NativeBuild | None:
    """The ready build of `workspace`'s tree in environment `env_key`, if one was made: a
    spec whose base commit differs from another's only outside the build inputs (a day later,
    so its own spec) gets the same environment, and its environment build places this one
    rather than compile the tree again."""
    key = _key(env_key, tree_inputs(workspace), version_env, cache.key_part(workspace))
    return _ready(cache.root / "natives" / key)


def _ready(home: Path) -> NativeBuild | None:
    data = read_json(home / READY)
    if data is None:
        return None
    try:
        build = NativeBuild.model_validate(data)
    except ValueError:
        return None
    # The tree is where the record is now: a cache that was moved (a renamed home) keeps
    # working, and a record never names a folder outside its own.
    build.store = home / "tree"
    return build


def _build(
    home: Path,
    key: str,
    inputs: dict[str, str],
    interpreter: Path,
    version: str,
    shared_site: Path,
    pip_version: str | None,
    version_env: dict[str, str],
    spec_env: dict[str, str],
    workspace: Path,
    interpreter_prefix: Path | None,
    sources: Sources | None,
) -> NativeBuild:
    started = time.monotonic()
    safefs.remove_tree(home)
    home.mkdir(parents=True)
    log_path = home / "build.log"
    log_path.write_text(f"# swebounty: the extensions of {workspace.name} ({key})\n")
    with tempfile.TemporaryDirectory(prefix="swebounty-native-") as tmpdir:
        tmp = Path(tmpdir)
        project = tmp / "project"
        notes = buildcopy.copy_project(workspace, project, sources)
        with log_path.open("a", encoding="utf-8") as fh:
            fh.writelines(f"# {note}\n" for note in notes)  # which sources the build used
        env = isolated_env({"PIP_NO_INDEX": "1", "HOME": str(tmp), **spec_env, **version_env})
        try:
            info = install_and_capture(
                project, layer=tmp / "layer", interpreter=interpreter, version=version,
                shared_site=shared_site, pip_version=pip_version, store=tmp / "meta",
                env=env, log_path=log_path, before=project_files(project),
                timeout=BUILD_TIMEOUT, interpreter_prefix=interpreter_prefix,
            )  # fmt: skip
        except StepFailed as exc:
            if exc.kind in NOT_THE_SPEC:  # killed, a full disk: the machine's, not the tree's
                raise StepFailed("build the extensions", exc.kind, exc.output) from exc
            write_json(home / FAILED, {"at": datetime.now(timezone.utc).isoformat(),
                                       "output": exc.output[-20000:]})  # fmt: skip
            raise StepFailed("build the extensions", "build", exc.output) from exc
        build = _store(home, key, inputs, project, info, time.monotonic() - started)
    log.info("built the extensions %s in %.0f s", key, build.build_seconds)
    return build


def _store(
    home: Path,
    key: str,
    inputs: dict[str, str],
    project: Path,
    info: ProjectInstall,
    seconds: float,
) -> NativeBuild:
    # The build's output is the repository's: only regular files reached without a link are
    # kept (a "built extension" linked to a host secret would reach every workspace).
    tree = home / "tree"
    kept = {rel for rel in {*info.natives, *info.generated}
            if buildoutput.copy_file(project, rel, tree / rel)}  # fmt: skip
    build = NativeBuild(
        key=key,
        store=tree,
        natives=[rel for rel in info.natives if rel in kept],
        generated=[rel for rel in info.generated if rel in kept],
        inputs=inputs,
        build_seconds=round(seconds, 2),
    )
    write_json(home / READY, build.model_dump(mode="json"))
    return build


def place(build: NativeBuild, workspace: Path, changed: list[str]) -> None:
    """Copy the build's files into the workspace where it has none, stamped now; then stamp
    the `changed` inputs later still, so an in-place rebuild redoes what they feed. A changed
    header leaves no extension in place (each is rebuilt: which includes it is unknown)."""
    headers = any(c.endswith(HEADER_SUFFIXES) for c in changed)
    now = time.time()
    for rel in [*build.generated, *([] if headers else build.natives)]:
        if safefs.exists_beneath(workspace, rel):
            continue  # the patch made it, or the base commits it: not ours to replace
        source = build.store / rel
        safefs.write_beneath(workspace, rel, source.read_bytes(), source.stat().st_mode & 0o755)
        os.utime(workspace / rel, (now, now), follow_symlinks=False)
    for rel in changed:
        if safefs.exists_beneath(workspace, rel):
            os.utime(workspace / rel, (now + 2, now + 2), follow_symlinks=False)


def rebuild_argv(install: list[str], build: NativeBuild) -> list[str]:
    """`install` (the era's pip, in place), and when it fails the placed extensions removed,
    so that no test imports the base commit's build instead of the patch's."""
    stale = " ".join(shlex.quote(n) for n in build.natives)
    script = f'"$@" || {{ code=$?; rm -f -- {stale}; exit $code; }}'
    return ["/bin/sh", "-c", script, "sh", *install]
