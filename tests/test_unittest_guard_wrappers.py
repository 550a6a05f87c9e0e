"""Decorated test methods under the unittest guard (pytest_guard/unittest_guard.py, genuine.py).

A TestCase method is often a decorator's wrapper: Hypothesis's @given (whose wrapper takes the
test's file and line as its own), mock.patch's, a project's functools.wraps. Their passes are
believed when the wrapper is proven to run the test's own code (genuine.unwrap); a submission
that puts a wrapper of its choosing in front of a failing test, or names the genuine test as
what a wrapper wraps while the wrapper runs something else, is still a problem.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from test_hypothesis_profile import HYPOTHESIS_2017
from test_pytest_guard import _venv
from test_unittest_guard import guarded, statuses

HELPERS = """
import functools


def twice(test):
    @functools.wraps(test)
    def wrapper(self, *args, **kwargs):
        test(self, *args, **kwargs)
        return test(self, *args, **kwargs)

    return wrapper
"""

DECORATED = """
import unittest
from unittest import mock

from hypothesis import given, settings, strategies as st

from pkg import f
from tests.helpers import twice


class T(unittest.TestCase):
    @settings(max_examples=3)
    @given(st.integers())
    def test_given(self, x):
        self.assertEqual(f(), 1)

    @given(st.integers())
    def test_given_fails(self, x):
        self.assertEqual(f(), 2)

    @mock.patch("os.getcwd", return_value="/nowhere")
    @settings(max_examples=2)
    @given(x=st.integers())
    def test_patched_given(self, getcwd, x):
        import os

        self.assertEqual(os.getcwd(), "/nowhere")

    @settings(max_examples=2)
    @given(x=st.integers())
    @mock.patch("os.getcwd", return_value="/nowhere")
    def test_given_patched(self, getcwd, x):
        import os

        self.assertEqual(os.getcwd(), "/nowhere")

    @twice
    def test_helper_s_decorator(self):
        self.assertEqual(f(), 1)


@mock.patch("os.getcwd", return_value="/nowhere")
class Patched(unittest.TestCase):
    def test_class_patched(self, getcwd):
        import os

        self.assertEqual(os.getcwd(), "/nowhere")
"""


def _decorated(tmp: Path, python: str | None = None) -> None:
    extra = {"python": python} if python else {}
    result, _ = guarded(tmp, tests=DECORATED, helpers=HELPERS, **extra)  # type: ignore[arg-type]
    assert result is not None and result.problems == []
    assert statuses(result) == {
        "tests.test_x.T.test_given": "passed",
        "tests.test_x.T.test_given_fails": "failed",
        "tests.test_x.T.test_patched_given": "passed",
        "tests.test_x.T.test_given_patched": "passed",
        "tests.test_x.T.test_helper_s_decorator": "passed",
        "tests.test_x.Patched.test_class_patched": "passed",
    }


def test_passes_of_decorated_test_methods_are_believed(tmp_path: Path) -> None:
    _decorated(tmp_path)


@pytest.mark.network
@pytest.mark.slow
def test_passes_of_given_methods_are_believed_with_the_hypothesis_of_2017(tmp_path: Path) -> None:
    # Before 2019 @given's wrapper held the test in its closure (no `.hypothesis.inner_test`).
    venv = _venv(tmp_path, "old", HYPOTHESIS_2017)
    _decorated(tmp_path / "run", str(venv / "bin" / "python"))


# The victims fail honestly; the package, called by the first test, puts in front of each a
# wrapper that never runs it: mock.patch's own (genuine) wrapper around a no-op, the same with
# the genuine test named as its __wrapped__, and a forwarder dressed as Hypothesis's (the test's
# file and line, a handle naming the genuine test) that forwards to a no-op. Or it shadows the
# genuine method with a no-op on the test object, or puts back the genuine one as it runs, or
# forwards to another test's @given wrapper, given a handle that names the victim.
VICTIMS = """
import unittest

from hypothesis import HealthCheck, given, settings, strategies as st

from pkg import f


class T(unittest.TestCase):
    def test_a_first(self):
        self.assertEqual(f(), 1)

    @settings(max_examples=2, suppress_health_check=list(HealthCheck))  # borrowed by another
    @given(st.integers())
    def test_a_given(self, x):
        self.assertEqual(f(), 1)

    def test_borrowed(self):
        self.assertEqual(f(), 2)

    def test_plain(self):
        self.assertEqual(f(), 2)

    def test_forged_wrapped(self):
        self.assertEqual(f(), 2)

    def test_forged_given(self):
        self.assertEqual(f(), 2)

    def test_put_back(self):
        self.assertEqual(f(), 2)

    def test_shadowed(self):
        self.assertEqual(f(), 2)
"""

WRAP_THE_VICTIMS = """
import gc
import sys
import unittest
from unittest import mock

_done = []


def _noop(*args, **kwargs):
    return None


class _Handle:  # Hypothesis's own is a plain class too
    def __init__(self, inner_test):
        self.inner_test = inner_test


def _forward_to(target):
    def forward(self):
        return target(self)

    return forward


def f():
    if not _done:
        _done.append(True)
        T = type(sys._getframe(1).f_locals["self"])
        T.test_plain = mock.patch("os.getcwd")(_noop)
        genuine = T.__dict__["test_forged_wrapped"]
        wrapper = mock.patch("os.getcwd")(_noop)
        wrapper.__wrapped__ = genuine
        T.test_forged_wrapped = wrapper
        genuine = T.__dict__["test_forged_given"]
        forward = _forward_to(_noop)
        forward.__code__ = forward.__code__.replace(
            co_filename=genuine.__code__.co_filename,
            co_firstlineno=genuine.__code__.co_firstlineno,
        )
        forward.hypothesis = _Handle(genuine)
        forward.__wrapped__ = genuine
        T.test_forged_given = forward
        genuine = T.__dict__["test_borrowed"]
        other = T.__dict__["test_a_given"].__closure__[0].cell_contents
        other.hypothesis = _Handle(genuine)
        forward = _forward_to(other)
        forward.__code__ = forward.__code__.replace(
            co_filename=genuine.__code__.co_filename,
            co_firstlineno=genuine.__code__.co_firstlineno,
        )
        T.test_borrowed = forward
        genuine = T.__dict__["test_put_back"]

        def put_back(self):
            T.test_put_back = genuine

        T.test_put_back = put_back
        for test in gc.get_objects():
            if isinstance(test, T) and test._testMethodName == "test_shadowed":
                test.test_shadowed = _noop
    return 1
"""


def test_a_wrapper_that_does_not_run_the_genuine_test_is_not_believed(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, pkg=WRAP_THE_VICTIMS, tests=VICTIMS)
    assert result is not None
    assert statuses(result) == {
        "tests.test_x.T.test_a_first": "passed",
        "tests.test_x.T.test_a_given": "passed",
    }
    mock_py = mock_file()
    pkg = tmp_path / "ws" / "pkg" / "__init__.py"
    assert sorted(result.problems) == [
        "a pass of tests.test_x.T.test_borrowed was not believed: its test method has a "
        "Hypothesis handle its wrapper does not read",
        "a pass of tests.test_x.T.test_forged_given was not believed: its test method is not the "
        f"code of {pkg}",
        "a pass of tests.test_x.T.test_forged_wrapped was not believed: its test method has a "
        f"wrapper from {mock_py} that does not hold the __wrapped__ it names",
        "a pass of tests.test_x.T.test_plain was not believed: its test method is not the code "
        f"of {pkg}",
        f"a pass of tests.test_x.T.test_put_back was not believed: its test method comes from "
        f"{pkg.resolve()}, not from the workspace's tests",
        f"a pass of tests.test_x.T.test_shadowed was not believed: its test method comes from "
        f"{pkg.resolve()}, not from the workspace's tests",
    ]


def mock_file() -> str:
    from unittest import mock

    return str(mock.__file__)
