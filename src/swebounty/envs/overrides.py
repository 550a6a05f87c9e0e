"""Per-repository exceptions to environment inference, kept as data (overrides.toml).

An entry names a repository and, optionally, a range of its versions (the task's `version`
field) or of base commit dates. It can add packages, extras, requirement files or environment
variables, drop extras, set the interpreter, the test command, the test framework
(swebounty.frameworks) or whether the project is installed, or name the test services its
tests call (swebounty.services, started beside the tests; they change no environment). Every entry must say why; none may name a task.
"""

from __future__ import annotations

import logging
import sys
from datetime import date, datetime
from importlib import resources
from pathlib import Path
from typing import TypeVar

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, field_validator

from swebounty.sandbox.base import HOST_NAME

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

log = logging.getLogger(__name__)


class Override(BaseModel):
    """One repository's exception to inference."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(pattern=r"^[\w.-]+/[\w.-]+$", description="owner/name")
    why: str = Field(min_length=10, description="what inference gets wrong here, and why")
    versions: str | None = Field(None, description="PEP 440 range of the task's version")
    since: date | None = Field(None, description="base commits on or after this date")
    until: date | None = Field(None, description="base commits before this date")
    python: str | None = None
    install: list[str] = Field(default_factory=list, description="added requirement lines")
    extras: list[str] = Field(default_factory=list, description="added extras")
    drop_extras: list[str] = Field(default_factory=list, description="extras never installed")
    requirements: list[str] = Field(default_factory=list, description="added requirement files")
    env: dict[str, str] = Field(default_factory=dict, description="variables for the tests")
    test_cmd: list[str] | None = None
    framework: str | None = Field(
        None,
        description="the test framework that runs its tests (swebounty.frameworks), "
        "when the first that applies is not the right one",
    )
    install_project: bool | None = None
    services: list[str] = Field(
        default_factory=list, description="test services its tests call (services/catalog.toml)"
    )
    hosts: dict[str, str] = Field(
        default_factory=dict,
        description="more internet host names its tests call, each routed to one of its "
        "services, which answers for it on the loopback (e.g. an off-host redirect target)",
    )

    @field_validator("hosts")
    @classmethod
    def _host_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [h for h in value if not HOST_NAME.match(h) or h.lower() == "localhost"]
        if bad:
            raise ValueError(f"not host names a service may stand in for: {bad}")
        return value

    @field_validator("versions")
    @classmethod
    def _valid_range(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                SpecifierSet(value)
            except InvalidSpecifier as exc:
                raise ValueError(f"versions {value!r} is not a PEP 440 range: {exc}") from exc
        return value

    def applies(self, repo: str, version: str | None, when: datetime | None) -> bool:
        if self.repo.lower() != repo.lower():
            return False
        if self.versions is not None:
            if version is None:
                return False
            try:
                if not SpecifierSet(self.versions).contains(Version(version), prereleases=True):
                    return False
            except InvalidVersion:
                return False
        if when is not None:
            if self.since and when.date() < self.since:
                return False
            if self.until and when.date() >= self.until:
                return False
        return True


class OverrideFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    override: list[Override] = Field(default_factory=list)


def load_overrides(path: Path | None = None) -> list[Override]:
    """The shipped overrides, or those of `path`. A broken file is an error, not a warning:
    silently ignoring it would change every environment built."""
    return load_toml(OverrideFile, "swebounty.envs", "overrides.toml", path, ValueError).override


Model = TypeVar("Model", bound=BaseModel)


def load_toml(
    model: type[Model], package: str, name: str, path: Path | None, error: type[Exception]
) -> Model:
    """A data file validated by `model`: the one shipped in `package` as `name`, or the one
    at `path`. Raises `error` naming the file when it is not valid TOML or not valid data."""
    if path is None:
        text = resources.files(package).joinpath(name).read_text("utf-8")
        source = f"{package.replace('.', '/')}/{name}"
    else:
        text = Path(path).read_text(encoding="utf-8")
        source = str(path)
    try:
        return model.model_validate(tomllib.loads(text))
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise error(f"{source} is invalid: {exc}. Fix the file (see its header).") from exc


def matching(
    overrides: list[Override], repo: str, version: str | None, when: datetime | None
) -> list[Override]:
    return [o for o in overrides if o.applies(repo, version, when)]
