"""Whether a test's call that passed ran the test's own code (swebounty_guard.py's check).

machinery.py watches pytest's and pluggy's modules and classes; the objects pytest runs a test
with are instances, and code of the submission (imported by the tests) can reach them in
memory (gc, sys.modules) and change them where no class changes: give an item an `obj` (the
test function) or a `runtest` of its own, replace a hook caller in the hook relay, or the
plugin manager's hook executor. A failing test's call then does nothing, and passes.

A pass of a test's call is believed only when:
- every object on the call's path (the plugin manager, its hook relay and hook callers, the
  config, the session, the item and the collectors above it) holds no code of its own in
  place of its class's method, and the code it holds is genuine (genuine.py): a file of the
  environment or a workspace file the submission did not change; and its class is genuine;
- the item's class is the one it had when collection finished, and while collectors made
  the tests, they held no code in place of their class's methods (else a problem too);
- the item's `runtest` is genuine; when it is pytest's own (`Function.runtest`), this plugin's
  pytest_pyfunc_call wrapper saw the call: the hook ran through pytest's machinery;
- the test function pytest_pyfunc_call calls (`item.obj`, as the hook starts) is genuine
  code of a trusted file, or a decorator's wrapper proven to run such code (genuine.unwrap:
  mock.patch, Hypothesis's @given, pytest-asyncio's, a test helper's functools.wraps).
Items that are not pytest `Function`s (doctests, a plugin's non-Python items) and Function
subclasses whose runtest does not call the hook (unittest.TestCase items) are judged by the
first two rules only.

What the test function was given (its fixtures and parameters), and that it is the one
collected for its item (not another genuine test's), fixtures.py judges as the hook starts.

What this cannot prove: that a test function is the one its module put under that name
(one swapped before collection finished), nor what ran between the checks (an object
changed and put back during the call), nor that an item's class is the one pytest made it
with when other means than its collector's methods (a thread) changed it during collection:
a genuine class of another kind of item, a doctest's, passes as well.

Python 3.6+, standard library only. A pass is judged from objects' own attributes and their
classes' namespaces, read without running code of those classes (but pytest 9's node id,
which its class's property builds).
"""

import contextlib
import os
import sys
import types
from itertools import chain

import pytest

# A class's own namespace and bases, whatever its metaclass says they are.
_TYPE_DICT, _MRO = type.__dict__["__dict__"], type.__dict__["__mro__"]
_SLOT = types.MemberDescriptorType  # a __slots__ entry's descriptor
_NAMED = 5  # passes not believed, named one by one among the guard's problems


class TestCalls:
    """A plugin of the guard's: it sees each test function as pytest is about to call it."""

    __test__ = False  # not a test class, whatever collects it

    def __init__(self, guard, genuine, fixtures, reads):
        self.guard = guard  # its _code_ok, genuine, config and session
        self.genuine = genuine  # the module
        self.fixtures = fixtures.Fixtures(self)  # what the test function is called with
        self.reads = reads.Reads(genuine.held)  # what it reads besides: defaults, globals
        self.doubted = 0  # passes not believed
        self.reached = {}  # nodeid -> (item, why its test function is not believed, or None)
        self.function = self.runtest = None  # pytest's Function class and runtest (snapshot)
        self.items = {}  # nodeid -> item, from the session's list
        self._counted = -1  # how many items the session's list had then
        self.classes = {}  # id -> (item, its class when collection finished)
        self._classes = {}  # id -> (class, its members, their ids, whether all are genuine)
        self._now = {}  # id -> (class, whether genuine), during one judgement
        self._seen = {}  # id -> (object, what it held, their ids, what _unless_same said)
        self._module = None  # the test module of the function being judged
        self._key = self._set = None  # what genuine's modules were gathered from (_modules)

    def snapshot(self):
        import _pytest.python

        self.guard.genuine.remember_class(TestCalls)  # its own hook, as the guard's are
        self.fixtures.snapshot()
        self.function = _pytest.python.Function
        self.runtest = vars(self.function).get("runtest")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        try:
            why = self._function_problem(pyfuncitem) or self.fixtures.problem(pyfuncitem)
            why = why or self.reads.look(pyfuncitem.nodeid)
        except Exception as exc:  # a descriptor of the submission's, say
            why = "its test function could not be read (%s)" % type(exc).__name__
        self.reached[pyfuncitem.nodeid] = (pyfuncitem, why)
        yield

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        # A test (or its rerun) starts: its call is yet to come. Not as its setup is reported:
        # pytest-rerunfailures reports an attempt's phases after all of them ran.
        self.reached.pop(item.nodeid, None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self):
        self.reads.snapshot_builtins()  # before any conftest.py runs

    @pytest.hookimpl(tryfirst=True)
    def pytest_plugin_registered(self, plugin):
        space = self.genuine.namespace(plugin)  # a conftest.py, a module `pytest_plugins` names
        with contextlib.suppress(Exception):
            self._track(space)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid):
        with contextlib.suppress(Exception):
            item = self._item(nodeid)
            if item is not None:
                self.reads.start(nodeid, self.fixtures.readers(item))

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_pycollect_makeitem(self, collector, name, obj):
        outcome = yield
        with contextlib.suppress(Exception):  # the test function as it is made an item
            func = self.genuine.function_of(obj) if outcome.get_result() else None
            if isinstance(func, types.FunctionType):
                self.reads.remember(func)
                node = collector
                while node is not None and not isinstance(
                    self._read(node, "_obj"), types.ModuleType
                ):
                    node = self._read(node, "parent")
                self._track(self.genuine.namespace(self._read(node, "_obj")))
        # What made the items: a collector's method of its own could have changed them.
        try:
            self._now = {}
            self._modules()
            why = self._unless_same(collector, self._holds, collector)
        except Exception as exc:
            why = "could not be read (%s)" % type(exc).__name__
        if why:
            self.guard._problem("a collector that made tests %s" % why)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session):
        items = self.genuine.attributes(session).get("items")
        for item in list(items) if type(items) is list else []:
            self.classes[id(item)] = (item, type(item))

    # ------------------------------------------------------------------ judging a pass

    def problem(self, report):
        """The guard's problem for a test report (a pass of a test's call), or None. The first
        few are named; one is enough to flag the attempt, and the list keeps room for others."""
        nodeid = report.nodeid
        if report.when == "teardown":  # what its pass read, changed and not undone
            return self._doubt(nodeid, self.reads.end(nodeid, self.guard.genuine.codes))
        if report.when != "call" or report.outcome != "passed":
            return None
        return self._doubt(nodeid, self.judge(nodeid))

    def unfinished(self):
        """The guard's problems for tests whose teardown never ended (the session stopped)."""
        for nodeid, why in self.reads.unfinished(self.guard.genuine.codes):
            self.guard._problem(self._doubt(nodeid, why))

    def _doubt(self, nodeid, why):
        if not why:
            return None
        self.doubted += 1
        if self.doubted > _NAMED:
            return "passes of more than %d tests were not believed" % _NAMED
        return "a pass of %s was not believed: %s" % (nodeid, why)

    def judge(self, nodeid):
        """Why the pass of `nodeid`'s call is not believed, or None."""
        self._now = {}
        self._modules()
        reached = self.reached.get(nodeid)  # a test's subtests report passes of it too
        item = reached[0] if reached else self._item(nodeid)
        if item is None:
            return None  # not one of the session's items: nothing pytest ran is known
        made = self.classes.get(id(item))
        if made is not None and made[0] is item and made[1] is not type(item):
            return "its class was changed after it was collected"
        why = self._path_problem(item)
        if why:
            return why
        runtest = self.genuine.attributes(item).get("runtest")
        if runtest is None:
            runtest = _class_member(type(item), "runtest")
        if runtest is not None and not self._ok(runtest):
            return "its runtest is not the code of a file the submission did not change"
        if not issubclass(type(item), self.function):
            return None
        if getattr(runtest, "__func__", runtest) is self.runtest and reached is None:
            return "its test function was not called through pytest's pytest_pyfunc_call"
        return (reached[1] or self.reads.look(nodeid, passed=True)) if reached else None

    def _item(self, nodeid):
        items = self.genuine.attributes(self.guard.session).get("items")
        count = len(items) if type(items) is list else 0
        found = self.items.get(nodeid)
        if found is None or count != self._counted:  # built once, not at every test
            self.items, self._counted = {}, count
            for item in list(items) if count else []:
                self.items.setdefault(self._nodeid(item), item)
            found = self.items.get(nodeid)
        return found

    def _modules(self):
        """genuine's modules (sys.modules, pytest's plugins, the test module pytest loaded),
        gathered afresh only when they may have changed: sys.modules holds thousands."""
        plugins = []
        with contextlib.suppress(Exception):
            plugins = list(self._manager().get_plugins())
        key = (len(sys.modules), len(plugins), id(self._module))
        if key != self._key or self.guard.genuine.modules is not self._set:
            extra = [self._module] if self._module is not None else []
            self.guard.genuine.set_modules(list(sys.modules.values()) + plugins + extra)
            self._key, self._set = key, self.guard.genuine.modules

    def _manager(self):
        return self.genuine.attributes(self.guard.config).get("pluginmanager")

    def _track(self, space):
        """A module namespace whose reads are checked: a base file of the workspace's."""
        path = space.get("__file__") if type(space) is dict else None
        if isinstance(path, str) and self.guard._trusted(path):
            real = self.guard._real(path)
            if real.startswith(os.path.join(self.guard.workspace, "")):
                self.reads.track(space, real)

    def _function_problem(self, item):
        func = self.genuine.function_of(item.obj)
        if func is None:
            return "its test function is not Python code"
        # The module pytest loaded (in its importlib mode, it may not be in sys.modules).
        self._module = getattr(item, "module", None)
        self._modules()
        why = self.genuine.unwrap(func, self.guard._code_ok, self.source)
        return "its test function %s" % why if why else None

    def source(self, func):
        """The bytes of `func`'s file as genuine.py compiled them (a caller's proof reads them)."""
        return self.guard.genuine.source(self.guard._real(func.__code__.co_filename))

    def _path_problem(self, item):
        guard = self.guard
        manager = self._manager()
        relay = self.genuine.attributes(manager).get("hook")
        objects = [("the plugin manager", manager), ("the config", guard.config),
                   ("the hook relay", relay), ("the session", guard.session)]  # fmt: skip
        node, depth = item, 0
        while node is not None and depth < 64:
            objects.append(("the item" if node is item else "a collector above it", node))
            node, depth = self._read(node, "parent"), depth + 1
        for what, obj in objects:
            if obj is item:  # new at every test: judged afresh
                why = self._holds(obj, skip=("_obj", "obj"))
            else:
                why = self._unless_same(obj, self._holds, obj)
            if why:
                return "%s %s" % (what, why)
        for name, caller in list(self.genuine.attributes(relay).items()):
            why = self._caller(caller)
            if why:
                return "the hook %s %s" % (name, why)
        return None

    def _unless_same(self, obj, judge, *args):
        """judge(*args), or what it said when `obj`, its class and what it holds are the very
        objects they were then (kept alive in the cache, so that no id is reused)."""
        klass = type(obj)
        if not self._class_ok(klass):  # itself cached as long as its namespaces are the same
            return "is a %s, whose code is not genuine" % klass.__name__
        own = self.genuine.attributes(obj)
        held = (klass, *own.keys(), *own.values(), *args)
        ids = tuple(map(id, held))
        seen = self._seen.get(id(obj))
        if seen is None or seen[0] is not obj or seen[2] != ids:
            seen = self._seen[id(obj)] = (obj, held, ids, judge(*args))
        return seen[3]

    def _holds(self, obj, skip=()):
        """Why `obj` (one of pytest's objects) may run code that is not genuine, or None."""
        if obj is None:
            return None
        klass = type(obj)
        if not self._class_ok(klass):
            return "is a %s, whose code is not genuine" % klass.__name__
        for name, value in list(self.genuine.attributes(obj).items()):
            if name in skip:
                continue
            member = _class_member(klass, name)
            method = isinstance(member, (staticmethod, classmethod))
            shadows = method or self.genuine.has_code(member)
            if (shadows or self.genuine.has_code(value)) and not self._ok(value):
                return "holds %s, which is not the code of a file the submission did not change" % (
                    name
                )
        return None

    def _caller(self, caller):
        """A hook caller: pluggy's (or a genuine plugin's) class, calling pluggy's executor."""
        if not self._class_ok(type(caller)):
            return "is called by code that is not genuine"
        execute = self._read(caller, "_hookexec")
        return self._unless_same(caller, self._runs, caller, execute)

    def _runs(self, caller, execute):
        if not self._ok(caller):
            return "is called by code that is not genuine"
        if execute is not None and not self._ok(execute):
            return "runs its hooks through code that is not genuine"
        return None

    def _nodeid(self, item):
        """pytest's own attribute (before 9), else its class's property (pytest 9 builds it)."""
        own = self._read(item, "_nodeid")
        if isinstance(own, str):
            return own
        prop = _class_member(type(item), "nodeid")
        try:
            return prop.fget(item) if isinstance(prop, property) else None
        except Exception:
            return None

    def _read(self, obj, name):
        """`obj.name` from its own attributes, or from a slot of its class (pytest's nodes and
        pluggy's hook callers keep some there), without running code of its class."""
        slot = _class_member(type(obj), name)
        if type(slot) is _SLOT:
            try:
                return slot.__get__(obj, type(obj))
            except AttributeError:  # never set
                return None
        return self.genuine.attributes(obj).get(name)

    def _ok(self, value):
        """Whether calling `value` runs Python code genuinely from a trusted file."""
        func = self.genuine.function_of(value)
        return func is not None and self.guard._code_ok(func)

    def _class_ok(self, klass):
        """Whether every method of `klass` and its bases is genuine; remembered as long as
        their namespaces hold the very same objects (looked at once per judgement)."""
        now = self._now.get(id(klass))
        if now is not None and now[0] is klass:
            return now[1]
        members = tuple(chain.from_iterable(_own(k).values() for k in _MRO.__get__(klass, type)))
        ids = tuple(map(id, members))
        seen = self._classes.get(id(klass))
        if seen is None or seen[0] is not klass or seen[2] != ids:
            ok = all(self._ok(f) for f in members if self.genuine.has_code(f))
            seen = self._classes[id(klass)] = (klass, members, ids, ok)
        self._now[id(klass)] = (klass, seen[3])
        return seen[3]


def _class_member(klass, name):
    """What `klass` defines under `name` (itself or a base), read without running its code."""
    for k in _MRO.__get__(klass, type):
        found = _own(k).get(name)
        if found is not None:
            return found
    return None


def _own(klass):
    return _TYPE_DICT.__get__(klass, type)
