"""The per-task layer: a tiny venv that sees a shared environment and the workspace's code.

A shared environment holds the dependencies only. A task gets its own venv (a pyvenv.cfg, a
link to the interpreter and a site-packages), whose site-packages holds a .pth that adds the
shared site-packages. The workspace's own package goes into that layer, so tests import the
workspace, and nothing the task does can touch the shared, read-only environment.

Two ways to put the workspace in the layer:
- "pth" (pure-Python projects): replay, with paths moved to the workspace, what the era's pip
  did for an editable install of the base commit when the environment was built: the same
  import roots in a .pth, the same metadata (so entry points and `version()` work), the same
  console scripts. Costs a few file writes.
- "pip": run the era's pip inside the sandbox (`pip install --no-deps --no-build-isolation
  --no-index -e WORKSPACE`), for projects with compiled extensions, or whose packaging files the
  patch changed.
"""

from __future__ import annotations

import ast
import configparser
import hashlib
import logging
import os
import re
import shutil
from pathlib import Path

from pydantic import BaseModel

from swebounty import safefs
from swebounty.envs import buildbox, buildoutput, nspkg
from swebounty.envs.failures import NOT_THE_SPEC, StepFailed

log = logging.getLogger(__name__)

SHARED_PTH = "_swebounty_shared.pth"
NSPKG_PTH = "_swebounty_nspkg.pth"  # setuptools' namespace packages, rooted in the workspace
PROJECT_PTH = "_swebounty_project.pth"
PACKAGING_FILES = ("setup.py", "setup.cfg", "pyproject.toml")
MAX_PACKAGING_BYTES = 16 << 20
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib")
GENERATED_DIR = "_generated"  # in a spec's metadata store: files the install generated


class ProjectInstall(BaseModel):
    """How the base commit's own package installed into a layer, to replay per task."""

    name: str | None = None
    mode: str = "pip"  # "pth" or "pip"
    editable: bool = True  # False: the era's pip could only install a copy
    roots: list[str] = []  # import roots relative to the project dir ("." or "src")
    meta_dir: str | None = None  # name of the captured *.dist-info / *.egg-info
    console_scripts: dict[str, str] = {}  # name -> "module:attr"
    packaging_digest: str = ""  # of setup.py/setup.cfg/pyproject.toml at the base commit
    pip_version: str | None = None
    version_env: dict[str, str] = {}  # pretend-version variables for a per-task pip install
    generated: list[str] = []  # files the install wrote into the project (setuptools_scm's
    # `write_to`, ...), relative; the workspace gets the build's copy when it has none
    natives: list[str] = []  # compiled extensions the install built, relative (natives.py
    # builds them once per tree of build inputs; each task gets a copy)
    namespaces: dict[str, str] = {}  # namespace package -> its root, relative (nspkg.py)
    why: str = ""


def site_packages(layer: Path, minor: str) -> Path:
    return layer / "lib" / f"python{minor}" / "site-packages"


def make_layer(layer: Path, interpreter: Path, version: str, shared_site: Path) -> Path:
    """Create an empty venv at `layer` whose python also sees `shared_site`. Returns its python.

    Written by hand (not `python -m venv`): a few files, ~1 ms, and the same on 3.6 and 3.13."""
    if layer.exists():
        shutil.rmtree(layer)
    minor = ".".join(version.split(".")[:2])
    bindir = layer / "bin"
    sp = site_packages(layer, minor)
    sp.mkdir(parents=True)
    bindir.mkdir()
    (layer / "pyvenv.cfg").write_text(
        f"home = {interpreter.parent}\ninclude-system-site-packages = false\n"
        f"version = {version}\nversion_info = {version}\n",
        encoding="utf-8",
    )
    for name in ("python", "python3", f"python{minor}"):
        (bindir / name).symlink_to(interpreter)
    # addsitedir (not a bare path line) so the shared site's own .pth files are processed too.
    (sp / SHARED_PTH).write_text(f"import site; site.addsitedir({str(shared_site)!r})\n")
    return bindir / "python"


def packaging_digest(project: Path) -> str:
    """A digest of the packaging files. They may come from a patch: read without following
    links, as regular files, within a bound (a link to /proc/kmsg would hang the harness)."""
    h = hashlib.sha256()
    for name in PACKAGING_FILES:
        data = safefs.read_beneath(project, name, MAX_PACKAGING_BYTES)
        h.update(name.encode() + b"\0" + (b"-" if data is None else data) + b"\0")
    return h.hexdigest()[:16]


def native_files(project: Path) -> list[Path]:
    """Compiled files in `project`: regular files only (a link is no build output)."""
    return [project / rel for rel in buildoutput.regular_files(project, NATIVE_SUFFIXES)]


def native_stats(project: Path) -> dict[str, tuple[int, int]]:
    """Compiled files already in `project`, relative, with (size, mtime_ns): an install that
    leaves one of them as it was did not build it."""
    found = {}
    for p in native_files(project):
        st = p.lstat()
        found[p.relative_to(project).as_posix()] = (st.st_size, st.st_mtime_ns)
    return found


def project_files(project: Path) -> set[str]:
    """Every file under `project` but .git's, relative: what an install adds is a difference."""
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(project):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        rel = os.path.relpath(dirpath, project)
        found.update(os.path.normpath(os.path.join(rel, f)) for f in filenames)
    return found


def generated_files(project: Path, before: set[str], roots: list[str]) -> list[str]:
    """Files the install wrote under the import roots that the code imports: a version module
    from setuptools_scm's `write_to`/`version_file` (pytest's `_pytest/_version.py`), hatch-vcs'
    `version-file`, versioneer's `_version.py`. Build debris and bytecode are not code."""
    kept = []
    for rel in sorted(project_files(project) - before):
        parts = Path(rel).parts
        if (
            rel.endswith((".pyc", *NATIVE_SUFFIXES))
            or any(
                p == "__pycache__" or p.endswith(".egg-info") or p.startswith(".") for p in parts
            )
            or parts[0] in ("build", "dist")
        ):
            continue
        if any(r == "." or rel.startswith(r.rstrip("/") + "/") for r in roots):
            kept.append(Path(rel).as_posix())
    return kept


def capture(
    layer: Path,
    minor: str,
    project: Path,
    store: Path,
    before: set[str] | None = None,
    prebuilt: dict[str, tuple[int, int]] | None = None,
) -> ProjectInstall:
    """Read what an editable install of `project` left in `layer`; copy its metadata to
    `store`, and the files it generated in `project` (those not in `before`). The result says
    whether replaying it ("pth") is faithful, and if not, why. Compiled files listed in
    `prebuilt` (`native_stats` before the install) that the install left untouched are the
    repository's own (Sphinx commits a test fixture `halibut.cpython-38-x86_64-linux-gnu.so`):
    they do not make every task rebuild the project."""
    sp = site_packages(layer, minor)
    info = ProjectInstall(packaging_digest=packaging_digest(project))
    roots: set[Path] = set()
    namespaces: dict[str, Path] = {}
    problems: list[str] = []
    # The layer holds what the repository's build wrote: read as regular files (buildoutput).
    for link in sp.glob("*.egg-link"):  # legacy `setup.py develop`
        first = (buildoutput.read_text(link) or "").splitlines()[:1]
        if first and first[0].strip():
            roots.add(Path(first[0].strip()).resolve())
    for pth in sp.glob("*.pth"):
        if pth.name in (SHARED_PTH, "easy-install.pth"):
            continue
        for line in (buildoutput.read_text(pth) or "").splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                if (declared := nspkg.parse(line)) is not None:
                    namespaces[declared[1]] = Path(declared[0])
                    continue
                mapped = _finder_roots(sp, line)
                if mapped is None:
                    problems.append(f"{pth.name} runs an import hook swebounty cannot replay")
                else:
                    roots.update(mapped)
                continue
            path = Path(line) if os.path.isabs(line) else (sp / line)
            roots.add(path.resolve())
    meta = _find_metadata(sp, project)
    project = project.resolve()
    rel_roots = []
    for root in sorted(roots):
        try:
            rel_roots.append(root.relative_to(project).as_posix() or ".")
        except ValueError:
            problems.append(f"import root {root} is outside the project")
    info.namespaces = nspkg.relative(namespaces, project, problems)
    if meta is not None:
        dest = store / meta.name
        if dest.exists():
            shutil.rmtree(dest)
        buildoutput.copy_tree(meta, dest, skip=frozenset({"RECORD", "direct_url.json"}))
        info.meta_dir = meta.name
        info.name, info.console_scripts = _read_meta(dest)
    else:
        problems.append("no metadata (.dist-info/.egg-info) found after the install")
    natives = [
        p
        for p in native_files(project)
        if (prebuilt or {}).get(p.relative_to(project).as_posix())
        != (p.lstat().st_size, p.lstat().st_mtime_ns)
    ]
    info.natives = sorted(p.relative_to(project).as_posix() for p in natives)
    if not rel_roots:
        problems.append("no import root found")
    info.roots = rel_roots
    if before is not None:
        generated = generated_files(project, before, rel_roots)
        info.generated = [
            rel
            for rel in generated
            if buildoutput.copy_file(project, rel, store / GENERATED_DIR / rel)
        ]
    if problems:
        info.mode, info.why = "pip", "; ".join(problems)
    elif natives:
        shown = f"{len(natives)} compiled extensions, built once per tree of build inputs"
        info.mode, info.why = "pth", f"{shown}; import roots {', '.join(rel_roots)}"
    else:
        info.mode, info.why = "pth", f"pure Python; import roots {', '.join(rel_roots)}"
    return info


def _finder_roots(sp: Path, line: str) -> set[Path] | None:
    """setuptools' strict editable finder: `MAPPING = {'pkg': '/src/pkg'}` -> {/src}."""
    m = re.match(r"import (__editable___[\w.]+_finder)", line)
    if not m:
        return None
    text = buildoutput.read_text(sp / f"{m.group(1)}.py")
    if text is None:
        return None
    found = re.search(r"^MAPPING\s*(?::[^=]*)?=\s*(\{.*?\})\s*$", text, re.M | re.S)
    if not found:
        return None
    try:
        mapping = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return None
    roots: set[Path] = set()
    for name, target in mapping.items():
        path = Path(target)
        if path.name != name.split(".")[-1] and path.stem != name.split(".")[-1]:
            return None  # a renamed package: a plain sys.path entry cannot express it
        roots.add(path.parent.resolve())
    return roots


def _find_metadata(sp: Path, project: Path) -> Path | None:
    found = sorted(sp.glob("*.dist-info"))
    if found:
        return found[0]
    # Legacy develop leaves <name>.egg-info next to the code (project root or src/).
    eggs = sorted(project.glob("*.egg-info")) + sorted(project.glob("*/*.egg-info"))
    return eggs[0] if eggs else None


def _read_meta(meta: Path) -> tuple[str | None, dict[str, str]]:
    name = None
    for file in ("METADATA", "PKG-INFO"):
        path = meta / file
        if path.is_file():
            m = re.search(
                r"^Name:\s*(.+)$", path.read_text(encoding="utf-8", errors="replace"), re.M
            )
            name = m.group(1).strip() if m else None
            break
    scripts: dict[str, str] = {}
    ep = meta / "entry_points.txt"
    if ep.is_file():
        parser = configparser.RawConfigParser(delimiters=("=",))
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        try:
            parser.read_string(ep.read_text(encoding="utf-8", errors="replace"))
        except configparser.Error:
            return name, scripts
        if parser.has_section("console_scripts"):
            scripts = {k.strip(): v.strip() for k, v in parser.items("console_scripts")}
    return name, scripts


def replay(layer: Path, minor: str, info: ProjectInstall, store: Path, workspace: Path) -> None:
    """Put the workspace into the layer the way `capture` saw the base commit installed."""
    sp = site_packages(layer, minor)
    for rel in info.generated:
        # The workspace has no tags and was never built: it lacks what the build generated
        # (`ModuleNotFoundError: _pytest._version`). A file the patch adds is left as it is.
        # The workspace holds what a patch made: never follow a link in it (safefs).
        source = store / GENERATED_DIR / rel
        if safefs.exists_beneath(workspace, rel) or not source.is_file():
            continue
        safefs.write_beneath(workspace, rel, source.read_bytes(), source.stat().st_mode & 0o777)
    # Not resolved: a link the patch planted must not move an import root.
    roots = [os.path.normpath(workspace / r) for r in info.roots]
    (sp / PROJECT_PTH).write_text("".join(r + "\n" for r in roots), encoding="utf-8")
    if info.namespaces:
        (sp / NSPKG_PTH).write_text(nspkg.rooted(info.namespaces, workspace), encoding="utf-8")
    if info.meta_dir:
        shutil.copytree(store / info.meta_dir, sp / info.meta_dir)
    python = layer / "bin" / "python"
    for name, target in info.console_scripts.items():
        module, _, attr = target.partition(":")
        attr = attr.split("[")[0].strip()  # "func [extra]" in old entry points
        head = attr.split(".")[0] if attr else ""
        call = f"{attr}()" if attr else "None"
        script = layer / "bin" / name
        script.write_text(
            f"#!{python}\nimport sys\nfrom {module.strip()} import {head}\nsys.exit({call})\n"
            if head
            else f"#!{python}\nimport runpy, sys\nrunpy.run_module({module.strip()!r})\n",
            encoding="utf-8",
        )
        script.chmod(0o755)


def install_and_capture(
    project: Path,
    *,
    layer: Path,
    interpreter: Path,
    version: str,
    shared_site: Path,
    pip_version: str | None,
    store: Path,
    env: dict[str, str],
    log_path: Path,
    before: set[str] | None = None,
    timeout: float = 1800,
    interpreter_prefix: Path | None = None,
) -> ProjectInstall:
    """Install the base commit's `project` into a throw-away layer with the era's pip, the way
    each task will, and capture what it did (to replay it per task when that is faithful).
    `before` lists the project's files as copied, before anything built in it (resolving the
    project builds its metadata in place, and setuptools_scm writes its version file then).

    The install runs the repository's own build code: in the build sandbox (buildbox.py),
    writing only `layer.parent` (which holds `project` and `layer`), seeing the interpreter
    (`interpreter_prefix`) and the environment of `shared_site` read-only.

    Raises StepFailed("install the project", "build") when neither an editable install nor a
    copy works with this interpreter."""
    minor = ".".join(version.split(".")[:2])
    python = make_layer(layer, interpreter, version, shared_site)
    if before is None:
        before = project_files(project)
    prebuilt = native_stats(project)
    venv = shared_site.parents[2]  # ENV/venv/lib/pythonX.Y/site-packages
    reads = [interpreter_prefix or interpreter.resolve().parents[1], venv]
    for editable in (True, False):
        argv = pip_argv(python, project, pip_version, editable)
        try:
            buildbox.run_step("install the project", argv, log_path, workdir=layer.parent,
                              reads=reads, env=env, timeout=timeout)  # fmt: skip
        except StepFailed as exc:
            if exc.kind in NOT_THE_SPEC:  # killed: not the install's doing, nor a reason to retry
                raise
            if editable:
                continue  # pips before 21.3 cannot install a pyproject-only project editable
            raise StepFailed("install the project", "build", exc.output) from exc
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir(parents=True)
        if not editable:
            return ProjectInstall(
                mode="pip",
                editable=False,
                pip_version=pip_version,
                packaging_digest=packaging_digest(project),
                why=f"pip {pip_version} could not install it editable; installs a copy",
            )
        info = capture(layer, minor, project, store, before, prebuilt)
        info.pip_version = pip_version
        return info
    raise AssertionError("unreachable")


def pip_argv(python: Path, workspace: Path, pip_version: str | None, editable: bool) -> list[str]:
    """The era's pip installing the workspace with what is already there: no index, no deps."""
    argv = [str(python), "-m", "pip", "install", "--no-deps", "--no-index"]
    if _pip_at_least(pip_version, 10):  # older pips have no build isolation to turn off
        argv.append("--no-build-isolation")
    return [*argv, "-e", str(workspace)] if editable else [*argv, str(workspace)]


def _pip_at_least(version: str | None, major: int) -> bool:
    if not version:
        return True
    m = re.match(r"(\d+)", version)
    return m is not None and int(m.group(1)) >= major
