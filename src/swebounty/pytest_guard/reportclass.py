"""Which TestReport subclasses the guard accepts: those installed plugins define (swebounty_guard.py).

A plugin may report with a TestReport subclass of its own (pytest-subtests' SubTestReport,
an attrs class). Such a class is accepted only when
- it existed before any conftest.py, test module or code they import ran: it is found when
  pytest is about to load the initial conftest.py files (entry-point and -p plugins are
  loaded by then);
- its module's file is in the environment (a trusted directory), never in the workspace nor a
  file the submission changed, and the module holds the class under its name;
- every member of it (and of its bases below TestReport) that runs code is genuine code of the
  environment (genuine.py), or one of the few methods attrs and dataclasses generate;
and only while its members stay the ones seen then. A class the repository defines, even in a
file the submission did not change, is never one: nothing of the repository makes reports.

Python 3.6+, standard library only; no code of the workspace runs while it checks.
"""

import os
import sys

# What attrs and dataclasses compile for a class from source of their own making: never a
# method that could change what an attribute reads (__getattribute__, __setattr__, ...).
GENERATED = frozenset(
    ["__repr__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__",
     "__getstate__", "__setstate__", "__replace__", "__attrs_init__"]
)  # fmt: skip


def pytest_s_own(test_report):
    """pytest's own report classes of test results: pytest 9 reports unittest's subTests with
    a class of its own (imported with its default plugins, before the workspace's code ran)."""
    subtests = sys.modules.get("_pytest.subtests")
    return (test_report, getattr(subtests, "SubtestReport", test_report))


class PluginReports:
    """`genuine`, `machinery`: the guard's own copies of those modules (never on sys.path)."""

    def __init__(self, genuine, machinery):
        self.genuine, self.machinery = genuine, machinery
        self.found = {}  # id -> (class, its members as found)
        self.base = None

    def find(self, guard):
        """The accepted classes, as they are now (`guard`: its trust and code checks)."""
        guard._reals = {}  # see Guard._real
        try:
            self._find(guard)
        except Exception as e:
            guard.notes.append("no report class of a plugin accepted: %r" % e)
        finally:
            guard._reals = None

    def _find(self, guard):
        self.base = base = guard.report_types[0]
        guard.genuine.set_modules(list(sys.modules.values()))
        stack = list(type.__subclasses__(base))
        while stack:
            klass = stack.pop()
            if klass in guard.test_reports or id(klass) in self.found:
                continue
            stack.extend(type.__subclasses__(klass))
            where = self._installed_class(guard, klass, base)
            if where:
                self.found[id(klass)] = (klass, self.members(klass, base))
                guard.notes.append("test reports of %s (from %s) accepted" % (klass, where))

    def problem(self, klass):
        """What is wrong with a report of class `klass` (not pytest's own), or None."""
        seen = self.found.get(id(klass))
        if seen is None or seen[0] is not klass:
            why = "not pytest's TestReport nor an installed plugin's"
            return "a test report is a %s, %s" % (klass, why)
        if self.members(klass, self.base) != seen[1]:
            return "the test report class %s was changed after the plugins loaded" % klass
        return None

    def members(self, klass, base):
        """The identity of every member of `klass` and its bases below `base`."""
        return [
            (id(k), name, self.machinery.code_id(value))
            for k in klass.__mro__[: klass.__mro__.index(base)]
            for name, value in list(vars(k).items())
        ]

    def _installed_class(self, guard, klass, base):
        """The file of the installed module defining `klass`, or None if it is not one."""
        if type(klass) is not type or klass.__qualname__ != klass.__name__:
            return None  # a metaclass of its own, or a class defined inside a function
        space = self.genuine.namespace(sys.modules.get(klass.__module__))
        if space is None or space.get(klass.__name__) is not klass:
            return None
        path = space.get("__file__")
        if not isinstance(path, str) or not self._installed(guard, path):
            return None
        for k in klass.__mro__[: klass.__mro__.index(base)]:
            for name, value in list(vars(k).items()):
                if not self._member_ok(guard, name, value):
                    return None
        return guard._real(path)

    @staticmethod
    def _installed(guard, path):
        real = guard._real(path)
        if real.startswith(os.path.join(guard.workspace, "")) or real in guard.untrusted:
            return False
        return any(real.startswith(d) for d in guard.trusted_dirs)

    def _member_ok(self, guard, name, value):
        if isinstance(value, property):
            funcs = [f for f in (value.fget, value.fset, value.fdel) if f is not None]
        elif isinstance(value, type) or not (callable(value) or _descriptor(value)):
            return True  # data (attrs' and dataclasses' bookkeeping) or a nested class
        else:
            funcs = [value]
        for f in funcs:
            func = self.genuine.function_of(f)
            if func is None:
                return False  # code the guard cannot read (a builtin put there, a partial)
            path = func.__code__.co_filename
            if path.startswith("<"):
                if name not in GENERATED:
                    return False
            elif not (self._installed(guard, path) and guard._code_ok(func)):
                return False
        return True


def _descriptor(value):
    """Whether `value` binds when read from an instance (asked of its type: no code of it runs)."""
    return any("__get__" in vars(k) for k in type(value).__mro__)
