"""The sandbox tests' fixtures: a fresh world per test, and the bwrap backend (skipped where
the machine cannot run it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.helpers import World, _require_bwrap, make_world
from swebounty.sandbox import BwrapSandbox


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


@pytest.fixture
def bwrap() -> BwrapSandbox:
    _require_bwrap()
    return BwrapSandbox()
