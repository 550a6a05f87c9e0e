"""The package, imported by the tests, reaches the objects pytest runs a test with (gc finds
them in memory) and makes a failing test's call do nothing: it gives the item a test function
(`item.obj`) or a `runtest` of its own, or replaces a hook caller or the plugin manager's hook
executor. No class of pytest's changes, so machinery.py sees nothing; the guard judges each
passing call (pytest_guard/testcalls.py). Through the guard's runner, not a sandbox: what is
checked is the code a test's call ran. Legitimate wrappers of a test (an installed plugin's,
mock.patch's, Hypothesis's @given, a test helper's functools.wraps) stay believed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from test_pytest_guard import HONEST, _guarded_run, _plugin_site

INIT = "def f():\n    return 1\n"  # the package the tests import, before the submission's lines
# The Module collector being collected when the package is imported: an instance method of
# its own hands each new item something (the collector runs it for every test it makes).
ON_EACH_ITEM = """
import gc

for _m in [o for o in gc.get_objects() if type(o).__name__ == "Module"]:
    def _gen(name, funcobj, _orig=_m._genfunctions, _m=_m):
        for _item in _orig(name, funcobj):
            {swap}
            yield _item
        if name == "test_bad":  # the module's last test: no trace left on the collector
            vars(_m).pop("_genfunctions", None)

    _m._genfunctions = _gen
"""
CONFIGS = """
import gc

for _c in [o for o in gc.get_objects() if type(o).__name__ == "Config"]:
    _pm = _c.pluginmanager
"""
HOOK_CALLER = (
    CONFIGS
    + """
    _real = _pm.hook.pytest_runtest_call

    class _Caller:  # claims the genuine hook implementations, calls none of them
        name = _real.name

        def get_hookimpls(self):
            return _real.get_hookimpls()

        def __call__(self, **kwargs):
            return []

        def __getattr__(self, name):
            return getattr(_real, name)

    _pm.hook.pytest_runtest_call = _Caller()
"""
)
HOOK_EXECUTOR = (
    CONFIGS
    + """
    def _exec(name, impls, kwargs, firstresult, _orig=_pm._hookexec):
        if name == "pytest_pyfunc_call":
            return True  # the test function "ran"
        return _orig(name, impls, kwargs, firstresult)

    _pm._hookexec = _exec
    for _caller in vars(_pm.hook).values():
        _caller._hookexec = _exec
"""
)
# What the item's hooks come through: a session that answers pytest_pyfunc_call itself.
SESSION = """
class _Session:
    def __init__(self, real):
        self._real = real

    def gethookproxy(self, path):
        relay = self._real.gethookproxy(path)

        class _Relay:
            def __getattr__(self, name):
                if name == "pytest_pyfunc_call":
                    return lambda **kwargs: [True]
                return getattr(relay, name)

        return _Relay()

    def __getattr__(self, name):
        return getattr(self._real, name)
"""
NOT_BELIEVED = "a pass of tests/test_x.py::test_{} was not believed: "
PKG = "{WS}/pkg/__init__.py"
NOT_GENUINE = "which is not the code of a file the submission did not change"
COLLECTOR = "a collector above it holds _genfunctions, " + NOT_GENUINE
MADE = "a collector that made tests holds _genfunctions, " + NOT_GENUINE  # seen as it collects
# Another kind of item's class (a doctest's, genuine), with a doctest that passes.
AS_A_DOCTEST = """
import doctest

_Doctest = [c for c in gc.get_objects() if isinstance(c, type) and c.__name__ == "DoctestItem"][0]


def _as_doctest(item):
    item.__class__ = _Doctest
    item.dtest = doctest.DocTest([doctest.Example("1\\n", "1\\n")], {}, "x", None, 0, None)
    item.runner = doctest.DocTestRunner()
"""
# attack -> (the package's code, why the pass of test_bad is not believed)
ATTACKS = {
    "the-item-s-test-function-swapped": (
        ON_EACH_ITEM.format(swap="_item.obj = lambda *a, **k: None"),
        "its test function is not the code of " + PKG,
    ),
    "the-item-s-test-function-a-builtin": (
        ON_EACH_ITEM.format(swap="_item.obj = type(None)"),
        "its test function is not Python code",
    ),
    "the-item-s-runtest-swapped": (
        ON_EACH_ITEM.format(swap="_item.runtest = lambda: None"),
        "the item holds runtest, " + NOT_GENUINE,
    ),
    "the-item-s-runtest-a-builtin": (
        ON_EACH_ITEM.format(swap="_item.runtest = tuple"),
        "the item holds runtest, " + NOT_GENUINE,
    ),
    "the-collector-keeps-its-method": (
        ON_EACH_ITEM.replace('name == "test_bad"', "False").format(swap="_item.obj = lambda: None"),
        COLLECTOR,
    ),
    "the-item-made-a-doctest-as-it-is-collected": (
        ON_EACH_ITEM.format(swap="_as_doctest(_item)") + AS_A_DOCTEST,
        "-" + MADE,
    ),
    "the-item-s-session-replaced": (
        SESSION + ON_EACH_ITEM.format(swap="_item.session = _Session(_item.session)"),
        "its test function was not called through pytest's pytest_pyfunc_call",
    ),
    "a-hook-caller-replaced": (HOOK_CALLER, "the hook relay holds pytest_runtest_call, " + NOT_GENUINE),
    "the-hook-executor-replaced": (HOOK_EXECUTOR, "the plugin manager holds _hookexec, " + NOT_GENUINE),
}  # fmt: skip


@pytest.mark.parametrize(("code", "why"), ATTACKS.values(), ids=ATTACKS)
def test_a_test_call_that_runs_other_code_is_not_believed(
    tmp_path: Path, code: str, why: str
) -> None:
    run = _guarded_run(
        Path(sys.prefix), tmp_path, tamper=False, files={"pkg/__init__.py": INIT + code}
    )
    assert run is not None
    assert run.statuses["tests/test_x.py::test_bad"] == "passed"  # forged, and flagged:
    ws = str(tmp_path / "ws")
    problems = [p.replace(ws, "{WS}") for p in run.problems]
    if why.startswith("-"):  # a problem of its own, not a pass's
        assert problems == [why[1:]]
        return
    assert NOT_BELIEVED.format("bad") + why in problems, problems
    assert all(p.startswith("a pass of tests/test_x.py::") or p == MADE for p in problems)


# A thread waits for the end of collection, then makes the last test a doctest, while the test
# before it sleeps.
LATER = """
import threading
import time


def _later():
    while True:
        for _s in [o for o in gc.get_objects() if type(o).__name__ == "Session"]:
            for _item in getattr(_s, "items", None) or ():
                if _item.name == "test_last":
                    _as_doctest(_item)
                    return
        time.sleep(0.001)


threading.Thread(target=_later, daemon=True).start()
"""
SLOW = "\n\ndef test_slow():\n    import time\n    time.sleep(1)\n\n\ndef test_last():\n    assert f() == 2\n"


def test_an_item_s_class_changed_after_collection_is_not_believed(tmp_path: Path) -> None:
    code = INIT + "import gc\n" + AS_A_DOCTEST + LATER
    run = _guarded_run(Path(sys.prefix), tmp_path, tamper=False, extra_test=SLOW,
                       files={"pkg/__init__.py": code})  # fmt: skip
    assert run is not None and run.statuses["tests/test_x.py::test_last"] == "passed"
    assert run.problems == [
        NOT_BELIEVED.format("last") + "its class was changed after it was collected"
    ]


# An installed plugin that runs coroutine tests (as pytest-asyncio does): as the call starts, it
# puts a functools.wraps wrapper of its own in the item's place for the test function.
ASYNC_PLUGIN = """
import asyncio
import functools
import inspect

import pytest


def wrap_in_sync(func):
    @functools.wraps(func)
    def inner(*args, **kwargs):
        return asyncio.run(func(*args, **kwargs))

    return inner


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if inspect.iscoroutinefunction(getattr(item, "obj", None)):
        item.obj = wrap_in_sync(item.obj)
    yield
"""
HELPERS = """
import functools


def twice(test):
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        test(*args, **kwargs)
        return test(*args, **kwargs)

    return wrapper
"""
# Non-Python items of the repository's conftest.py (as pytest's example of a YAML file), from
# the test file too.
CONFTEST = """
import pytest


def pytest_collect_file(parent, file_path):
    if file_path.name == "test_x.py":
        return SpecFile.from_parent(parent, path=file_path)


class SpecFile(pytest.File):
    def collect(self):
        yield SpecItem.from_parent(self, name="spec")


class OwnModule(pytest.Module):  # the test module's collector is the repository's own class
    def collect(self):
        return super().collect()


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    return OwnModule.from_parent(parent, path=module_path)


class SpecItem(pytest.Item):
    def runtest(self):
        assert "def test_ok" in self.path.read_text()
"""
LEGIT = """

import asyncio
import os
import unittest
from unittest import mock

from hypothesis import given, settings, strategies as st

from tests.helpers import twice


async def test_async():
    await asyncio.sleep(0)
    assert f() == 1


@mock.patch("os.getcwd", return_value="/nowhere")
def test_patched(getcwd):
    assert os.getcwd() == "/nowhere"


@settings(max_examples=3, database=None)
@given(st.integers())
def test_given(x):
    assert f() == 1


@twice
def test_twice():
    assert f() == 1


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n > 0


class TestClass:
    def test_method(self):
        assert f() == 1

    @staticmethod
    def test_static():
        assert f() == 1


class TestCase(unittest.TestCase):
    def test_unittest(self):
        self.assertEqual(f(), 1)


def _make(n):
    def test():
        assert n == 3

    return test


globals()["test_made"] = _make(3)
"""
SUBTESTS = """

def test_subtests(subtests):
    for i in range(2):
        with subtests.test(i=i):
            assert f() == 1
"""


def test_legitimate_wrappers_and_items_are_believed(tmp_path: Path) -> None:
    subtests = importlib.util.find_spec("_pytest.subtests") is not None  # pytest 9's
    site = _plugin_site(tmp_path, "asyncplugin", ASYNC_PLUGIN)
    run = _guarded_run(
        Path(sys.prefix), tmp_path / "run", tamper=False, site=site,
        extra_test="import pytest\n" + LEGIT + (SUBTESTS if subtests else ""),
        files={"base:tests/helpers.py": HELPERS, "base:tests/__init__.py": "",
               "base:conftest.py": CONFTEST},
    )  # fmt: skip
    assert run is not None and run.problems == []
    names = ["async", "patched", "given", "twice", "param[1]", "param[2]", "TestClass::test_method",
             "TestClass::test_static", "TestCase::test_unittest", "made", "spec"]  # fmt: skip
    passed = {f"tests/test_x.py::{n if n == 'spec' or '::' in n else 'test_' + n}": "passed"
              for n in names}  # fmt: skip
    if subtests:
        passed["tests/test_x.py::test_subtests"] = "passed"
    assert run.statuses == {**HONEST, **passed}
