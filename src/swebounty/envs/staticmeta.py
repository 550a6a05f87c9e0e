"""The project's metadata read from its files, for a build that cannot prepare it.

uv learns what a project requires by running its build backend in an isolated build
environment. A setup.py of the setuptools-legacy era may not survive that: astropy 2.x-3.x's
imports astropy itself, which wants numpy (absent there: `ImportError: Numpy version 1.13.0 or
later must be installed to use Astropy`) and, imported by anything but a `__main__` named
setup.py (a PEP 517 backend is not), would compile every extension first. The pip of its era
ran setup.py itself, in an environment that already held numpy, Cython and the rest.

The rule: when resolution fails in the project's *own* metadata preparation, the project is
given to uv with the metadata its files declare (`dependency-metadata`, with metadata.py's
repairs): install_requires, setup_requires (the build needs them in the environment, where
the era's pip builds without isolation) and each extra's requirements, read from setup.py
without running it, and from setup.cfg. A requirement built by concatenation keeps its literal
name (`'numpy>=' + astropy.__minimum_numpy_version__` is `numpy`: the cutoff chooses the
version), and a list grown by `.extend()`/`.append()` keeps what was added. The project itself
is still installed by the era's pip, as before.
"""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from swebounty import safefs
from swebounty.envs.metadata import Repair

MAX_SETUP_BYTES = 1 << 20
VERSION = "0"  # uv needs one to take the metadata as given; nothing compares it
_DEPTH = 8
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*(?:\s*\[[^\]]*\])?)")
# uv names the package whose build failed; for the project itself it names none.
_DEPENDENCY_BUILD = re.compile(r"Failed to (?:download and )?(?:build|prepare metadata for) `")
_PROJECT_BACKEND = re.compile(r"build backend returned an error|get_requires_for_build|metadata")


def failed_in_project(output: str, project: Path) -> bool:
    """Whether a resolution's failure `output` is the project's own metadata preparation
    (not a dependency's build): uv names no package, and the traceback is the project's."""
    if _DEPENDENCY_BUILD.search(output) or not _PROJECT_BACKEND.search(output):
        return False
    return str(project) in output or 'File "setup.py"' in output


def declared(project: Path, name: str | None) -> Repair | None:
    """The metadata the project's files declare, as uv will be told it; None without a name
    or when its files declare nothing readable."""
    if not name:
        return None
    install, setup, extras = _from_setup_py(project)
    cfg = _from_setup_cfg(project)
    install += cfg[0]
    setup += cfg[1]
    for extra, lines in cfg[2].items():
        extras.setdefault(extra, []).extend(lines)
    requires: list[str] = []
    notes = ["the project's build could not prepare its metadata: read from its files"]
    for line in [*install, *setup]:
        req = _requirement(line)
        if req and req not in requires:
            requires.append(req)
    for key, lines in extras.items():
        extra, _, when = key.partition(":")  # setuptools: `extra:marker`
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", extra.strip()):
            continue
        for line in lines:
            req = _requirement(line, extra.strip(), when.strip())
            if req and req not in requires:
                requires.append(req)
    if not requires:
        return None
    return Repair(str(canonicalize_name(name)), VERSION, requires, None, notes)


def _requirement(line: str, extra: str | None = None, when: str = "") -> str | None:
    """`line` as a valid requirement (a cut one keeps its name), with `extra`'s marker and
    the marker `when` its extra's key gave."""
    try:
        req = Requirement(line)
    except InvalidRequirement:
        found = _NAME.match(line)
        if not found:
            return None
        try:
            req = Requirement(found.group(1))
        except InvalidRequirement:
            return None
    if not extra:
        return str(req)
    markers = [str(req.marker)] if req.marker else []
    if when:
        try:
            markers.append(str(Marker(when)))
        except InvalidMarker:
            return None
    req.marker = None
    clauses = [f"({m})" for m in markers] + [f'extra == "{canonicalize_name(extra)}"']
    return f"{req}; {' and '.join(clauses)}"


def _from_setup_py(project: Path) -> tuple[list[str], list[str], dict[str, list[str]]]:
    data = safefs.read_beneath(project, "setup.py", MAX_SETUP_BYTES)
    try:
        tree = ast.parse(data or b"")
    except (SyntaxError, ValueError):
        return [], [], {}
    names: dict[str, ast.expr] = {}
    grown: dict[str, list[ast.expr]] = {}  # NAME.extend(...) / NAME.append(...)
    # Breadth first: a module-level binding wins over one in a branch or a function
    # (scikit-learn binds `metadata = dict(...)` in setup_package() and calls setup(**metadata)).
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name) and target.id not in names:
                names[target.id] = stmt.value
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) and len(node.args) == 1 else None
        if (
            isinstance(node, ast.Call)
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.attr in ("extend", "append")
        ):
            arg = node.args[0]
            grown.setdefault(func.value.id, []).append(
                arg if func.attr == "extend" else ast.List(elts=[arg], ctx=ast.Load())
            )
    keywords: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _calls_setup(node.func):
            for kw in node.keywords:
                if kw.arg:
                    keywords[kw.arg] = kw.value
                else:  # setup(**NAME): the dict NAME is bound to, as far as it can be read
                    keywords.update(_keywords(kw.value, names))

    def strings(key: str) -> list[str]:
        value = keywords.get(key)
        found = _value(value, names, grown) if value is not None else None
        return [s for s in found if isinstance(s, str)] if isinstance(found, list) else []

    extras_node = keywords.get("extras_require")
    extras_value = _value(extras_node, names, grown) if extras_node is not None else None
    extras: dict[str, list[str]] = {}
    if isinstance(extras_value, dict):
        for key, value in extras_value.items():
            if isinstance(value, str):
                value = [value]
            if isinstance(value, list):
                extras[key] = [v for v in value if isinstance(v, str)]
    return strings("install_requires"), strings("setup_requires"), extras


def _keywords(node: ast.expr, names: dict[str, ast.expr], depth: int = 0) -> dict[str, ast.expr]:
    """The keyword arguments a `**node` passes: a name bound to `dict(k=v, **more)` or to a
    dict literal with string keys; nothing for anything else."""
    if depth > _DEPTH:
        return {}
    if isinstance(node, ast.Name) and node.id in names:
        return _keywords(names[node.id], names, depth + 1)
    found: dict[str, ast.expr] = {}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        for kw in node.keywords:
            if kw.arg:
                found[kw.arg] = kw.value
            else:
                found.update(_keywords(kw.value, names, depth + 1))
    elif isinstance(node, ast.Dict):
        for key, val in zip(node.keys, node.values, strict=False):
            if key is None:  # {**more}
                found.update(_keywords(val, names, depth + 1))
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                found[key.value] = val
    return found


def _calls_setup(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "setup") or (
        isinstance(func, ast.Attribute) and func.attr == "setup"
    )


def _value(
    node: ast.expr, names: dict[str, ast.expr], grown: dict[str, list[ast.expr]], depth: int = 0
) -> Any:
    """A lenient literal: strings, lists and dicts (literal or `dict(...)`) of them, names
    bound in the file (with what `.extend()` added), `'lit' + unknown`, `'lit{}'.format(...)`
    and `'lit%s' % ...` cut to the literal; None for anything else."""
    if depth > _DEPTH:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        out: list[Any] = []
        for elt in node.elts:
            value = _value(elt, names, grown, depth + 1)
            out += value if isinstance(value, list) else [value]
        return [v for v in out if isinstance(v, str)]
    if isinstance(node, ast.Name) and node.id in names:
        value = _value(names[node.id], names, grown, depth + 1)
        for more in grown.get(node.id, []) if isinstance(value, list) else []:
            added = _value(more, names, grown, depth + 1)
            value += added if isinstance(added, list) else []
        return value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):  # 'numpy>={}'.format(NUMPY_MIN_VERSION): the literal up to the first field
        return node.func.value.value.split("{", 1)[0]
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
    ):  # 'numpy>=%s' % NUMPY_MIN_VERSION
        return node.left.value.split("%", 1)[0]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        given = _keywords(node, names)
        literal = ast.Dict(keys=[ast.Constant(k) for k in given], values=list(given.values()))
        return _value(literal, names, grown, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _value(node.left, names, grown, depth + 1)
        right = _value(node.right, names, grown, depth + 1)
        if isinstance(left, list):
            return left + (right if isinstance(right, list) else [])
        if isinstance(left, str):
            return left + right if isinstance(right, str) else left
        return None
    if isinstance(node, ast.Dict):
        found: dict[str, Any] = {}
        for key, val in zip(node.keys, node.values, strict=False):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                value = _value(val, names, grown, depth + 1)
                if value is not None:
                    found[key.value] = value
        return found
    return None


def _from_setup_cfg(project: Path) -> tuple[list[str], list[str], dict[str, list[str]]]:
    data = safefs.read_beneath(project, "setup.cfg", MAX_SETUP_BYTES)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string((data or b"").decode("utf-8", "replace"))
    except configparser.Error:
        return [], [], {}

    def lines(section: str, key: str) -> list[str]:
        text = parser.get(section, key, fallback="")
        return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]

    extras = {
        key: lines("options.extras_require", key)
        for key in (
            parser.options("options.extras_require")
            if parser.has_section("options.extras_require")
            else []
        )
    }
    return lines("options", "install_requires"), lines("options", "setup_requires"), extras
