"""What a repository at its base commit says about how to build its test environment.

`read_project` gathers the facts (name, Python versions, extras, build needs, tox, requirement
files, dependency groups) from pyproject.toml, setup.cfg, setup.py (parsed, never run), tox
configuration and CI files. `plan_deps` turns them into the ordered dependency sets the builder
tries: tox's own description first, the requirement files next, smaller sets after, because each
of these was the one that worked on some real repository (see shared/notes/ENVIRONMENTS.md).
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import hashlib
import logging
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swebounty.envs.ci import ci_python_versions
from swebounty.envs.interpreters import PythonEvidence
from swebounty.envs.models import DepSet
from swebounty.envs.projectfiles import hash_file, read_config
from swebounty.envs.requirements import (
    clean_requirement,
    dependency_groups,
    find_requirement_files,
    read_requirement_file,
)
from swebounty.envs.tox import ToxConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

log = logging.getLogger(__name__)

TEST_EXTRA = re.compile(r"^(tests?|testing|dev|develop|development|ci)$", re.I)
# Extras that never change what the tests can import, and often pull heavy toolchains; and
# aggregates ("all") that add nothing but the docs' pins once every other extra is listed.
SKIP_EXTRA = re.compile(
    r"doc|sphinx|lint|release|deploy|publish|bench|pre-?commit|notebook|^(all|full|complete)$",
    re.I,
)
# Versions computed from git tags: a workspace has none, so the build copy gets one.
VCS_VERSIONING = re.compile(
    r"setuptools[_-]scm|use_scm_version|hatch-vcs|versioneer|pbr\b|dunamai|"
    r"poetry-dynamic-versioning|setuptools-git-versioning",
    re.I,
)
# What a backend asks for only to build *editable* (its get_requires_for_build_editable): the
# era's pip installs the project with --no-build-isolation, so it must be in the environment.
# Without `editables`, hatchling projects (attrs) fell back to a per-task copy install.
EDITABLE_REQUIRES = {"hatchling": ["editables"]}
NATIVE_BACKENDS = ("scikit_build", "mesonpy", "maturin", "setuptools_rust", "pdm.backend.cmake")
EXTRA_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
PLAIN_FILE = "requirements.txt"
DIGEST_GLOBS = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "*.txt", "requirements/*")


class ProjectFacts(BaseModel):
    name: str | None = None
    python: PythonEvidence = PythonEvidence()
    extras: list[str] = []  # every extra the project declares
    build_requires: list[str] = []  # [build-system].requires and setup_requires
    native: bool = False  # has C/Cython/Rust extensions to compile
    vcs_tag_prefix: str | None = None  # version from git tags with this prefix; None: not
    has_tox: bool = False
    tox_extras: list[str] = []
    requirement_files: list[str] = []
    digest: str = ""  # of the files that decide the dependencies
    notes: list[str] = []


def read_project(root: Path) -> ProjectFacts:
    """Facts from the files in `root` (a checkout of the base commit)."""
    facts = ProjectFacts()
    pyproject = load_pyproject(root)
    cfg = _cfg(root, "setup.cfg")
    setup_py = _read(root, "setup.py")
    setup_kw = setup_py_keywords(setup_py) if setup_py else {}
    project = pyproject.get("project", {}) if isinstance(pyproject.get("project"), dict) else {}
    meta = cfg.get("metadata", {})
    options = cfg.get("options", {})

    name = project.get("name") or meta.get("name") or setup_kw.get("name")
    poetry = pyproject.get("tool", {}).get("poetry", {})
    if not name and isinstance(poetry, dict):
        name = poetry.get("name")
    facts.name = name if isinstance(name, str) and "{" not in name else None

    text = "\n".join(_read(root, f) for f in ("pyproject.toml", "setup.cfg", "setup.py"))
    requires = (
        project.get("requires-python")
        or options.get("python_requires")
        or setup_kw.get("python_requires")
        or _regex_python_requires(setup_py)
        or _poetry_python(poetry)
    )
    tox = ToxConfig.load(root, pyproject)
    facts.python = PythonEvidence(
        requires_python=requires if isinstance(requires, str) else None,
        classifiers=sorted(
            set(re.findall(r"Programming Language :: Python :: (3\.\d+)", text)), key=_vkey
        ),
        tox=tox.python_versions() if tox else [],
        ci=ci_python_versions(root),
    )

    keys: list[str] = list(project.get("optional-dependencies", {}) or {})
    keys += list(cfg.get("options.extras_require", {}))
    keys += list(setup_kw.get("extras_require", {}) or {})
    if isinstance(poetry, dict):
        keys += list(poetry.get("extras", {}) or {})
    facts.extras = extra_names(keys)

    build = pyproject.get("build-system", {})
    build_requires = [r for r in build.get("requires", []) if isinstance(r, str)]
    setup_requires = setup_kw.get("setup_requires") or _cfg_list(options.get("setup_requires"))
    if isinstance(setup_requires, str):
        setup_requires = [setup_requires]
    notes: list[str] = []
    for line in [*build_requires, *(setup_requires or [])]:
        kept, _ = clean_requirement(str(line), facts.name, notes, source="build requirements")
        facts.build_requires.extend(k for k in kept if k not in facts.build_requires)
    backend = str(build.get("build-backend", ""))
    for prefix, needs in EDITABLE_REQUIRES.items():
        if backend.startswith(prefix):
            facts.build_requires.extend(n for n in needs if n not in facts.build_requires)
    facts.native = (
        any(b in backend for b in NATIVE_BACKENDS)
        or bool(re.search(r"\bExtension\s*\(|ext_modules|cythonize|build_ext", setup_py))
        or any(root.glob("*/*.pyx"))
        or any(root.glob("src/*/*.pyx"))
    )
    if VCS_VERSIONING.search(text):
        facts.vcs_tag_prefix = cfg.get("versioneer", {}).get("tag_prefix", "").strip("'\"")
    if tox:
        facts.has_tox = True
        facts.tox_extras = tox.extras()
    facts.requirement_files = find_requirement_files(root)
    declared_tests = (
        facts.has_tox
        or any(TEST_EXTRA.match(e) for e in facts.extras)
        or bool(dependency_groups(pyproject, facts.name, [])[1])
    )
    if not facts.requirement_files and not declared_tests and (root / PLAIN_FILE).is_file():
        # A library declares its runtime needs in its packaging files; a requirements.txt
        # beside them that nothing else explains holds what development needs (requests of
        # 2016: pytest-httpbin, which its tests' fixtures come from).
        facts.requirement_files = [PLAIN_FILE]
        notes.append(f"no test dependencies declared elsewhere: {PLAIN_FILE} used")
    facts.digest = inputs_digest(root)
    facts.notes = notes
    return facts


def extra_names(keys: list[Any]) -> list[str]:
    """The extras a project declares, from its extras_require keys.

    setuptools reads a key as `name:marker`: `':sys_platform=="win32"'` is no extra at all
    (requirements for every install, on that platform), `'test:python_version<"3"'` is the
    extra `test`. Names that are not valid extra names are dropped."""
    names: list[str] = []
    for key in keys:
        name = str(key).split(":", 1)[0].strip()
        if EXTRA_NAME.fullmatch(name) and name not in names:
            names.append(name)
    return names


def plan_deps(
    root: Path, facts: ProjectFacts, python: str, notes: list[str]
) -> tuple[list[str], list[DepSet]]:
    """(lines always installed, dependency sets to try in order) for the tests of `root`."""
    pyproject = load_pyproject(root)
    group_lines, groups = dependency_groups(pyproject, facts.name, notes)
    if groups:
        notes.append(f"dependency groups: {', '.join(groups)}")
    always = _unique(facts.build_requires)

    file_lines: list[str] = []
    file_extras: list[str] = []
    for rel in facts.requirement_files:
        lines, extras = read_requirement_file(root / rel, root, facts.name, notes)
        file_lines += lines
        file_extras += extras
    tox_lines: list[str] = []
    tox = ToxConfig.load(root, pyproject) if facts.has_tox else None
    if tox:
        tox_lines = tox.deps(python, facts.name, notes, root)

    declared = facts.extras
    test_extras = _unique(
        [e for e in declared if TEST_EXTRA.match(e)] + facts.tox_extras + file_extras
    )
    all_extras = _unique(test_extras + [e for e in declared if not SKIP_EXTRA.search(e)])
    # Dev dependency groups (Poetry's dev-dependencies, PEP 735, pdm, hatch) are a source of
    # test requirements like the others, not lines every plan must take: a Poetry project's
    # dev pins may conflict with its own, and then only plans without them resolve. Each
    # source is tried with the groups first, then without.
    sources: list[tuple[str, list[str]]] = []
    grouped = f"dependency groups ({', '.join(groups)})"
    if tox_lines or facts.tox_extras:
        sources += _with_groups("tox deps", tox_lines, grouped, group_lines)
    if file_lines:
        label = f"requirement files ({', '.join(facts.requirement_files)})"
        sources += _with_groups(label, file_lines, grouped, group_lines)
    if group_lines:
        sources.append((grouped, group_lines))
    sources.append(("no test requirement files", []))
    plans: list[DepSet] = []
    for extras, tag in ((all_extras, "all extras"), (test_extras, "test extras"), ([], "")):
        for label, lines in sources:
            full = f"{label}, {tag}" if tag else f"{label}, no extras"
            plan = DepSet(label=full, lines=_unique(lines), extras=extras)
            if not any(p.lines == plan.lines and p.extras == plan.extras for p in plans):
                plans.append(plan)
    return always, plans


def _with_groups(
    label: str, lines: list[str], grouped: str, group_lines: list[str]
) -> list[tuple[str, list[str]]]:
    if not group_lines:
        return [(label, lines)]
    return [(f"{label} + {grouped}", [*lines, *group_lines]), (label, lines)]


# ----------------------------------------------------------------------------- files


def load_pyproject(root: Path) -> dict[str, Any]:
    path = root / "pyproject.toml"
    text = read_config(path, root)
    if text is None:
        return {}
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        log.warning("%s is not valid TOML (%s); ignored", path, exc)
        return {}


def inputs_digest(root: Path) -> str:
    """Hash of the files that decide the dependencies (not the code: tasks of one era whose
    packaging files are equal share a resolution)."""
    h = hashlib.sha256()
    for pattern in DIGEST_GLOBS:
        for path in sorted(root.glob(pattern)):
            # In chunks (the repository decides the size); a link out of the repository is
            # left out, as a file that is not there.
            name = path.relative_to(root).as_posix().encode() + b"\0"
            if hash_file(h, path, root, prefix=name):
                h.update(b"\0")
    return h.hexdigest()[:16]


def _read(root: Path, name: str) -> str:
    return read_config(root / name, root) or ""


def _cfg(root: Path, name: str) -> dict[str, dict[str, str]]:
    text = read_config(root / name, root)
    if text is None:
        return {}
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return {}
    return {s: dict(parser.items(s)) for s in parser.sections()}


def _cfg_list(value: str | None) -> list[str]:
    return [v.strip() for v in re.split(r"[\n;]", value or "") if v.strip()]


def _regex_python_requires(text: str) -> str | None:
    # Dict-style configs: {'python_requires': '>=3.7'} as well as python_requires='>=3.7'.
    m = re.search(r"""['"]?python_requires['"]?\s*[=:]\s*['"]([^'"]+)['"]""", text)
    return m.group(1) if m else None


def _poetry_python(poetry: Any) -> str | None:
    if not isinstance(poetry, dict):
        return None
    value = poetry.get("dependencies", {}).get("python")
    if not isinstance(value, str):
        return None
    from swebounty.envs.requirements import poetry_constraint

    return poetry_constraint(value) or None


def setup_py_keywords(text: str) -> dict[str, Any]:
    """Literal keyword values of setup(...) in a setup.py, without running it.

    Also reads dict literals that hold setup keywords (`setup(**config)`) and resolves names
    bound at module level to literals."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    names: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                with contextlib.suppress(ValueError, SyntaxError, TypeError):
                    names[target.id] = ast.literal_eval(node.value)
    wanted = {"name", "python_requires", "extras_require", "setup_requires", "install_requires"}
    found: dict[str, Any] = {}

    def take(key: str, value: ast.expr) -> None:
        if key not in wanted or key in found:
            return
        try:
            found[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError):
            if isinstance(value, ast.Name) and value.id in names:
                found[key] = names[value.id]
            if key == "extras_require":
                # A dict built step by step: EXTRAS = {...}; EXTRAS['all'] = ...
                keys = _subscript_keys(tree, value)
                if keys:
                    old = found.get(key)
                    base: dict[str, Any] = old if isinstance(old, dict) else {}
                    found[key] = {**{k: [] for k in keys}, **base}

    for item in ast.walk(tree):
        if isinstance(item, ast.Call):
            for kw in item.keywords:
                if kw.arg:
                    take(kw.arg, kw.value)
        elif isinstance(item, ast.Dict):
            for k, v in zip(item.keys, item.values, strict=False):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    take(k.value, v)
    return found


def _subscript_keys(tree: ast.Module, value: ast.expr) -> list[str]:
    """Keys assigned as NAME['key'] = ... for a dict built step by step."""
    if not isinstance(value, ast.Name):
        return []
    keys: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for t in node.targets:
            if (
                isinstance(t, ast.Subscript)
                and isinstance(t.value, ast.Name)
                and t.value.id == value.id
                and isinstance(t.slice, ast.Constant)
                and isinstance(t.slice.value, str)
            ):
                keys.append(t.slice.value)
        named = any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets)
        if named and isinstance(node.value, ast.Dict):
            keys += [
                k.value
                for k in node.value.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
    return keys


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
