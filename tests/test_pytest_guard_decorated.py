"""The pytest guard on honest runs whose tests the guard must read through their decorators and
their era's assertion rewriting: a false tamper flag is a wrong verdict (both were found on real
SWE-bench Lite tasks: matplotlib's image_comparison, pytest 4.4's own tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_pytest_guard import OLD, _guarded_run, _venv

# matplotlib's image_comparison stacks functools.wraps over contextlib's decorator over its own
# functools.wraps wrapper: the outer __wrapped__ names the test, the closure holds the wrapper.
STACKED = """

import contextlib
import functools


@contextlib.contextmanager
def _style():
    yield


def image_like(func):
    @functools.wraps(func)
    @_style()
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


@image_like
def test_stacked():
    assert f() == 1


@image_like
def test_stacked_bad():
    assert f() == 2
"""

# pytest 4.1-4.6 write the module path's `strpath` into the code they rewrite: the guard's own
# rewrite must give them what pytest does, or every test with an assert is disbelieved.
PYTEST_4 = ("3.7", "pytest==4.6.11", "2022-12-31")


@pytest.mark.parametrize(
    "kind",
    [
        "current",
        pytest.param("old", marks=pytest.mark.network),
        pytest.param("pytest4", marks=pytest.mark.network),
    ],
)
def test_decorated_and_rewritten_tests_are_believed(tmp_path: Path, kind: str) -> None:
    venv = _venv(
        tmp_path, "current" if kind == "current" else "old", PYTEST_4 if kind == "pytest4" else OLD
    )
    honest = _guarded_run(venv, tmp_path / "honest", tamper=False, extra_test=STACKED)
    assert honest is not None and honest.problems == []
    assert honest.statuses == {"tests/test_x.py::test_ok": "passed",
                               "tests/test_x.py::test_bad": "failed",
                               "tests/test_x.py::test_stacked": "passed",
                               "tests/test_x.py::test_stacked_bad": "failed"}  # fmt: skip
