"""The package, imported by the tests, changes what a genuine test reads besides its arguments,
and a failing test passes without its code changing: the default arguments of the test
function, of a fixture's function or of a helper it calls (`__defaults__`, `__kwdefaults__`
in place), a function's code (another genuine function's of the same file), a global of the
test module or of a conftest.py the test or its fixture names (a constant, a helper, a
builtin shadowed), a builtin. Each pass is judged (pytest_guard/reads.py); legitimate changes
(a `global` cache, monkeypatch and mock.patch of the test module's own names, setup_module,
a container filled in place, a builtin patched for one test) stay believed. Through the
guard's runner, not a sandbox; the same for unittest's runner at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from test_pytest_guard import _guarded_run
from test_unittest_guard import guarded, statuses

# Called first by test_ok (after collection), then by every victim: each attack changes one
# thing, once, and f() returns 1 (the victims expect 2).
PKG = """
import builtins
import gc
import sys
import types
from unittest import mock

_done = []


def _function(name):
    return [o for o in gc.get_objects() if type(o) is types.FunctionType and o.__name__ == name][0]


def f():
    if not _done:
        _done.append(1)
        _tamper()
    return 1
"""
CONFTEST = """
import pytest

TWO = 2


@pytest.fixture
def limit(n=2):
    return n


@pytest.fixture
def two():
    return TWO
"""
VICTIMS = """

def test_default(expected=2):
    assert f() == expected


def test_kwdefault(*, expected=2):
    assert f() == expected


def test_code():
    assert f() == 2


def test_fixture_default(limit):
    assert f() == limit


def _expected(n=2):
    return n


def test_helper_default():
    assert f() == _expected()


EXPECTED = 2


def test_constant():
    assert f() == EXPECTED


def _two():
    return 2


def test_helper_rebound():
    assert f() == _two()


def test_builtin_shadowed():
    assert min(f(), 5) == 2


def test_builtin_replaced():
    assert abs(f()) == 2


def test_conftest_global(two):
    assert f() == two


def test_imported():
    assert f() == 2
"""
TAMPER = {
    "default": "_function('test_default').__defaults__ = (1,)",
    "kwdefault": "_function('test_kwdefault').__kwdefaults__['expected'] = 1",
    "code": "_function('test_code').__code__ = _function('test_ok').__code__",
    "fixture_default": "_function('limit').__defaults__ = (1,)",
    "helper_default": "_function('_expected').__defaults__ = (1,)",
    "constant": "_module().EXPECTED = 1",
    "helper_rebound": "_module()._two = mock.Mock(return_value=1)",  # genuine code, a Mock
    "builtin_shadowed": "_module().min = lambda *a: 2",
    "builtin_replaced": "builtins.abs = lambda x: 2",
    "conftest_global": "_function('two').__globals__['TWO'] = 1",
    "imported": "_module().f = lambda: 2",  # what `from pkg import f` bound
}
MODULE = "\n\ndef _module():\n    return sys.modules[_function('test_ok').__module__]\n"
NOT_BELIEVED = "a pass of tests/test_x.py::test_{} was not believed: "
# attack -> why the pass of its victim is not believed
WHY = {
    "default": "its test function's default arguments were changed after it was collected",
    "kwdefault": "its test function's default arguments were changed after it was collected",
    "code": "its test function's code was changed after it was collected",
    "fixture_default": "its fixture limit's function's default arguments were changed after "
    "it was collected",
    "helper_default": "it calls _expected of {WS}/tests/test_x.py, whose default arguments "
    "were changed after it was imported",
    "constant": "it reads EXPECTED of {WS}/tests/test_x.py, changed after it was imported",
    "helper_rebound": "it reads _two of {WS}/tests/test_x.py, changed after it was imported",
    "builtin_shadowed": "it reads min of {WS}/tests/test_x.py, changed after it was imported",
    "builtin_replaced": "it reads the builtin abs, changed after the session started",
    "conftest_global": "it reads TWO of {WS}/tests/conftest.py, changed after it was imported",
    "imported": "it reads f of {WS}/tests/test_x.py, changed after it was imported",
}


def _run(tmp_path: Path, code: str, tests: str, **kw: object) -> tuple[dict[str, str], list[str]]:
    files = {"base:tests/conftest.py": CONFTEST, "pkg/__init__.py": PKG + code}
    files.update(kw.pop("files", {}))  # type: ignore[arg-type]
    run = _guarded_run(Path(sys.prefix), tmp_path, tamper=False, files=files,
                       extra_test="import pytest\n" + tests, **kw)  # type: ignore[arg-type]  # fmt: skip
    assert run is not None
    ws = str(tmp_path / "ws")
    return run.statuses, [p.replace(ws, "{WS}") for p in run.problems]


def test_the_victims_fail_without_an_attack(tmp_path: Path) -> None:
    statuses, problems = _run(tmp_path, "\ndef _tamper():\n    pass\n", VICTIMS)
    assert problems == []
    assert {k: v for k, v in statuses.items() if v == "passed"} == {
        "tests/test_x.py::test_ok": "passed"
    }


@pytest.mark.parametrize("attack", list(TAMPER))
def test_a_pass_through_what_the_test_reads_is_not_believed(tmp_path: Path, attack: str) -> None:
    code = MODULE + "\n\ndef _tamper():\n    " + TAMPER[attack] + "\n"
    statuses, problems = _run(tmp_path, code, VICTIMS)
    assert statuses["tests/test_x.py::test_" + attack] == "passed"  # forged, and flagged:
    # f rebound makes every later test pass: the first five are named, test_ok (whose call
    # rebound it) first
    victim = "ok" if attack == "imported" else attack
    assert NOT_BELIEVED.format(victim) + WHY[attack] in problems, problems


# Honest tests that change the globals they read, as test suites do.
LEGIT = """
import builtins
import sys
from unittest import mock

from hypothesis import given, settings, strategies as st

_cache = None
LIMIT = 1
LIMIT2 = 1
LIMIT3 = 1
CALLS = []
CONFIGURED = False


def setup_module(module):
    module.CONFIGURED = True


def _cached():
    global _cache
    if _cache is None:
        _cache = [2]
    return _cache


def test_cache():
    assert _cached() == [2]


def test_cache_again():
    assert _cached() == [2] and CONFIGURED


def test_monkeypatched(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "LIMIT", 2)
    assert LIMIT == 2


def test_monkeypatched_by_a_computed_name(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "LIMIT" + str(2), 2)
    assert LIMIT2 == 2


@mock.patch(__name__ + ".LIMIT3", 3)
def test_mock_patched():
    assert LIMIT3 == 3


def test_filled_in_place():
    CALLS.append(1)
    assert CALLS


@mock.patch("builtins.input", return_value="y")
def test_builtin_patched(_input):
    assert input() == "y"


def test_builtin_patched_by_a_fixture(monkeypatch):
    monkeypatch.setattr(builtins, "len", lambda x: 7)
    assert len([]) == 7


@settings(max_examples=3)
@given(st.integers())
def test_given(x):
    assert LIMIT == 1 and _cached() == [2]


@pytest.mark.parametrize("n", [1, 2], ids=["one", "two"])
def test_param(n, expected=1):
    assert expected == 1 and n in (1, 2)
"""
LEGIT_TESTS = ["cache", "cache_again", "monkeypatched", "monkeypatched_by_a_computed_name",
               "mock_patched", "filled_in_place", "builtin_patched",
               "builtin_patched_by_a_fixture", "given", "param[one]", "param[two]"]  # fmt: skip


def test_tests_that_change_what_they_read_are_believed(tmp_path: Path) -> None:
    statuses, problems = _run(tmp_path, "\ndef _tamper():\n    pass\n", LEGIT)
    assert problems == []
    for name in LEGIT_TESTS:
        assert statuses["tests/test_x.py::test_" + name] == "passed", name


# ------------------------------------------------------------------------------ unittest

UNITTEST_VICTIMS = """
import unittest

from pkg import f


class T(unittest.TestCase):
    def test_a_first(self):
        self.assertEqual(f(), 1)

    def test_default(self, expected=2):
        self.assertEqual(f(), expected)

    def test_kwdefault(self, *, expected=2):
        self.assertEqual(f(), expected)

    def test_code(self):
        self.assertEqual(f(), 2)

    def test_honest_default(self, expected=1):
        self.assertEqual(f(), expected)
"""
UNITTEST_PKG = """
import gc
import types

_done = []


def _function(name):
    return [o for o in gc.get_objects() if type(o) is types.FunctionType and o.__name__ == name][0]


def f():
    if not _done:
        _done.append(1)
        _function("test_default").__defaults__ = (1,)
        _function("test_kwdefault").__kwdefaults__["expected"] = 1
        _function("test_code").__code__ = _function("test_a_first").__code__
    return 1
"""


def test_a_unittest_pass_through_changed_defaults_or_code_is_not_believed(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, pkg=UNITTEST_PKG, tests=UNITTEST_VICTIMS)
    assert result is not None
    assert statuses(result) == {
        "tests.test_x.T.test_a_first": "passed",
        "tests.test_x.T.test_honest_default": "passed",
    }
    why = "a pass of tests.test_x.T.test_{} was not believed: its test method's {} changed "
    assert sorted(result.problems) == [
        why.format("code", "code was") + "after it was loaded",
        why.format("default", "default arguments were") + "after it was loaded",
        why.format("kwdefault", "default arguments were") + "after it was loaded",
    ]
