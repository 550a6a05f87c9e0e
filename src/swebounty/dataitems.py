"""How pytest is pointed at data files a project's conftest.py may collect as test items.

A test patch with no test module hands pytest its data files (testing.data_files): pygments'
lexer snippets (`tests/snippets/python/test_a.txt`) and expected outputs
(`tests/examplefiles/php/test.php.output`). pytest before 9 stops with a usage error (exit
code 4, "not found") when a file named on its command line is claimed by no collector, as an
expected output is not; a file found under a directory it was handed is just skipped. So the
data files' folders are handed instead, with every other entry there ignored (`--ignore`): the
same items run, and a data file no collector claims adds none. Folders are listed in the
workspace after the patches, without following links (safefs).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from swebounty import safefs

log = logging.getLogger(__name__)

MAX_IGNORED = 2000  # beyond this, the command line grows unwieldy: the files are handed as given
# pytest's collection reads these in a folder it collects: never ignored.
_MACHINERY = frozenset({"conftest.py", "__init__.py"})


def pytest_targets(workspace: Path, files: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the paths to hand pytest, the paths it must ignore) to run `files` in `workspace`.

    `.py` files are handed as they are; the other files' folders are handed instead, with the
    entries there that are neither one of `files` nor a folder holding one ignored. The files
    are handed as given, with nothing ignored, when a `.py` file lies in such a folder (pytest
    would collect it twice), when a folder cannot be listed safely (a link on the way), or when
    more than MAX_IGNORED entries would be ignored."""
    data = [f for f in files if not f.endswith(".py")]
    modules = [f for f in files if f.endswith(".py")]
    folders = list(dict.fromkeys(str(PurePosixPath(f).parent) for f in data))
    if not data or "." in folders or any(_under(m, d) for m in modules for d in folders):
        return list(files), []
    keep = set(files) | {str(p) for f in files for p in PurePosixPath(f).parents}
    ignored: list[str] = []
    for folder in folders:
        names = _listing(workspace, folder)
        if names is None:
            log.info("cannot list %s safely: pytest is handed the test files as they are", folder)
            return list(files), []
        ignored += [f"{folder}/{n}" for n in names if n not in _MACHINERY]
        ignored = [p for p in ignored if p not in keep]
        if len(ignored) > MAX_IGNORED:
            return list(files), []
    top = [d for d in folders if not any(_under(d, o) for o in folders if o != d)]
    return [*top, *modules], sorted(ignored)


def _under(path: str, folder: str) -> bool:
    return path.startswith(folder + "/")


def _listing(workspace: Path, folder: str) -> list[str] | None:
    """The names in `workspace/folder`, reached without following a link; None if it cannot
    be (a link or a file on the way, gone)."""
    try:
        with safefs.open_dir(workspace, folder.split("/")) as fd, os.scandir(fd) as entries:
            return [e.name for e in entries]
    except (OSError, ValueError):
        return None
