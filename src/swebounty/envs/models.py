"""The data every part of the environment machinery shares: specs, environments, errors.

Kept apart from the code that makes them so that inference, resolution, building and the
manager can all name them without importing one another (no import cycles).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field, SerializeAsAny

from swebounty.envs.natives import NativeBuild
from swebounty.envs.tasklayer import ProjectInstall
from swebounty.tasks import EnvSpec

# What every environment of any era gets besides the project's own needs: the test runner, and
# the era's pip/setuptools/wheel (environments of the time had them; pkg_resources users and the
# legacy `setup.py develop` install need them).
BASE_PACKAGES = ["pip", "setuptools", "wheel", "pytest"]


class EnvBuildError(Exception):
    """An environment could not be built. The message's first line says why in words (the
    failure class and the package at fault); then the tail of the build log, what to do, and
    what was tried. `kind` is the class (see failures.py), `package` the package at fault."""

    def __init__(self, message: str, *, kind: str = "other", package: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.package = package


class DepSet(BaseModel):
    """One set of test dependencies to try, besides the project itself and its extras."""

    label: str  # "tox deps", "requirement files", "none"
    lines: list[str] = []
    extras: list[str] = []


class ResolvedSpec(EnvSpec):
    """An EnvSpec after inference: everything `ensure` needs, nothing it must guess."""

    python_fallbacks: list[str] = Field(
        default_factory=list, description="older interpreters, tried if a dependency won't build"
    )
    plans: list[DepSet] = Field(
        default_factory=list,
        description="dependency sets to try in order; the first that resolves wins",
    )
    share_cutoff: datetime | None = Field(
        None,
        description="a coarser cutoff tried first, so tasks of one repo and month share an "
        "environment (see spec.share_cutoff())",
    )
    tools_follow_python: bool = Field(
        False,
        description="pip, setuptools, wheel and pytest no older than the interpreter's first "
        "release, when it postdates the cutoff (inferred specs; a literal one is as given)",
    )
    project_name: str | None = None
    vcs_tag_prefix: str | None = None  # the version comes from git tags (setuptools_scm, ...)
    release_hint: str | None = None  # the task's version: the tag to use when the index can't say
    inputs_digest: str = ""
    why: list[str] = Field(default_factory=list)


class Environment(BaseModel):
    """A built, cached EnvSpec."""

    key: str
    path: Path  # the venv
    python: Path  # the venv's bin/python
    interpreter: str
    interpreter_prefix: Path
    interpreter_executable: Path
    spec: SerializeAsAny[EnvSpec]
    why: list[str] = []
    build_seconds: float = 0.0
    size_bytes: int | None = None  # on disk, counting files hard-linked from uv's cache
    own_bytes: int | None = None  # what it adds to the disk while uv's cache is kept
    spec_key: str | None = None
    project: ProjectInstall | None = None
    project_store: Path | None = None  # captured metadata of the base commit's package
    lock: str = ""  # what was installed (uv pip compile output, exact pins)
    native: NativeBuild | None = None  # the task tree's compiled extensions (natives.py)


class TaskEnv(BaseModel):
    """How to run one task's tests in its workspace."""

    setup_argv: list[str] | None
    test_prefix: list[str]
    ro_paths: list[Path]
    rw_paths: list[Path]
    env: dict[str, str]
