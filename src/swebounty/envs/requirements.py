"""Test dependencies as a repository declares them: requirement files, dependency groups (tox: tox.py).

Everything here reads files of the base commit and returns flat lists of PEP 508 lines that uv
can take as they are: `-r` includes are inlined, lines that would install the project itself
(`-e .`, its own name) are dropped so nothing shadows the workspace, and options that reach
outside PyPI (other indexes, VCS URLs, local paths) are dropped with a note.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from swebounty.envs.projectfiles import read_config

log = logging.getLogger(__name__)

TEST_GROUPS = ("test", "tests", "testing", "dev")

# Requirement files kept for tests, by name (first match wins ordering only).
REQUIREMENT_GLOBS = (
    "requirements-dev*.txt",
    "requirements_dev*.txt",
    "requirements-test*.txt",
    "requirements_test*.txt",
    "requirements-tests*.txt",
    "requirements_tests*.txt",
    "requirements-testing*.txt",
    "test-requirements*.txt",
    "test_requirements*.txt",
    "tests-requirements*.txt",
    "dev-requirements*.txt",
    "dev_requirements*.txt",
    "requirements/test*.txt",
    "requirements/dev*.txt",
    "requirements/ci*.txt",
    "requirements/*-test*.txt",
    "requirements/*_test*.txt",
    "requirements/testing*.txt",
    "test*/requirements*.txt",
    "test*/requirements/py3*.txt",  # django's (its mysql.txt... are for database servers)
)

_OPTION_WITH_ARG = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links"}
_OPTION_WITH_ARG |= {"--trusted-host", "-c", "--constraint", "--no-binary", "--only-binary"}


def find_requirement_files(root: Path) -> list[str]:
    """Requirement files that look like they are for tests, relative to `root`."""
    found: list[str] = []
    for pattern in REQUIREMENT_GLOBS:
        for path in sorted(root.glob(pattern)):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and rel not in found and "doc" not in path.name:
                found.append(rel)
    return found


def read_requirement_file(
    path: Path, root: Path, project: str | None, notes: list[str], _depth: int = 0
) -> tuple[list[str], list[str]]:
    """(requirement lines, extras of the project that the file asks for). `-r` is inlined."""
    lines: list[str] = []
    extras: list[str] = []
    if _depth > 10 or not path.is_file():
        if not path.is_file():
            notes.append(f"requirement file {_rel(path, root)} does not exist; skipped")
        return lines, extras
    text = read_config(path, root)
    if text is None:
        # A link (or `-r`) out of the repository names a host file: never read (projectfiles).
        inside = path.resolve().is_relative_to(root.resolve())
        why = "is too large to read" if inside else "is outside the repository"
        notes.append(f"requirement file {_rel(path, root)} {why}; skipped")
        return lines, extras
    for raw in _logical_lines(text):
        line = _strip_upgrade(_strip_comment(raw))
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ", "-r", "--requirement=")):
            target = re.sub(r"^(-r|--requirement)[=\s]*", "", line).strip()
            sub, sub_extras = read_requirement_file(
                (path.parent / target).resolve(), root, project, notes, _depth + 1
            )
            lines.extend(sub)
            extras.extend(sub_extras)
            continue
        kept, wanted = clean_requirement(line, project, notes, source=_rel(path, root))
        lines.extend(kept)
        extras.extend(wanted)
    return lines, extras


def clean_requirement(
    line: str, project: str | None, notes: list[str], source: str
) -> tuple[list[str], list[str]]:
    """One requirement line made safe for a date-cut, index-only resolve.

    Returns ([line] or [], extras of the project it asked for)."""
    line = re.sub(r"\s--hash[=\s]\S+", "", line).strip()  # hashes pin one file; uv then wants all
    if line.startswith("-"):
        parts = line.split(None, 1)
        opt = parts[0].split("=", 1)[0]
        if opt in ("-e", "--editable") and len(parts) > 1:
            line = parts[1].strip()
        else:
            if opt in _OPTION_WITH_ARG or opt.startswith("--"):
                notes.append(f"{source}: dropped option line {line!r}")
            return [], []
    if re.match(r"^\.{1,2}(/|\[|$)", line) or line.startswith(("file:", "/")):
        m = re.match(r"^\.(?:/)?\[([^\]]*)\]", line)
        if m:  # ".[test]" installs the project with extras: keep the extras, not the copy
            return [], [e.strip() for e in m.group(1).split(",") if e.strip()]
        if not re.match(r"^\.(/)?$", line):
            notes.append(f"{source}: dropped local path {line!r}")
        return [], []
    if re.match(r"^[a-z+]+://", line) or line.startswith(("git+", "hg+", "svn+", "bzr+")):
        notes.append(f"{source}: dropped URL requirement {line!r} (only the index is reachable)")
        return [], []
    try:
        req = Requirement(line)
    except InvalidRequirement:
        notes.append(f"{source}: dropped unparseable line {line!r}")
        return [], []
    if req.url:
        notes.append(f"{source}: dropped URL requirement {line!r}")
        return [], []
    if project and canonicalize_name(req.name) == canonicalize_name(project):
        # A PyPI copy of the project would shadow the workspace; its extras still matter.
        return [], sorted(req.extras)
    return [str(req)], []


def _strip_upgrade(line: str) -> str:
    """`-U`/`--upgrade` only matter to pip's "already installed" logic: `-Urreqs.txt` -> `-r`."""
    line = re.sub(r"^-U(?=r)", "-", line)
    return re.sub(r"^(-U|--upgrade)(\s+|$)", "", line).strip()


def _logical_lines(text: str) -> list[str]:
    return text.replace("\\\r\n", " ").replace("\\\n", " ").splitlines()


def _strip_comment(line: str) -> str:
    return re.sub(r"(^|\s)#.*$", "", line).strip()


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int | float)]
    return []


# ----------------------------------------------------------------------------- groups


def dependency_groups(
    pyproject: dict[str, Any], project: str | None, notes: list[str]
) -> tuple[list[str], list[str]]:
    """(lines, names of the groups used) from PEP 735 groups and tool-specific dev groups."""
    lines: list[str] = []
    used: list[str] = []
    groups = pyproject.get("dependency-groups", {})
    if isinstance(groups, dict):
        for name in TEST_GROUPS:
            if name in groups:
                used.append(f"dependency-groups.{name}")
                lines.extend(_group(groups, name, set()))
    tool = pyproject.get("tool", {})
    pdm = tool.get("pdm", {}).get("dev-dependencies", {})
    if isinstance(pdm, dict):
        for name in TEST_GROUPS:
            if isinstance(pdm.get(name), list):
                used.append(f"tool.pdm.dev-dependencies.{name}")
                lines.extend(str(x) for x in pdm[name] if isinstance(x, str))
    hatch = tool.get("hatch", {}).get("envs", {})
    if isinstance(hatch, dict):
        for name in ("default", *TEST_GROUPS):
            deps = (
                hatch.get(name, {}).get("dependencies")
                if isinstance(hatch.get(name), dict)
                else None
            )
            if isinstance(deps, list):
                used.append(f"tool.hatch.envs.{name}")
                lines.extend(str(x) for x in deps if isinstance(x, str))
    poetry = tool.get("poetry", {})
    if isinstance(poetry, dict):
        tables = [("tool.poetry.dev-dependencies", poetry.get("dev-dependencies"))]
        for name in TEST_GROUPS:
            group = poetry.get("group", {}).get(name, {})
            tables.append((f"tool.poetry.group.{name}", group.get("dependencies")))
        for label, table in tables:
            if isinstance(table, dict):
                used.append(label)
                lines.extend(poetry_requirements(table))
    out: list[str] = []
    for line in lines:
        kept, _ = clean_requirement(line, project, notes, source="pyproject.toml")
        out.extend(kept)
    return out, used


def _group(groups: dict[str, Any], name: str, seen: set[str]) -> list[str]:
    if name in seen:
        return []
    seen.add(name)
    out: list[str] = []
    for item in groups.get(name, []):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out.extend(_group(groups, item["include-group"], seen))
    return out


def poetry_requirements(table: dict[str, Any]) -> list[str]:
    """Poetry's `name = "^1.2"` tables as PEP 508 lines (python itself skipped)."""
    out: list[str] = []
    for name, value in table.items():
        if name.lower() == "python":
            continue
        constraint = value.get("version", "*") if isinstance(value, dict) else value
        if isinstance(value, dict) and ("path" in value or "git" in value or "url" in value):
            continue
        extras = value.get("extras", []) if isinstance(value, dict) else []
        spec = poetry_constraint(str(constraint))
        extra = f"[{','.join(extras)}]" if extras else ""
        out.append(f"{name}{extra}{spec}")
    return out


def poetry_constraint(text: str) -> str:
    """'^1.2.3' -> '>=1.2.3,<2.0.0'; '~1.2' -> '>=1.2,<1.3'; '*' -> ''; PEP 440 passes through."""
    parts: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if piece in ("", "*"):
            continue
        m = re.fullmatch(r"([\^~])\s*(\d+(?:\.\d+)*)", piece)
        if m:
            nums = [int(x) for x in m.group(2).split(".")]
            if m.group(1) == "^":
                idx = next((i for i, n in enumerate(nums) if n != 0), len(nums) - 1)
            else:  # ~1.2.3 and ~1.2 bound the minor; ~1 bounds the major
                idx = min(1, len(nums) - 1)
            upper = [*nums[:idx], nums[idx] + 1]
            parts += [f">={m.group(2)}", "<" + ".".join(map(str, upper))]
        elif re.fullmatch(r"\d+(?:\.\d+)*", piece):
            parts.append(f"=={piece}")
        else:
            parts.append(piece.replace(" ", ""))
    return ",".join(parts)
