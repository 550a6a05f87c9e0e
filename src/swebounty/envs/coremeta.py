"""A project's core metadata, read as data: what its build made (METADATA, PKG-INFO), what its
pyproject.toml declares (`[project]`, `[build-system]`).

What a build made is the repository's to write, so it is hostile input (DESIGN.md, principle
9), and what is read here goes into uv's configuration and command lines: every file is
bounded; a name, a version, an extra must be one; every requirement is parsed and
re-serialised by `packaging` (read leniently as uv reads a built METADATA: `pytz (>=2011k)`);
a requirement on a local path (`file:`) is refused, since uv would read the host's files for
it; a backend is a dotted name, a backend-path a folder inside the project. Anything else
raises ValueError.
"""

from __future__ import annotations

import re
import sys
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from swebounty import safefs
from swebounty.envs.metadata import Repair, lenient_requirement, lenient_specifier

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

MAX_METADATA_BYTES = 1 << 20
MAX_PYPROJECT_BYTES = 1 << 20
MAX_REQUIREMENTS = 2000
MAX_FIELD_CHARS = 2000
DEFAULT_REQUIRES = ["setuptools >= 40.8.0"]  # uv's DEFAULT_BACKEND
DEFAULT_BACKEND = "setuptools.build_meta:__legacy__"
_NAME = re.compile(r"^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$")
_BACKEND = re.compile(r"^[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?$")


class BuildSystem:
    """What the project's build needs, read as data: as uv reads it."""

    def __init__(self, requires: list[str], backend: str, backend_path: list[str]) -> None:
        self.requires, self.backend, self.backend_path = requires, backend, backend_path


def read_pyproject(project: Path) -> dict[str, Any] | None:
    """The project's pyproject.toml (a regular file, not through a link), or None. Raises
    ValueError."""
    data = safefs.read_beneath(project, "pyproject.toml", MAX_PYPROJECT_BYTES)
    if data is None:
        return None
    try:
        found: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"the project's pyproject.toml cannot be read: {exc}") from None
    return found


def build_system(pyproject: dict[str, Any] | None) -> BuildSystem:
    """The backend and build requirements uv would use: `[build-system]`, or its default.
    Raises ValueError."""
    table = pyproject.get("build-system") if pyproject else None
    if not isinstance(table, dict):
        return BuildSystem(list(DEFAULT_REQUIRES), DEFAULT_BACKEND, [])
    requires = table.get("requires", [])
    backend = table.get("build-backend", DEFAULT_BACKEND)
    path = table.get("backend-path", [])
    if (
        not isinstance(requires, list)
        or not all(isinstance(r, str) for r in requires)
        or not isinstance(backend, str)
        or not _BACKEND.match(backend)
        or not isinstance(path, list)
        or not all(isinstance(p, str) and _relative(p) for p in path)
    ):
        raise ValueError("the project's pyproject.toml [build-system] is invalid")
    requires = [requirement(line) for line in requires]
    return BuildSystem(requires, backend, list(path))


def _relative(path: str) -> bool:
    return not path.startswith("/") and ".." not in Path(path).parts and "\0" not in path


def static_pyproject(pyproject: dict[str, Any] | None) -> Repair | None:
    """The metadata of a pyproject.toml whose `[project]` declares it statically (name,
    version, requirements, Requires-Python not dynamic), as uv reads it; None otherwise."""
    project = pyproject.get("project") if pyproject else None
    if not isinstance(project, dict):
        return None
    dynamic = project.get("dynamic", [])
    fields = {"version", "dependencies", "optional-dependencies", "requires-python"}
    if not isinstance(dynamic, list) or fields & set(dynamic):
        return None
    if "dependencies" not in project and "poetry" in (pyproject or {}).get("tool", {}):
        return None
    try:
        name, version = _name(project.get("name")), _version(project.get("version"))
        deps = project.get("dependencies", [])
        optional = project.get("optional-dependencies", {})
        if not isinstance(deps, list) or not isinstance(optional, dict):
            return None
        requires = [requirement(line) for line in deps]
        extras: list[str] = []
        for extra, lines in optional.items():
            extras.append(_extra(extra))
            if not isinstance(lines, list):
                return None
            requires += [_with_extra(requirement(line), extra) for line in lines]
        python = project.get("requires-python")
        if python is not None and not isinstance(python, str):
            return None
    except ValueError:
        return None  # uv reads it leniently, or not: the backend says
    note = "the project's metadata: its pyproject.toml's [project] (static)"
    return Repair(name, version, requires, _python(python), [note], extras)


def parse_metadata(data: bytes) -> Repair:
    """The project's core metadata from a METADATA / PKG-INFO file its build made, as uv will
    be told it. Hostile input: bounded, each field validated. Raises ValueError."""
    if len(data) > MAX_METADATA_BYTES:
        raise ValueError(f"{len(data)} bytes, more than {MAX_METADATA_BYTES}")
    text = data.decode("utf-8", "replace")
    if "\0" in text:
        raise ValueError("a NUL byte")
    headers = HeaderParser().parsestr(text, headersonly=True)
    requires_dist = headers.get_all("Requires-Dist") or []
    extras = headers.get_all("Provides-Extra") or []
    if len(requires_dist) + len(extras) > MAX_REQUIREMENTS:
        raise ValueError(f"more than {MAX_REQUIREMENTS} requirements and extras")
    name = _name(_single(headers, "Name"))
    version = _version(_single(headers, "Version"))
    requires = [requirement(line, lenient=True) for line in requires_dist]
    python = headers.get_all("Requires-Python") or []
    if len(python) > 1:
        raise ValueError("more than one Requires-Python")
    note = "the project's metadata: prepared in the build sandbox"
    return Repair(name, version, requires, _python(python[0] if python else None), [note],
                  [_extra(e) for e in extras])  # fmt: skip


def _single(headers: Any, field: str) -> str:
    found = headers.get_all(field) or []
    if len(found) != 1:
        raise ValueError(f"{len(found)} {field} fields, not one")
    return str(found[0])


def _name(value: object) -> str:
    if not isinstance(value, str) or not _NAME.match(value.strip()):
        raise ValueError(f"not a project name: {str(value)[:80]!r}")
    return str(canonicalize_name(value.strip()))


def _version(value: object) -> str:
    if not isinstance(value, str) or len(value) > 200:
        raise ValueError(f"not a version: {str(value)[:80]!r}")
    try:
        return str(Version(value.strip()))
    except InvalidVersion:
        raise ValueError(f"not a version: {value[:80]!r}") from None


def _extra(value: object) -> str:
    if not isinstance(value, str) or not _NAME.match(value.strip()):
        raise ValueError(f"not an extra's name: {str(value)[:80]!r}")
    return str(canonicalize_name(value.strip()))


def requirement(line: object, *, lenient: bool = False) -> str:
    """`line` as a PEP 508 requirement, re-serialised; a direct reference to a local path
    (`file:`) is refused: it would make uv read the host's files."""
    if not isinstance(line, str) or len(line) > MAX_FIELD_CHARS:
        raise ValueError(f"not a requirement: {str(line)[:80]!r}")
    fixed = lenient_requirement(line) if lenient else line
    try:
        req = Requirement(fixed or "")
    except InvalidRequirement:
        raise ValueError(f"not a requirement: {line[:80]!r}") from None
    if req.url and "file" in req.url.split(":", 1)[0].lower():
        raise ValueError(f"a requirement on a local path: {line[:80]!r}")
    return str(req)


def _with_extra(requirement: str, extra: str) -> str:
    req = Requirement(requirement)
    clauses = [f"({req.marker})"] if req.marker else []
    req.marker = None
    clauses.append(f'extra == "{_extra(extra)}"')
    return f"{req}; {' and '.join(clauses)}"


def _python(value: str | None) -> str | None:
    if value is None:
        return None
    if len(value) > MAX_FIELD_CHARS:
        raise ValueError("Requires-Python too long")
    return lenient_specifier(value) or None
