"""What the harness does to a patched workspace so that the tests, not the submission, decide.

Before the hidden tests go on (host side, before anything sandboxed ran in the workspace):
- test files the patch touched are the base's again (`revert_test_paths`): code that runs
  beside the hidden tests is not the submission's to write;
- compiled code a patch adds (bytecode, `__pycache__`, native libraries, ELF executables) is
  removed: it would run instead of, or beside, the source a reviewer reads (`adds_binary`);
- the test infrastructure is put back to the base commit's (`revert_test_infra`): every file
  pytest reads configuration or plugins from, in any directory (INFRA_NAMES, conftest.py, the
  plugin modules the base's conftests and `-p` options name), sitecustomize/usercustomize and
  .pth files. setup.cfg, tox.ini and pyproject.toml hold packaging too: they are reverted only
  when their pytest part changed. What changed is listed on the verdict (`test_infra_reverted`).
`infra_manifest` then records the infrastructure as the hidden tests need it (the base's plus
the test patch's), so the sandboxed runner can restore it again after an install step ran the
submission's build code.
"""

from __future__ import annotations

import ast
import configparser
import logging
import re
import sys
import threading
from pathlib import Path, PurePosixPath

from swebounty import safefs
from swebounty.diffs import PatchError, files_in_patch, parse_patch
from swebounty.headtree import _output, _run, head_entries, head_tree, read_blobs, tree_listing
from swebounty.patches import reset_files

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

log = logging.getLogger(__name__)

INFRA_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        ".pytest.toml",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
INFRA_SUFFIXES = (".pth",)
DUAL_USE = frozenset({"setup.cfg", "tox.ini", "pyproject.toml"})  # packaging config too
COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".dylib", ".dll", ".exe")
MAX_INFRA_BYTES = 16 << 20  # every infrastructure file together, as the runner gets them
_SKIP_DIRS = frozenset({".git"})


class IntegrityError(Exception):
    """The workspace cannot be made ready for the hidden tests (an infrastructure error)."""


def is_infra_name(name: str) -> bool:
    return name in INFRA_NAMES or name.endswith(INFRA_SUFFIXES)


def strip_compiled(workspace: Path, patch: str) -> list[str]:
    """Remove what `patch` added that would run without being read: compiled Python, native
    libraries, executables (binary diffs starting with ELF's magic). Returns the paths."""
    removed = []
    for diff in parse_patch(patch):
        path = diff.target
        if path is None:
            continue
        parts = PurePosixPath(path).parts
        compiled = path.endswith(COMPILED_SUFFIXES) or "__pycache__" in parts
        if not compiled and diff.binary:
            head = safefs.read_beneath(workspace, path, 64 << 20) or b""
            compiled = head.startswith((b"\x7fELF", b"MZ", b"\xcf\xfa\xed\xfe"))
        if compiled:
            safefs.remove_beneath(workspace, path, prune_empty_parents=True)
            removed.append(path)
    return removed


def infra_paths(workspace: Path) -> list[str]:
    """Every file (or link) with an infrastructure name under `workspace`, .git excluded."""
    try:
        # Names are tested before a path is built: a path per file cost half of the walk.
        return sorted(
            f"{rel}/{name}" if rel else name
            for rel, _, entries in safefs.walk_dirs(workspace, skip_dirs=_SKIP_DIRS)
            for name, is_dir in entries
            if not is_dir and (name in INFRA_NAMES or name.endswith(INFRA_SUFFIXES))
        )
    except safefs.UnsafePathError as exc:
        raise IntegrityError(f"cannot list the workspace's test infrastructure: {exc}") from exc


def revert_test_infra(workspace: Path) -> list[str]:
    """Make the test infrastructure the base commit's; return the paths that were different.

    Call it before the test patch goes on (its own conftest.py and configuration are the
    hidden tests' and stay), and before anything sandboxed ran in the workspace: it reads the
    base's blobs with git."""
    base = base_infra(workspace)
    candidates = sorted(set(infra_paths(workspace)) | set(base))
    changed = []
    for rel in candidates:
        current = safefs.read_beneath(workspace, rel, MAX_INFRA_BYTES)
        if rel in base and current == base[rel]:
            continue
        name = PurePosixPath(rel).name
        if name in DUAL_USE and current is not None:
            # Packaging lives here too: a fix may change it. Only pytest's part must not move.
            part = pytest_part(name, current)
            if part is not None and part == pytest_part(name, base.get(rel, b"")):
                continue
        changed.append(rel)
    if changed:
        try:
            reset_files(workspace, changed)
        except PatchError as exc:
            raise IntegrityError(f"cannot restore the test infrastructure: {exc}") from exc
    return changed


def revert_test_paths(workspace: Path, patch: str) -> list[str]:
    """Put back every test file the patch touched (tests/ directories, test_*.py, testing/...,
    by the rules tasks are split with): a changed `tests/__init__.py` or test helper would run
    beside the hidden tests and could swap the code under test for one that passes. A reference
    patch never holds such a path (collect.split puts them in the test patch), so honest work
    loses only the agent's own tests, which are not run anyway. Returns the paths."""
    from swebounty.collect.split import SplitRules

    rules = SplitRules()
    paths = [p for p in files_in_patch(patch) if rules.classify(p) == "test"]
    if paths:
        try:
            reset_files(workspace, paths)
        except PatchError as exc:
            raise IntegrityError(f"cannot restore the test files: {exc}") from exc
    return paths


def infra_manifest(workspace: Path) -> dict[str, object]:
    """The runner's description of the infrastructure as it must be when the tests start."""
    files: dict[str, str] = {}
    total = 0
    for rel in infra_paths(workspace):
        data = safefs.read_beneath(workspace, rel, MAX_INFRA_BYTES)
        if data is None:
            continue  # a link or a special file (git can make links): the runner removes it
        total += len(data)
        if total > MAX_INFRA_BYTES:
            raise IntegrityError(f"the test infrastructure is over {MAX_INFRA_BYTES} bytes")
        files[rel] = data.hex()
    return {"files": files, "names": sorted(INFRA_NAMES), "suffixes": list(INFRA_SUFFIXES)}


def pytest_part(name: str, data: bytes) -> object | None:
    """What pytest reads from a file it shares with packaging tools: the `tool.pytest` table
    of pyproject.toml, the lines of every section whose name mentions pytest in setup.cfg and
    tox.ini (wider than any parser's idea of them). None when the file cannot be read as that
    format: then the whole file counts as changed."""
    text = data.decode("utf-8", "replace")
    if name == "pyproject.toml":
        try:
            tool = tomllib.loads(text).get("tool", {})
        except tomllib.TOMLDecodeError:
            return None
        return repr(tool.get("pytest")) if isinstance(tool, dict) else None
    try:
        configparser.RawConfigParser(strict=False, interpolation=None).read_string(text)
    except configparser.Error:
        return None
    kept, inside = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("["):
            inside = "pytest" in line.lower()
        if inside:
            kept.append(line)
    return "\n".join(kept)


def base_infra(workspace: Path) -> dict[str, bytes]:
    """path -> content of the base commit's test infrastructure: every file with an
    infrastructure name, and the plugin modules its configuration names. Read once per tree
    (HEAD's) and kept while small: three git processes and a parse per evaluation otherwise."""
    tree = head_tree(workspace)
    found = _base_infra.get(tree) if tree else None
    if found is None:
        found = _head_infra(workspace, tree or "HEAD")
        found.update(plugin_modules(workspace, found))
        if tree and sum(map(len, found.values())) <= _MEMO_BYTES:
            with _base_infra_lock:
                _base_infra[tree] = found
                while len(_base_infra) > _MEMO_TREES:
                    _base_infra.pop(next(iter(_base_infra)))
    return dict(found)


_MEMO_TREES = 64
_MEMO_BYTES = 1 << 20  # a tree's infrastructure kept in memory only up to this size
_base_infra: dict[str, dict[str, bytes]] = {}
_base_infra_lock = threading.Lock()


def _head_infra(workspace: Path, tree: str) -> dict[str, bytes]:
    """path -> content of every infrastructure file of the base commit."""
    try:
        known = tree_listing(workspace, tree) if tree != "HEAD" else None
    except PatchError as exc:  # an infrastructure error, as when git listed it here
        raise IntegrityError(f"cannot list the base commit: {exc}") from exc
    if known is not None:
        names = list(known)  # the listing every later question about this tree reads
    else:
        listing = _run(["git", "ls-tree", "-r", "-z", "--name-only", tree], workspace)
        if listing.returncode != 0:
            raise IntegrityError(f"cannot list the base commit: {_output(listing).strip()}")
        names = listing.stdout.decode("utf-8", "surrogateescape").split("\0")
    wanted = [n for n in names if n and is_infra_name(PurePosixPath(n).name)]
    return _blobs_of(workspace, wanted)


def _blobs_of(workspace: Path, paths: list[str]) -> dict[str, bytes]:
    entries = {p: e for p, e in head_entries(workspace, paths).items() if e[0] != "160000"}
    blobs = read_blobs(workspace, [sha for _, sha in entries.values()])
    return {p: blobs[sha] for p, (_mode, sha) in entries.items()}


def plugin_modules(workspace: Path, base_infra: dict[str, bytes]) -> dict[str, bytes]:
    """The base's own plugin modules: named by `pytest_plugins` in its conftest.py files or by
    `-p` in its pytest configuration, found in the base commit. Path -> base content."""
    names: set[str] = set()
    roots = {"", "src"}
    for rel, data in base_infra.items():
        name = PurePosixPath(rel).name
        if name == "conftest.py":
            names.update(_conftest_plugins(data))
            parent = PurePosixPath(rel).parent
            roots.add("" if str(parent) == "." else str(parent))
        else:
            names.update(_config_plugins(name, data))
    candidates = []
    for module in names:
        if not re.fullmatch(r"[A-Za-z_][\w.]*", module) or module.startswith("no:"):
            continue
        dotted = module.replace(".", "/")
        for root in roots:
            prefix = f"{root}/" if root else ""
            candidates += [f"{prefix}{dotted}.py", f"{prefix}{dotted}/__init__.py"]
    return _blobs_of(workspace, sorted(set(candidates))) if candidates else {}


def _conftest_plugins(data: bytes) -> set[str]:
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        value = getattr(node, "value", None)
        if any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets):
            items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            found.update(
                i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)
            )
    return found


def _config_plugins(name: str, data: bytes) -> set[str]:
    """Modules named by `-p` in a pytest configuration file's addopts."""
    text = data.decode("utf-8", "replace")
    addopts: list[object] = []
    try:
        if name.endswith(".toml"):
            doc = tomllib.loads(text)
            tool = doc.get("tool", {}) if name == "pyproject.toml" else {"pytest": doc}
            pytest_table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
            if name != "pyproject.toml":
                pytest_table = pytest_table.get("pytest", {})
            for table in (pytest_table, pytest_table.get("ini_options", {})):
                if isinstance(table, dict):
                    addopts.append(table.get("addopts"))
        else:
            parser = configparser.RawConfigParser(strict=False, interpolation=None)
            parser.read_string(text)
            for section in ("pytest", "tool:pytest"):
                if parser.has_option(section, "addopts"):
                    addopts.append(parser.get(section, "addopts"))
    except (tomllib.TOMLDecodeError, configparser.Error, AttributeError, TypeError):
        return set()
    found = set()
    for opts in addopts:
        if isinstance(opts, str):
            tokens = opts.split()
        elif isinstance(opts, list):
            tokens = [str(t) for t in opts]
        else:
            continue
        for i, token in enumerate(tokens):
            if token == "-p" and i + 1 < len(tokens):
                found.add(tokens[i + 1])
            elif token.startswith("-p") and len(token) > 2:
                found.add(token[2:])
    return found
