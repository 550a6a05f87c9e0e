"""How pytest is pointed at data files a project's conftest.py may collect as test items.

A test patch with no test module hands pytest its data files (testing.data_files): pygments'
lexer snippets (`tests/snippets/python/test_a.txt`) and expected outputs
(`tests/examplefiles/php/test.php.output`). pytest before 9 stops with a usage error (exit
code 4, "not found") when a file named on its command line is claimed by no collector, as an
expected output is not; a file found under a directory it was handed is just skipped. So the
data files' folders are handed instead, with every other entry there ignored (`--ignore`): the
same items run, and a data file no collector claims adds none; the input a changed expected
output is named after runs too. Folders are listed in the workspace after the patches, without
following links (safefs).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from swebounty import safefs

log = logging.getLogger(__name__)

MAX_IGNORED = 2000  # beyond this, the command line grows unwieldy: the files are handed as given
# pytest's collection reads these in a folder it collects: never ignored.
_MACHINERY = frozenset({"conftest.py", "__init__.py"})


@dataclass(frozen=True)
class Targets:
    """What pytest is handed to run some files (`pytest_targets`)."""

    paths: list[str]  # on its command line
    ignore: list[str] = field(default_factory=list)  # --ignore
    # Files run beside the data files named after them: `example.lua` for `example.lua.output`.
    companions: list[str] = field(default_factory=list)


def pytest_targets(workspace: Path, files: Sequence[str]) -> Targets:
    """What to hand pytest to run `files` in `workspace`.

    `.py` files are handed as they are; the other files' folders are handed instead, with the
    entries there that are neither one of `files`, nor a folder holding one, nor a file one of
    them is named after, ignored. That last is a data file's input: a changed expected output
    (`example.lua.output`) is checked by the item its input (`example.lua`) makes, a file the
    test patch need not touch; it is run too (`companions`). A data file in a folder that
    holds one of the `.py` files is left out: that module is handed itself (its folder would
    collect it twice, or not at all if its name is not a test module's), and a data file named
    beside it would stop pytest 8. The files are handed as given, with nothing ignored, when a
    folder cannot be listed safely (a link on the way) or more than MAX_IGNORED entries would
    be ignored."""
    modules = [f for f in files if f.endswith(".py")]
    data = [f for f in files if not f.endswith(".py")]
    crowded = {str(PurePosixPath(f).parent) for f in data}
    crowded = {d for d in crowded if d == "." or any(_under(m, d) for m in modules)}
    if crowded:
        log.info("not handing pytest the data files in %s: test modules run there", crowded)
        data = [f for f in data if str(PurePosixPath(f).parent) not in crowded]
    folders = list(dict.fromkeys(str(PurePosixPath(f).parent) for f in data))
    as_given = Targets([*modules, *data])
    if not data:
        return as_given
    keep = set(files) | {str(p) for f in files for p in PurePosixPath(f).parents}
    named_after = {str(PurePosixPath(f).with_suffix("")) for f in data}
    ignored: list[str] = []
    companions: list[str] = []
    for folder in folders:
        entries = _listing(workspace, folder)
        if entries is None:
            log.info("cannot list %s safely: pytest is handed the test files as they are", folder)
            return as_given
        for name, regular in entries:
            path = f"{folder}/{name}"
            if path in keep or name in _MACHINERY:
                continue
            if path in named_after and regular and not name.endswith(".py"):
                companions.append(path)
            else:
                ignored.append(path)
        if len(ignored) > MAX_IGNORED:
            return as_given
    top = [d for d in folders if not any(_under(d, o) for o in folders if o != d)]
    return Targets([*top, *modules], sorted(ignored), companions)


def _under(path: str, folder: str) -> bool:
    return path.startswith(folder + "/")


def _listing(workspace: Path, folder: str) -> list[tuple[str, bool]] | None:
    """(name, whether a regular file) of each entry of `workspace/folder`, reached without
    following a link; None if it cannot be (a link or a file on the way, gone)."""
    try:
        with safefs.open_dir(workspace, folder.split("/")) as fd, os.scandir(fd) as entries:
            return [(e.name, e.is_file(follow_symlinks=False)) for e in entries]
    except (OSError, ValueError):
        return None
