"""A guard's own errors: an exception the guard's code raised where its caller would swallow it
(an `except Exception` of the guard's, a reporter's or result object's wrapper whose runner goes
on or dies without a word) or take it for the test's.

Such an error is recorded and sent as the guard's `errors` (the harness then reads none of the
run's results: the guard may have stopped recording, and the unpatched base's run says whose
fault that is), so a guard that breaks says so instead of sending fewer results, or none.

Whose exception it is: the guard's when the innermost frame of its traceback runs code of the
guard's own modules, known by the identity of their code objects, never by a file name (anyone
can give code one). An exception raised in code the guard calls (a test's descriptor,
`__str__`, `__eq__`) is not the guard's: it stays where it was, the test's or swallowed as
before. Code of the submission could raise again an exception the guard's code raised, to pass
it off as the guard's: the run then loses its results, which a clean base run lays on the
submission (crashes_tests); forging one only costs it.

Python 3.6+, standard library only.
"""

import types

_MAX_ERRORS = 20
# Read through the base classes' descriptors: never a subclass's (or metaclass's) attribute.
_TRACEBACK, _NAME = BaseException.__dict__["__traceback__"], type.__dict__["__name__"]


class Faults:
    """The errors of one guard (`name`: what its messages call it), whose code is that of the
    functions and classes in `namespaces` (its modules' globals)."""

    def __init__(self, name, namespaces, limit):
        self.name, self.limit = name, limit
        self.errors = []
        self._codes = []  # kept alive, so no id of theirs is reused
        self._ids = set()
        for namespace in namespaces:
            for code in _codes_in(namespace):
                self._codes.append(code)
                self._ids.add(id(code))

    def own(self, exc):
        """Whether the guard's code raised `exc` (its traceback's innermost frame)."""
        tb, last = _TRACEBACK.__get__(exc, type(exc)), None
        while type(tb) is types.TracebackType:
            last, tb = tb, tb.tb_next
        return last is not None and id(last.tb_frame.f_code) in self._ids

    def caught(self, exc):
        """Record `exc` if the guard's code raised it; whether it did."""
        if not self.own(exc):
            return False
        self.record(exc)
        return True

    def run(self, func, *args, cut=False):
        """func(*args), None when the guard's code raised (recorded). Any other exception goes
        on to the caller, as it would have without the guard; unless `cut` (checks whose end
        the results wait for): then it is recorded too, as what cut them short."""
        try:
            return func(*args)
        except Exception as exc:
            if self.caught(exc):
                return None
            if not cut:
                raise
            self.record(exc, "'s checks were cut short by code it called")
            return None

    def record(self, exc, what=" failed"):
        try:
            said = str(exc)
        except Exception:
            said = "<unprintable>"
        text = "swebounty's %s%s: %s: %s" % (self.name, what, _NAME.__get__(type(exc)), said)
        text = text[: self.limit]
        if text not in self.errors and len(self.errors) < _MAX_ERRORS:
            self.errors.append(text)


def _codes_in(namespace):
    """Every code object of a namespace's functions and its classes' methods (their properties,
    static and class methods too), and the code nested in them."""
    stack, found = [], []
    for value in list(namespace.values()):
        members = list(vars(value).values()) if isinstance(value, type) else [value]
        for member in members:
            if isinstance(member, property):
                member = member.fget
            func = getattr(member, "__func__", member)
            if isinstance(func, types.FunctionType) and func.__globals__ is namespace:
                stack.append(func.__code__)
    while stack:
        code = stack.pop()
        found.append(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found
