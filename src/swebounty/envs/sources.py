"""Sources a project's build would download, provided from a local folder.

matplotlib's build (`setupext.py`) downloads FreeType 2.6.1 and extracts it into
`build/freetype-2.6.1`; its image tests pass only against that FreeType, and its sites are
out of reach here (switches.py: such a build is otherwise made against the system's FreeType,
and every image test fails on the base commit too). A helper of that kind uses a directory
`build/NAME-VERSION` that already exists as it is, without downloading. The rule, read from
the project's build helpers (`setupext.py`, `setup.py`; their code is parsed, never run): a
path under `build/` that they name, `NAME-VERSION`, which the sources folder holds, is put in
the *build copy* (buildcopy.copy_project) at `build/NAME-VERSION`, and the build's
`system_NAME` switch is not forced true (the other switches still are). Without it, nothing
changes. What was used enters the spec's and the extensions' cache keys (the digest of each
tree or tarball) and their build logs, so a build against the system's library is never
reused for one against the provided source, nor the other way round.

The folder (`--sources-dir`, default CACHE/sources) is the user's: it holds source trees named
`NAME-VERSION/` and/or tarballs `NAME-VERSION.tar.gz` whose one top-level directory is
`NAME-VERSION` (a tree wins over a tarball of the same name). It is read once per run. The
names read from a project are the dataset's: only `NAME-VERSION` with no `/` and no `..` is
looked up, and the copy is written beneath the build copy without following links.

FreeType 2.6.1 for matplotlib, from the release tarball (sha256 0a3c7dfb…c367014):

    cp freetype-2.6.1.tar.gz SOURCES/

or from a git checkout of FreeType (tag VER-2-6-1), which lacks the generated `configure`
that release tarballs have and that matplotlib 3.3's build needs (autoconf, automake and
libtool; Debian: apt-get install autoconf automake libtool):

    mkdir SOURCES/freetype-2.6.1
    git -C freetype archive VER-2-6-1 | tar -x -C SOURCES/freetype-2.6.1
    (cd SOURCES/freetype-2.6.1 && sh autogen.sh)
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import logging
import os
import re
import shutil
import tarfile
import threading
from pathlib import Path

from swebounty import safefs

log = logging.getLogger(__name__)

HELPERS = ("setupext.py", "setup.py")  # the build's own code, at the project's root
MAX_HELPER_BYTES = 1 << 20
MAX_VALUES = 16  # strings one expression of a helper may stand for
TARBALL = ".tar.gz"
# A directory under build/ that stands for a downloaded source: NAME-VERSION, one component.
_SOURCE_NAME = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_]*)-[0-9][A-Za-z0-9_.+]*")


def is_source_name(text: str) -> bool:
    return _SOURCE_NAME.fullmatch(text) is not None and ".." not in text


def switch_name(source: str) -> str:
    """`system_NAME`: the build option that would use the system's library instead."""
    match = _SOURCE_NAME.fullmatch(source)
    assert match is not None
    return f"system_{match['name'].lower()}"


def wanted(project: Path) -> list[str]:
    """The `NAME-VERSION` directories under `build/` that the project's build helpers name
    (`Path('build', f'freetype-{VERSION}')`, `f'build/qhull-{VERSION}/src'`), with module
    variables resolved through their assignments (every branch's); others are refused."""
    found: list[str] = []
    for helper in HELPERS:
        data = safefs.read_beneath(project, helper, MAX_HELPER_BYTES)
        if data is None:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        for rel in _under_build(tree):
            first = rel.split("/", 1)[0]
            if is_source_name(first) and ".." not in rel.split("/") and not rel.startswith("/"):
                if first not in found:
                    found.append(first)
            elif "-" in first:
                log.debug("%s/%s: build/%s is not a source's name: ignored", project, helper, rel)
    return found


def _under_build(tree: ast.AST) -> list[str]:
    """Paths relative to build/ that the module names, as strings."""
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            values.setdefault(node.target.id, []).append(node.value)
    found: list[str] = []
    for node in ast.walk(tree):
        if (  # Path('build', X), os.path.join('build', X)
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "build"
        ):
            found += _strings(node.args[1], values, 0)
        elif isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, str)
        ):
            found += [
                s[len("build/") :] for s in _strings(node, values, 0) if s.startswith("build/")
            ]
    return found


def _strings(expr: ast.expr, values: dict[str, list[ast.expr]], depth: int) -> list[str]:
    """What `expr` may be: a literal, a variable's assigned values, an f-string of those."""
    if depth > 8:
        return []
    if isinstance(expr, ast.Constant):
        return [expr.value] if isinstance(expr.value, str) else []
    if isinstance(expr, ast.Name):
        out: list[str] = []
        for value in values.get(expr.id, []):
            out += _strings(value, values, depth + 1)
        return list(dict.fromkeys(out))[:MAX_VALUES]
    if isinstance(expr, ast.JoinedStr):
        parts: list[list[str]] = []
        for part in expr.values:
            if isinstance(part, ast.FormattedValue):
                if part.conversion != -1 or part.format_spec is not None:
                    return []
                parts.append(_strings(part.value, values, depth + 1))
            else:
                parts.append(_strings(part, values, depth + 1))
        combos = itertools.islice(itertools.product(*parts), MAX_VALUES)
        return ["".join(c) for c in combos]
    return []


class Sources:
    """The sources folder: what it holds, and what of it a project's build would download."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder).expanduser().resolve()
        self._guard = threading.Lock()
        self._held: dict[str, Path] | None = None
        self._digests: dict[Path, str] = {}

    def held(self) -> dict[str, Path]:
        """NAME-VERSION -> its tree or tarball in the folder."""
        with self._guard:
            if self._held is None:
                self._held = _listing(self.folder)
            return self._held

    def for_project(self, project: Path) -> dict[str, str]:
        """NAME-VERSION -> digest, for each source the project's build would download and the
        folder holds: what a cache key of its build must include. {} when none."""
        held = self.held()
        if not held:
            return {}
        return {name: self._digest(held[name]) for name in wanted(project) if name in held}

    def place(self, project: Path) -> dict[str, str]:
        """Put each source the project's build would download, that the folder holds, at
        `project/build/NAME-VERSION` (replacing what is there). Returns them as for_project."""
        provided = self.for_project(project)
        held = self.held()
        for name in provided:
            with safefs.open_dir(project, ["build"], create=True):
                pass  # build/ is a real directory in the copy, never a link out of it
            safefs.remove_beneath(project, f"build/{name}")
            if held[name].is_dir():
                shutil.copytree(held[name], project / "build" / name, symlinks=True)
            else:
                _extract(held[name], name, project / "build")
            log.info("build copy %s: build/%s from %s", project, name, held[name])
        return provided

    def _digest(self, path: Path) -> str:
        with self._guard:
            found = self._digests.get(path)
        if found is None:
            found = _tree_digest(path) if path.is_dir() else _file_digest(path)
            with self._guard:
                self._digests[path] = found
        return found


def _listing(folder: Path) -> dict[str, Path]:
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return {}
    found: dict[str, Path] = {}
    for entry in entries:
        if entry.name.endswith(TARBALL) and entry.is_file():
            name = entry.name[: -len(TARBALL)]
            problem = _tarball_problem(entry, name) if is_source_name(name) else "its name"
            if problem is None:
                found[name] = entry
            else:
                log.warning("sources folder: %s left out (%s)", entry, problem)
    for entry in entries:
        if is_source_name(entry.name) and entry.is_dir():
            found[entry.name] = entry  # a tree wins over a tarball of the same name
    return found


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def _tree_digest(root: Path) -> str:
    """Every file's path, executable bit and content (a link's target), in order."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(Path(dirpath, d))]):
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                h.update(f"L {rel} {os.readlink(path)}\n".encode())
                continue
            h.update(f"F {rel} {os.access(path, os.X_OK):d} ".encode())
            h.update(_file_digest(path).encode() + b"\n")
    return "tree:" + h.hexdigest()


def _tarball_problem(tarball: Path, name: str) -> str | None:
    """Why the tarball cannot stand for `name`, or None: it must hold regular files and
    directories only, every one beneath `name/`."""
    try:
        with tarfile.open(tarball, "r:gz") as tar:
            for m in tar.getmembers():
                parts = m.name.split("/")
                if parts[0] != name or ".." in parts or not (m.isfile() or m.isdir()):
                    return f"{m.name!r} is not a file or folder under {name}/"
    except (OSError, tarfile.TarError, EOFError) as exc:
        return f"not a gzip tarball: {exc}"
    return None


def _extract(tarball: Path, name: str, dest: Path) -> None:
    """The tarball's `name/` tree into `dest` (checked by _tarball_problem when listed)."""
    with tarfile.open(tarball, "r:gz") as tar:
        for m in tar.getmembers():
            rel = m.name.rstrip("/")
            if m.isdir():
                with safefs.open_dir(dest, rel.split("/"), create=True):
                    pass
                continue
            source = tar.extractfile(m)
            assert source is not None
            safefs.write_beneath(dest, rel, source.read(), 0o755 if m.mode & 0o111 else 0o644)
