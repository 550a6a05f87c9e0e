"""Which test files a Node task's hidden tests run: the few they concern, or the whole suite.

A test patch names its test files; it may also change only what tests read — a Jest snapshot
(`__snapshots__/a.test.js.snap` belongs to `a.test.js`), a fixture — while the expected ids name
the files they are in (`test/a.test.js:title`). Running those files alone gives the same
verdicts as the whole suite, which for a large project takes far past any timeout. The whole
suite runs only when some expected id names no file (Mocha's full titles) or a file the
workspace does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from swebounty import safefs
from swebounty.diffs import parse_patch

_SNAPSHOT = re.compile(r"^(?:(.*)/)?__snapshots__/([^/]+)\.snap$")


def snapshot_owner(path: str) -> str | None:
    """The test file a Jest snapshot file belongs to (`a/__snapshots__/b.test.js.snap` ->
    `a/b.test.js`), or None for any other file."""
    m = _SNAPSHOT.match(path)
    if m is None:
        return None
    return str(PurePosixPath(m[1] or "") / m[2]) if m[1] else m[2]


def files_to_run(
    workspace: Path,
    test_files: list[str],
    test_patch: str,
    expected: list[str],
    file_of: Callable[[str], str],
) -> tuple[list[str], bool]:
    """(the test files to run, whether the whole suite must run instead). `test_files`: the
    test patch's own; `file_of`: the file an expected id names ("" for none)."""
    files = list(test_files)
    for diff in parse_patch(test_patch):
        owner = snapshot_owner(diff.target or "")
        if owner and owner not in files and _holds(workspace, owner):
            files.append(owner)
    named = [file_of(test_id) for test_id in expected]
    if not named or not all(named):
        return files, True  # an id that names no file: only the whole suite finds it
    for file in dict.fromkeys(named):
        if file not in files:
            if not _holds(workspace, file):
                return files, True  # named as the runner names it from elsewhere
            files.append(file)
    return files, False


def _holds(workspace: Path, rel: str) -> bool:
    """Whether the workspace has `rel`, reached without a link on the way."""
    try:
        return safefs.exists_beneath(workspace, rel)
    except OSError:  # a `..` path (UnsafePathError): never in the workspace
        return False
