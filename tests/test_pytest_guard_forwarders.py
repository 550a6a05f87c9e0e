"""Guarded runs of tests the guard reads through code no file holds (pytest_guard/forwarders.py).

Honest suites disbelieved on their unpatched base: sqlalchemy/alembic (SQLAlchemy's testing
exclusions wrap a test in `return target(fn, self)`, generated source that hands it to a
genuine caller) and pypa/build (its conftest.py runs each test through
functools.partial(contextvars.copy_context().run, item.obj)). Both are believed; a caller
that does not surely call what it is handed, the submission's caller, a test's code swapped
behind the wrapper, or a context's run of the submission's are not.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from test_pytest_guard import HONEST, _guarded_run

# An installed library (trusted) with a signature-copying decorator as SQLAlchemy's
# util.decorator builds one, exclusions calling the test through a method of theirs, and two
# genuine functions that take (fn, *args, **kw) but do not run fn for sure.
LIBRARY = """
import functools


def decorator(target):
    def decorate(fn):
        code = fn.__code__
        names = code.co_varnames[: code.co_argcount]
        keep = len(names) - len(fn.__defaults__ or ())
        passed = list(names[:keep]) + ["%s=%s" % (n, n) for n in names[keep:]]
        source = "def %s(%s):\\n    return target(fn, %s)\\n" % (
            fn.__name__, ", ".join(names), ", ".join(passed))
        env = {"target": target, "fn": fn, "__name__": fn.__module__}
        exec(source, env)
        wrapper = env[fn.__name__]
        wrapper.__defaults__ = fn.__defaults__
        return functools.update_wrapper(wrapper, fn)

    return decorate


class compound:
    def __init__(self, skip):
        self.skip = skip

    def __call__(self, fn):
        @decorator
        def decorate(fn, *args, **kw):
            return self._do(fn, *args, **kw)

        return decorate(fn)

    def _do(self, fn, *args, **kw):
        if self.skip():
            import pytest

            pytest.skip("excluded")
        return fn(*args, **kw)


def skip_if(predicate):
    return compound(predicate)


def warn_exception(func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except Exception:
        import warnings

        warnings.warn("ignored")


def later(fn, *args, **kw):
    _queue.append((fn, args, kw))


_queue = []
"""
# The project's requirements (alembic.testing's, the submission's to change), and its tests.
REQUIREMENT = "import sqlalike\n\n\ndef f():\n    return 1\n\n\nrequirement = {}\n"
DECORATED = """

from pkg import requirement


class TestThing:
    @requirement
    def test_req_ok(self, tmp_path):
        assert f() == 1

    @requirement
    def test_req_default(self, tmp_path, n=1):
        assert f() == n

    @requirement
    def test_req_bad(self, tmp_path):
        assert f() == 2
"""
# After collection, the test's code becomes the passing test's (reads.py, through the globals
# the generated wrapper holds it in).
SWAP = """

def f():
    import sys

    test_x = [m for m in list(sys.modules.values()) if m and "test_x" in m.__name__][0]
    thing = test_x.TestThing
    bad = thing.__dict__["test_req_bad"].__wrapped__
    bad.__code__ = thing.__dict__["test_req_ok"].__wrapped__.__code__
    return 1
"""
NOT_BELIEVED = (
    "a pass of tests/test_x.py::TestThing::test_req_bad was not believed: its test function"
)
HANDS = " has a wrapper from <string> that hands it to "
CALLERS = {
    "honest": ("sqlalike.skip_if(lambda: False)", None),
    "catches": ("sqlalike.decorator(sqlalike.warn_exception)",
                HANDS + "warn_exception of {SITE}, not proven to call it: it catches exceptions"),
    "queues": ("sqlalike.decorator(sqlalike.later)",
               HANDS + "later of {SITE}, not proven to call it: it calls fn in a branch or a "
               "loop, after a return, or not at all"),
    "the-submission-s": ("sqlalike.decorator(lambda fn, *a, **k: None)",
                         HANDS + "code of {WS}/pkg/__init__.py, which is not genuine"),
    "swaps-the-test-s-code": ("sqlalike.skip_if(lambda: False)" + SWAP,
                              "'s code was changed after it was collected"),
}  # fmt: skip


@pytest.mark.parametrize(("requirement", "why"), CALLERS.values(), ids=CALLERS)
def test_a_generated_wrapper_is_believed_when_its_caller_calls_the_test(
    tmp_path: Path, requirement: str, why: str | None
) -> None:
    site = tmp_path / "site"
    (site / "sqlalike").mkdir(parents=True)
    (site / "sqlalike" / "__init__.py").write_text(LIBRARY)
    run = _guarded_run(
        Path(sys.prefix), tmp_path / "run", tamper=False, site=site, extra_test=DECORATED,
        files={"pkg/__init__.py": REQUIREMENT.format(requirement)},
    )  # fmt: skip
    assert run is not None
    passed = {f"tests/test_x.py::TestThing::test_req_{n}": "passed" for n in ("ok", "default")}
    bad = "tests/test_x.py::TestThing::test_req_bad"
    if why is None:
        assert run.problems == []
        assert run.statuses == {**HONEST, **passed, bad: "failed"}
        return
    assert run.statuses[bad] == "passed", (run.statuses, run.problems)  # forged, and flagged:
    why = why.replace("{SITE}", str(site / "sqlalike" / "__init__.py"))
    assert NOT_BELIEVED + why.replace("{WS}", str(tmp_path / "run" / "ws")) in run.problems


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
