"""The package, imported by the tests, reaches pytest's fixture machinery in memory (gc finds
the FixtureDef objects, the items and their fixture information) and makes a failing test
pass without touching its function: a fixture's function swapped (for the submission's code
or another genuine fixture's), its value planted in the definition's cache or in the item's
arguments, its `execute` replaced (on the definition or on pytest's class), the definition
replaced in pytest's registry or in the item's fixture information, the item's parameters
changed, or the item given another genuine test's function. No test function changes, so
testcalls.py alone believed these passes; the guard checks the fixtures a test got
(pytest_guard/fixtures.py). Through the guard's runner, not a sandbox. Legitimate fixtures
(installed plugins', pytest's own, yield, parametrized, overridden, decorated, autouse,
`getfixturevalue`, `pytest_plugins`) stay believed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from test_pytest_guard import _guarded_run, _plugin_site

INIT = "def f():\n    return 1\n"
# The repository's conftest.py (a base file): `number` is the value under test; `two` is
# another genuine fixture, whose function returns what the failing tests expect.
CONFTEST = """
import pytest


@pytest.fixture
def number():
    from pkg import f

    return f()


@pytest.fixture
def two():
    return 2
"""
# Tests that fail honestly (f() returns 1), after test_ok and test_bad.
TESTS = """

def test_fixture(number):
    assert number == 2


@pytest.mark.parametrize("expected", [2])
def test_param(expected):
    assert f() == expected


def test_zzz_last():
    assert f() == 2
"""
# Run at import (while the test module is collected): the conftest's definition of `number`.
NUMBER = """
import gc

_fd = [o for o in gc.get_objects() if type(o).__name__ == "FixtureDef" and o.argname == "number"][0]
"""
# Run by f() when test_ok calls it, after collection: the items, by name.
LATER = """
import gc

_done = []


def f():
    if not _done:
        _done.append(1)
        _items = {o.name: o for o in gc.get_objects() if type(o).__name__ == "Function"}
        _tamper(_items)
    return 1


def _fixturedef(name):
    return [o for o in gc.get_objects() if type(o).__name__ == "FixtureDef" and o.argname == name][0]
"""
EXECUTE = """
def _execute(request, _fd=_fd):
    _fd.cached_result = (2, None, None)
    return 2
"""
ON_THE_CLASS = """
import gc

_cls = [o for o in gc.get_objects() if isinstance(o, type) and o.__name__ == "FixtureDef"][0]
_real = _cls.execute


def _execute(self, request):
    if self.argname == "number":
        self.cached_result = (2, None, None)
        return 2
    return _real(self, request)


_cls.execute = _execute
"""
REGISTRY = """
import copy

_fake = copy.copy(_fd)
_fake.func = lambda: 2
_fm = _fd.func and [o for o in gc.get_objects() if type(o).__name__ == "FixtureManager"][0]
for _held in vars(_fm).values():
    for _inner in (_held.values() if isinstance(_held, dict) else ()):
        for _list in (_inner.values() if isinstance(_inner, dict) else [_inner]):
            if isinstance(_list, list) and _fd in _list:
                _list[_list.index(_fd)] = _fake
"""
FIXTURE_INFO = """
import copy


def _tamper(items):
    fake = copy.copy(_fixturedef("number"))
    fake.func = _fixturedef("two").func
    info = items["test_fixture"]._fixtureinfo
    info.name2fixturedefs["number"] = (fake,)
"""
TEST = "tests/test_x.py::test_{}"
NOT_BELIEVED = "a pass of " + TEST + " was not believed: "
PKG = "{WS}/pkg/__init__.py"
NOT_GENUINE = "which is not the code of a file the submission did not change"
# attack -> (the package's code, the test it makes pass, why that pass is not believed)
ATTACKS = {
    "a-fixture-s-function-swapped": (
        NUMBER + "_fd.func = lambda: 2\n", "fixture",
        "its fixture number is not the code of " + PKG,
    ),
    "a-fixture-s-function-another-genuine-one": (
        NUMBER + "_fd.func = [o for o in gc.get_objects() if o is not _fd and type(o) is type(_fd) "
        "and o.argname == 'two'][0].func\n",
        "fixture",
        "its fixture number's function is not the one collected for it",
    ),
    "a-fixture-s-cached-value-planted": (
        NUMBER + "_fd.cached_result = (2, None, None)\n", "fixture",
        "the value of its fixture number was not made by its fixture's function",
    ),
    "a-fixture-s-execute-swapped": (
        NUMBER + EXECUTE + "_fd.execute = _execute\n", "fixture",
        "its fixture number holds execute, " + NOT_GENUINE,
    ),
    "fixturedef-execute-patched-on-the-class": (
        ON_THE_CLASS, "fixture",
        "its fixture number is a FixtureDef, whose code is not genuine",
    ),
    "a-fixture-replaced-in-pytest-s-registry": (
        NUMBER + REGISTRY, "fixture", "its fixture number is not the code of " + PKG,
    ),
    "a-fixture-replaced-in-the-item-s-fixture-info": (
        LATER + FIXTURE_INFO, "fixture",
        "its fixture number is not a definition collected for it",
    ),
    "a-fixture-value-planted-in-the-item-s-arguments": (
        LATER + "\ndef _tamper(items):\n    items['test_fixture'].funcargs['number'] = 2\n",
        "fixture", "its fixture number was not set up by pytest",
    ),
    "a-parameter-changed": (
        LATER + "\ndef _tamper(items):\n    items['test_param[2]'].callspec.params['expected'] = 1\n",
        "param[2]", "its parameter expected is not the one collected for it",
    ),
    "the-item-given-another-genuine-test-function": (
        LATER + "\ndef _tamper(items):\n    items['test_zzz_last'].obj = items['test_ok'].obj\n",
        "zzz_last", "its test function is not the one collected for it",
    ),
}  # fmt: skip


def _run(tmp_path: Path, code: str, **kw: object) -> tuple[dict[str, str], list[str]]:
    files = {"base:tests/conftest.py": CONFTEST, "pkg/__init__.py": INIT + code}
    files.update(kw.pop("files", {}))  # type: ignore[arg-type]
    run = _guarded_run(Path(sys.prefix), tmp_path, tamper=False, files=files,
                       extra_test="import pytest\n" + str(kw.pop("extra_test", TESTS)),
                       **kw)  # type: ignore[arg-type]  # fmt: skip
    assert run is not None
    ws = str(tmp_path / "ws")
    return run.statuses, [p.replace(ws, "{WS}") for p in run.problems]


def test_the_failing_tests_fail_without_an_attack(tmp_path: Path) -> None:
    statuses, problems = _run(tmp_path, "")
    assert problems == []
    assert statuses == {TEST.format(n): "passed" if n == "ok" else "failed"
                        for n in ("ok", "bad", "fixture", "param[2]", "zzz_last")}  # fmt: skip


@pytest.mark.parametrize(("code", "test", "why"), ATTACKS.values(), ids=ATTACKS)
def test_a_pass_through_a_forged_fixture_is_not_believed(
    tmp_path: Path, code: str, test: str, why: str
) -> None:
    statuses, problems = _run(tmp_path, code)
    assert statuses[TEST.format(test)] == "passed"  # forged, and flagged:
    assert NOT_BELIEVED.format(test) + why in problems, problems


# An installed plugin (as pytest-mock, pytest-asyncio before 0.17): a fixture, an autouse one,
# and a setup hook that wraps some fixtures' functions for good (functools.wraps).
PLUGIN = """
import functools

import pytest


@pytest.fixture
def mocker():
    calls = []
    yield calls
    calls.clear()


@pytest.fixture(autouse=True)
def _plugin_autouse():
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    func = fixturedef.func
    if func.__name__.startswith("wrapped_") and not hasattr(func, "__wrapped__"):

        @functools.wraps(func)
        def synchronized(*args, **kwargs):
            return func(*args, **kwargs)

        fixturedef.func = synchronized
    yield
"""
ROOT_CONFTEST = """
import pytest

pytest_plugins = ["tests.plugin_fixtures"]


@pytest.fixture
def number():
    return 1


@pytest.fixture(scope="session")
def session_value():
    return {"n": 1}
"""
PLUGIN_FIXTURES = """
import pytest


@pytest.fixture
def from_plugin():
    return "plugin"
"""
NESTED_CONFTEST = """
import contextlib
import functools

import pytest


@pytest.fixture
def number(number):  # overrides the root conftest's, and asks for it
    return number + 1


def logged(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


@pytest.fixture
@logged
def decorated():
    return 3


@contextlib.contextmanager
def _resource():
    yield "resource"


@pytest.fixture
def managed():
    with _resource() as r:
        yield r


@pytest.fixture
@contextlib.contextmanager
def cm():
    yield 4


@pytest.fixture(params=[1, 2], ids=lambda p: "p%d" % p)
def param(request):
    return request.param


@pytest.fixture(scope="module", params=[(1, "a")])
def module_param(request):
    return request.param


@pytest.fixture(autouse=True)
def autoused(request):
    request.node.autoused = True
    yield


@pytest.fixture
def wrapped_value():
    return 5
"""
LEGIT = """

def test_builtin(tmp_path, monkeypatch, capsys, request):
    monkeypatch.setenv("SWEBOUNTY_X", "1")
    print("hi")
    assert tmp_path.is_dir() and capsys.readouterr().out == "hi\\n" and request.node.autoused


def test_plugin(mocker, from_plugin):
    assert mocker == [] and from_plugin == "plugin"


def test_override(number):
    assert number == 2


def test_decorated(decorated, managed, cm, wrapped_value):
    with cm as four:
        assert (decorated, managed, four, wrapped_value) == (3, "resource", 4, 5)


def test_param(param):
    assert param in (1, 2)


@pytest.mark.parametrize("param", [7], indirect=True)
def test_indirect(param):
    assert param == 7


@pytest.mark.parametrize("x, y", [(1, (2, 3)), (2, (2, 3))])
def test_direct(x, y, module_param):
    assert y == (2, 3) and module_param == (1, "a")


def test_dynamic(request):
    assert request.getfixturevalue("number") == 2 and request.getfixturevalue("decorated") == 3


def test_session(session_value):
    assert session_value == {"n": 1}


def test_session_again(session_value):
    assert session_value["n"] == 1


@pytest.mark.usefixtures("managed")
class TestClass:
    @pytest.fixture
    def number(self, number):  # overrides the conftests' in the class
        return number * 10

    @pytest.fixture(autouse=True)
    def _ready(self):
        self.ready = True

    def test_method(self, number):
        assert number == 20 and self.ready
"""
LEGIT_TESTS = ["builtin", "plugin", "override", "decorated", "param[p1]", "param[p2]",
               "indirect[7]", "direct[module_param0-1-y0]", "direct[module_param0-2-y1]",
               "dynamic", "session", "session_again", "TestClass::test_method"]  # fmt: skip


def test_legitimate_fixtures_are_believed(tmp_path: Path) -> None:
    site = _plugin_site(tmp_path, "mockplugin", PLUGIN)
    statuses, problems = _run(
        tmp_path / "run", "", site=site, extra_test=LEGIT,
        files={"base:conftest.py": ROOT_CONFTEST, "base:tests/conftest.py": NESTED_CONFTEST,
               "base:tests/__init__.py": "", "base:tests/plugin_fixtures.py": PLUGIN_FIXTURES},
    )  # fmt: skip
    assert problems == []
    passed = {TEST.format(n).replace("test_TestClass", "TestClass"): "passed" for n in LEGIT_TESTS}
    assert statuses == {TEST.format("ok"): "passed", TEST.format("bad"): "failed", **passed}
