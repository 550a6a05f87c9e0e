"""Fixtures shared by test files that do not otherwise share a helper module."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from agent_helpers import Demo

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


@pytest.fixture(scope="session")
def shared_demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """The demo tasks with one cache (environment, pytest guard, installed agents) for every
    agent and attempt test module of a pytest process: each module built the same demo
    environment in a cache of its own (bytecode compiled, probed: ~10 s under CI's load), and
    none of them checks what a cache holds. Each test still runs into runs of its own."""
    from agent_helpers import demo_in

    return demo_in(tmp_path_factory.mktemp("shared-demo"))
