"""setuptools' namespace-package lines (`NAME-nspkg.pth`), read from an editable install and
written again for a workspace.

A project that declares `namespace_packages` (pkg_resources-style namespaces) gets, from
setuptools' editable install, a `NAME-nspkg.pth` next to its path entry: one line of code per
namespace that creates the namespace module from the project's source folder *without running
its __init__.py* (which calls `pkg_resources.declare_namespace`, a DeprecationWarning that a
`filterwarnings = error` configuration turns into a collection error). Code in a .pth is an
import hook the per-task layer cannot replay in general, so such projects were installed with
pip in every task's sandbox, and PEP 660 editable installs build every compiled extension again
there, in a fresh build folder (the extensions built once per tree, natives.py, unused), against
the system's libraries (switches.py): image tests drawn with the project's own FreeType then
differed on the unpatched base.

The rule: a line that is exactly setuptools' template for one package, rooted at a literal
folder (the develop/editable variant; the site-packages variant is not replayable), is
recognised as (folder, package). Replay writes the same template, rooted in the workspace; any
other line stays an import hook the layer cannot replay.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

# setuptools/namespaces.py: Installer._nspkg_tmpl and _nspkg_tmpl_multi (setuptools 31 to 69).
_TEMPLATE = (
    "import sys, types, os",
    "has_mfs = sys.version_info > (3, 5)",
    "p = os.path.join(%(root)s, *%(pth)r)",
    "importlib = has_mfs and __import__('importlib.util')",
    "has_mfs and __import__('importlib.machinery')",
    "m = has_mfs and sys.modules.setdefault(%(pkg)r, importlib.util.module_from_spec("
    "importlib.machinery.PathFinder.find_spec(%(pkg)r, [os.path.dirname(p)])))",
    "m = m or sys.modules.setdefault(%(pkg)r, types.ModuleType(%(pkg)r))",
    "mp = (m or []) and m.__dict__.setdefault('__path__',[])",
    "(p not in mp) and mp.append(p)",
)
_MULTI = ("m and setattr(sys.modules[%(parent)r], %(child)r, m)",)
_ROOT = re.compile(r"p = os\.path\.join\(('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"), \*")
_PKG = re.compile(r"sys\.modules\.setdefault\(('[A-Za-z_][\w.]*'), ")
_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def render(root: str, package: str) -> str:
    """setuptools' line for `package`, a namespace whose folder is under `root`."""
    parent, _, child = package.rpartition(".")
    lines = _TEMPLATE + (_MULTI if parent else ())
    values = {
        "root": repr(root),
        "pth": tuple(package.split(".")),
        "pkg": package,
        "parent": parent,
        "child": child,
    }
    return ";".join(lines) % values


def parse(line: str) -> tuple[str, str] | None:
    """(root folder, package) of a line setuptools' editable install wrote; None for any other
    line (the site-packages variant, another template, anything added to it)."""
    root_m, pkg_m = _ROOT.search(line), _PKG.search(line)
    if root_m is None or pkg_m is None:
        return None
    try:
        root, package = ast.literal_eval(root_m.group(1)), ast.literal_eval(pkg_m.group(1))
    except (ValueError, SyntaxError):
        return None
    if not isinstance(root, str) or not isinstance(package, str) or not _NAME.match(package):
        return None
    if render(root, package) != line.strip():
        return None
    return root, package


def relative(found: dict[str, Path], project: Path, problems: list[str]) -> dict[str, str]:
    """`found` (package -> root folder) with each root relative to `project`; a root outside
    it is a problem (replay could not move it to the workspace)."""
    out: dict[str, str] = {}
    for package, root in sorted(found.items()):
        try:  # the root is the repository's build's word: a link loop must not stop the build
            out[package] = root.resolve().relative_to(project.resolve()).as_posix() or "."
        except (ValueError, OSError, RuntimeError):
            problems.append(f"namespace package {package} is outside the project")
    return out


def rooted(namespaces: dict[str, str], workspace: Path) -> str:
    """The .pth text declaring `namespaces` (package -> relative root) in `workspace`."""
    return "".join(
        render(os.path.normpath(workspace / rel), package) + "\n"
        for package, rel in sorted(namespaces.items())
    )
