"""Guarded runs of tests the guard reads through links no file holds (pytest_guard/forwarders.py).

pypa/build's conftest.py runs each test through
functools.partial(contextvars.copy_context().run, item.obj): its honest passes were
disbelieved on the unpatched base ("its test function is not Python code"); they are believed,
and a context's run of the submission's is not.
"""

from __future__ import annotations

import sys
from pathlib import Path

from test_pytest_guard import HONEST, _guarded_run

# pypa/build's conftest.py: every test runs in a copy of the context.
IN_A_CONTEXT = """
import contextvars
from functools import partial, update_wrapper

import pytest


def pytest_runtest_call(item):
    if isinstance(item, pytest.Function):
        item.obj = update_wrapper(partial(contextvars.copy_context().run, item.obj), item.obj)
"""
# The submission makes the conftest's partial call a run of its own, which runs nothing.
FAKE_CONTEXT = """
import contextvars


class _Context:
    def run(self, fn, *args, **kwargs):
        return None


contextvars.copy_context = _Context
"""


def test_a_test_run_in_a_copy_of_the_context_is_believed(tmp_path: Path) -> None:
    runs = {}
    for kind, init in (("honest", ""), ("forged", FAKE_CONTEXT)):
        files = {
            "base:conftest.py": IN_A_CONTEXT,
            "pkg/__init__.py": "def f():\n    return 1\n" + init,
        }
        runs[kind] = _guarded_run(Path(sys.prefix), tmp_path / kind, tamper=False, files=files)
    honest, forged = runs["honest"], runs["forged"]
    assert honest is not None and honest.problems == [] and honest.statuses == HONEST
    assert forged is not None and forged.statuses["tests/test_x.py::test_bad"] == "passed"
    assert (
        "a pass of tests/test_x.py::test_bad was not believed: its test function is not Python code"
        in forged.problems
    )
