"""Fixtures shared by test files that do not otherwise share a helper module."""

from __future__ import annotations

import httpx
import pytest


@pytest.fixture(scope="session")
def index_reachable() -> None:
    """Skips a test that builds an environment where the package index cannot be reached
    (asked once a session: the answer does not change between tests)."""
    try:
        httpx.head("https://pypi.org/simple/pip/", timeout=10, follow_redirects=True)
    except httpx.HTTPError as exc:
        pytest.skip(f"the package index is unreachable here: {exc}")
