"""Fixtures shared by test files that do not otherwise share a helper module."""

from __future__ import annotations

import os

import httpx
import pytest

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment, and rich fixes
# a console's size for good from them when it is made (the CLI's, at its import): the tests'
# own COLUMNS (CliRunner(env=...)) were then ignored, and wide tables came out 80 columns wide.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


@pytest.fixture(scope="session")
def index_reachable() -> None:
    """Skips a test that builds an environment where the package index cannot be reached
    (asked once a session: the answer does not change between tests)."""
    try:
        httpx.head("https://pypi.org/simple/pip/", timeout=10, follow_redirects=True)
    except httpx.HTTPError as exc:
        pytest.skip(f"the package index is unreachable here: {exc}")
