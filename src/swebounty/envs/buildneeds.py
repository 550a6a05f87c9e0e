"""What the project's own build imports and nothing declares.

A setup.py of the numpy.distutils era builds its extensions from the project's own build
helpers, which import what the project never declares: scikit-learn 0.20-0.22 declares numpy,
scipy and joblib, and `sklearn/utils/setup.py` does `from Cython import Tempita` (its
developers install Cython by hand; its CI scripts do). The era's pip, installing the project
without build isolation into an environment that lacks it, fails with `ModuleNotFoundError: No
module named 'Cython'`, and an older interpreter fails the same way.

The rule: when installing the project fails on a module nobody installed, and the import is
the project's own (the innermost frame of the traceback is a file of the project, not of an
installed package), that module's distribution (by its import name, or `IMPORT_NAMES`) is
added to the environment's requirements, resolved at the spec's cutoff like the rest, and the
build is tried again. Each module is asked for once. Only the unpatched base commit's build is
read: a submission cannot choose what a shared environment installs.
"""

from __future__ import annotations

import re

from swebounty.envs.probe import IMPORT_NAMES, KEEP, STDLIB_HINT

MAX_ADDED = 3  # distributions added to one build this way
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+', re.M)
_MISSING = re.compile(
    r"^\s*(?:ModuleNotFoundError|ImportError): No module named '?([A-Za-z_][\w.]*)'?", re.M
)
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d[\d.]*[/\\]")


def missing_build_module(output: str) -> str | None:
    """The top-level module the project's own build code failed to import in `output` (an
    install's log), or None when the failing import was an installed package's, or the
    interpreter's (`_ctypes`), or there was none."""
    matches = list(_MISSING.finditer(output))
    if not matches:
        return None
    found = matches[-1]
    frames = [f for f in _FRAME.findall(output, 0, found.start()) if not f.startswith("<frozen")]
    if not frames or _INSTALLED.search(frames[-1]) or frames[-1].startswith("<"):
        return None
    module = found.group(1).split(".")[0]
    if STDLIB_HINT.search(module) or module in KEEP:
        return None
    return module


def distribution(module: str) -> str:
    return IMPORT_NAMES.get(module, module)
