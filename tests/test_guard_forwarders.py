"""What forwarders.py reads: functools.partial(context.run, test) is read through only when it
runs its function in a context with exactly the arguments it is given. The guarded run of it
(pypa/build's suite was disbelieved): test_pytest_guard_forwarders.py.
"""

from __future__ import annotations

import contextvars
import functools


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
