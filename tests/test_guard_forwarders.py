"""What forwarders.py reads: a wrapper generated from source that hands its test to a caller
(SQLAlchemy's util.decorator), the caller's source, and functools.partial(context.run, test),
on every interpreter the environments use; look-alikes that do something else are refused.
The guarded runs of both (real suites were disbelieved): test_pytest_guard_forwarders.py.
"""

from __future__ import annotations

import contextvars
import functools
import subprocess
from pathlib import Path

from test_guard_genuine import _interpreters


def test_a_partial_is_read_through_only_when_it_runs_its_function_in_a_context() -> None:
    from swebounty.pytest_guard import genuine

    def test() -> None:
        return None

    run = contextvars.copy_context().run
    honest = functools.update_wrapper(functools.partial(run, test), test)
    assert genuine.function_of(honest) is test
    assert genuine.function_of(functools.partial(run, test.__get__(object()))) is test  # a method
    for other in (
        functools.partial(run, test, 1),  # an argument of its own
        functools.partial(run, test, x=1),
        functools.partial(print, test),  # another C function
        functools.partial(contextvars.copy_context, test),
        functools.partial(run, functools.partial(run, test)),  # one level only
        type("partial", (functools.partial,), {})(run, test),  # a subclass: a __call__ of its own
    ):
        assert genuine.function_of(other) is None, other


# A caller's forwarder as a signature-copying decorator compiles it, and look-alikes that do
# something else: each interpreter compiles the source the guard compares with.
GENERATED = """
import sys

sys.path.insert(0, sys.argv[1])
import genuine


def target(fn, *args, **kw):
    return fn(*args, **kw)


def test_plain(self):
    pass


def test_kw(self, a, b=3):
    pass


def test_full(self, a, b=3, *args, k=1, **kw):
    pass


def make(source, test, defaults=True, env=dict):
    space = env(target=target, fn=test)
    exec(compile(source, "<string>", "exec"), space)
    made = space[test.__name__]
    if defaults:
        made.__defaults__, made.__kwdefaults__ = test.__defaults__, test.__kwdefaults__
    return made


class Env(dict):
    pass


honest = [
    make("def test_plain(self):\\n    return target(fn, self)\\n", test_plain),
    make("def test_kw(self, a, b=None):\\n    return target(fn, self, a, b=b)\\n", test_kw),
    make("def test_kw(self, a, b=None):\\n    return target(fn, self, a, b)\\n", test_kw),
    make("def test_full(self, a, b=3, *args, k=1, **kw):\\n"
         "    return target(fn, self, a, b=b, k=k, *args, **kw)\\n", test_full),
]
forged = [
    make("def test_kw(self, a, b=None):\\n    return target(fn, a, self, b=b)\\n", test_kw),
    make("def test_kw(self, a, b=None):\\n    return target(fn, self, a, b=a)\\n", test_kw),
    make("def test_kw(self, a, b=None):\\n    return target(fn, self, a)\\n", test_kw),
    make("def test_kw(self, a, b=None):\\n    return target(fn, self, a, b=b)\\n", test_kw, False),
    make("def test_plain(self):\\n    return target(fn, self) or 1\\n", test_plain),
    make("def test_plain(self):\\n    return target(self, fn)\\n", test_plain),
    make("def test_plain(self):\\n    return target(fn, self)\\n", test_plain, env=Env),
    make("def test_kw(self, a):\\n    return target(fn, self, a)\\n", test_kw),
]
print([genuine.hands_on(g) == (target, g.__globals__["fn"]) for g in honest],
      [genuine.hands_on(g) for g in forged])
# A decorated nested caller (SQLAlchemy's exclusions): found by its first decorator's line.
CALLER = b'''
class Exclusion:
    def __call__(self, fn):
        @staticmethod
        def decorate(fn, *args, **kw):
            return self.run(fn, *args, **kw)

        return decorate.__func__
'''
space = {}
exec(compile(CALLER, "/callers.py", "exec"), space)
decorate = space["Exclusion"]()(None)
print(genuine._forwarders.caller_problem(decorate, lambda f: True, lambda f: CALLER))
"""


def test_a_caller_s_forwarder_is_told_from_code_that_does_more() -> None:
    from swebounty.pytest_guard import genuine

    here = str(Path(genuine.__file__).parent)
    for python in _interpreters():
        run = subprocess.run([python, "-c", GENERATED, here], capture_output=True, text=True)
        expected = "[True, True, True, True] " + str([None] * 8) + "\nNone"
        assert run.stdout.strip() == expected, (python, run.stderr[-800:])


def test_a_caller_is_believed_only_when_its_source_calls_what_it_is_handed(
    tmp_path: Path,
) -> None:
    """The caller's proof reads its file as genuine.py compiled it, by name and first line."""
    from swebounty.pytest_guard import forwarders

    source = b"""
import contextlib


@contextlib.contextmanager
def quiet():
    yield


def plain(fn, *args, **kw):
    return fn(*args, **kw)


def through(fn, *args, **kw):
    x = 1
    with quiet():
        return handler.run(x, fn, *args, **kw)


def cleanup(fn, *args, **kw):
    try:
        fn(*args, **kw)
    finally:
        print("done")


def early(fn, *args, **kw):
    if args:
        return None
    return fn(*args, **kw)


def looped(fn, *args, **kw):
    for _ in range(2):
        fn(*args, **kw)


def finally_returns(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    finally:
        return None


def rebinds(fn, *args, **kw):
    fn = print
    return fn(*args, **kw)


def bare(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except:
        pass


def deferred(fn, *args, **kw):
    return lambda: fn(*args, **kw)


def named(fn, *args, k=1, **kw):
    return fn(*args, **kw)
"""
    path = tmp_path / "callers.py"
    path.write_bytes(source)
    space: dict[str, object] = {}
    exec(compile(source, str(path), "exec"), space)

    def problem(name: str) -> str | None:
        caller = getattr(space[name], "__wrapped__", space[name])  # quiet's generator
        return forwarders.caller_problem(caller, lambda f: True, lambda f: source)

    for honest in ("plain", "through", "cleanup"):
        assert problem(honest) is None, honest
    unproven = {
        "early": "in a branch", "looped": "in a branch", "finally_returns": "finally clause",
        "rebinds": "rebinds fn", "bare": "catches exceptions", "deferred": "in a branch",
        "named": "does not take (fn, *args, **kw)", "quiet": "generator",
    }  # fmt: skip
    for name, why in unproven.items():
        found = problem(name)
        assert found is not None and why in found, (name, found)
    assert "not genuine" in str(forwarders.caller_problem(space["plain"], lambda f: False, None))  # type: ignore[arg-type]
    assert "not read" in str(forwarders.caller_problem(space["plain"], lambda f: True, None))  # type: ignore[arg-type]
