"""Running the before state one test file at a time.

When the whole before-run yields no per-test result (a test module of the patch does not import,
or the process crashes), running each test module of the patch on its own keeps one broken
module from hiding the results of the others. A module's run applies the whole test patch except
the other test modules (conftest.py, helpers and data stay), so only that module is handed to
pytest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from swebounty.diffs import parse_patch

_DIFF_GIT = re.compile(r"^diff --git ", re.MULTILINE)


def split_patch(patch: str) -> list[tuple[str | None, str]]:
    """(target path, text) for each file of a patch, the text exactly as given when the patch has
    git headers (so binary parts and "no newline" markers survive)."""
    starts = [m.start() for m in _DIFF_GIT.finditer(patch)]
    if starts:
        # Anything before the first header (a commit message) belongs to no file.
        chunks = [patch[a:b] for a, b in zip(starts, [*starts[1:], len(patch)], strict=True)]
    else:
        try:
            chunks = [str(pf) for pf in PatchSet(patch)]
        except UnidiffParseError:
            return [(None, patch)]
    result: list[tuple[str | None, str]] = []
    for chunk in chunks:
        diffs = parse_patch(chunk)
        result.append((diffs[0].target if diffs else None, chunk))
    return result


def patch_for_file(test_patch: str, file: str, files: Sequence[str]) -> str:
    """The test patch without the test modules in `files` other than `file`."""
    others = set(files) - {file}
    return "".join(text for target, text in split_patch(test_patch) if target not in others)


def same_file(a: str, b: str) -> bool:
    """Paths equal up to the root they are given from (pytest's rootdir may be a subfolder)."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def crashed(exit_code: int | None, error: str | None) -> bool:
    """The test process died from a signal (segfault, abort...) before writing results.

    A timeout also ends with a kill, but rerunning a hanging test once per file would cost the
    timeout each time, so it stays an infrastructure error. A single pytest test that hangs
    no longer gets there: the guard fails it at the per-test time limit and the run goes on
    (pytest_guard/timelimit.py); what times out is a hang the limit cannot stop."""
    if error is None or exit_code is None or "timed out" in error:
        return False
    return exit_code < 0 or exit_code > 128
