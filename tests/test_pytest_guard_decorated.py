"""The pytest guard on honest runs whose tests the guard must read through their decorators,
their era's assertion rewriting and a rerun plugin's reporting: a false tamper flag is a wrong
verdict (found on real SWE-bench Lite tasks: matplotlib's image_comparison, pytest 4.4's own
tests; and on a fresh candidate: pypa/build's flaky tests, pytest-rerunfailures)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from test_pytest_guard import OLD, _guarded_run, _plugin_site, _venv

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


# An installed plugin that reruns a failing test as pytest-rerunfailures does: each attempt's
# phases run first (runtestprotocol with log=False), then their reports are logged.
RERUNS = """
import pytest
from _pytest.runner import runtestprotocol


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    for attempt in range(2):
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        for report in reports:
            if attempt == 0 and report.failed:
                report.outcome = "rerun"
                item.ihook.pytest_runtest_logreport(report=report)
                break
            item.ihook.pytest_runtest_logreport(report=report)
        else:
            item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
            return True
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""
FLAKY = """

_calls = []


def test_flaky():
    _calls.append(1)
    assert len(_calls) == 2
"""


def test_passes_reported_after_their_attempt_ran_are_believed(tmp_path: Path) -> None:
    """pypa/build's flaky tests (pytest-rerunfailures): the guard forgot a call as its setup
    was reported, after the call had run ("not called through pytest's pytest_pyfunc_call")."""
    site = _plugin_site(tmp_path, "reruns", RERUNS)
    run = _guarded_run(
        Path(sys.prefix), tmp_path / "run", tamper=False, site=site, extra_test=FLAKY
    )
    assert run is not None and run.problems == []
    assert run.statuses == {"tests/test_x.py::test_ok": "passed",
                            "tests/test_x.py::test_bad": "failed",
                            "tests/test_x.py::test_flaky": "passed"}  # fmt: skip
