"""Whether a test got the fixtures and parameters pytest collected for it (testcalls.py's
check, as the test function is about to be called).

testcalls.py proves that a passing call ran the test's own code; what that code was given is
pytest's fixture machinery's: FixtureDef objects (a fixture's function and its cached value),
the item's fixture information, arguments and parameters. Code of the submission reaches them
in memory (gc) and makes a failing test pass without touching it: a fixture's function swapped
(a fake object under test), a value planted in a definition's cache or the item's arguments,
a definition's `execute` replaced, the registry's or the item's definition replaced, the
item's parameters changed, or the item given another genuine test's function.

What is genuine is recorded as pytest collects: each fixture definition with its function,
after every collector's report (the fixtures it parsed, before the next module's code runs);
each item's function, parameters and fixture information when collection finishes; each
value a definition caches, as pytest_fixture_setup leaves it. A test's call is believed only
when every fixture pytest set up for it:
- is a definition recorded for that item (one of its fixture information's, or one of the
  registry's for a name it asked for later), of a genuine class, holding no code of its own;
- has a function that is genuine (genuine.unwrap: a decorator's wrapper proven to run it,
  an installed plugin's too) and runs the function recorded for it;
- holds the value pytest_fixture_setup left, set up for the item's own parameter, and the
  test got that very value;
and the item's parameters, fixture information and function (reached from what it holds
now through the closures of wrappers) are the ones collected.

What this cannot prove: what a definition's function was before its collector's report
(code that ran while a module was collected can put another genuine fixture's function in
a definition parsed by then), what the value object went through (its own state), a fixture
a nearer one overrides and requests (only the nearest is checked), nor what ran between the
checks.

Python 3.6+, standard library only; no code of the workspace runs while it checks (pytest's
own properties aside, as in testcalls.py).
"""

import contextlib

import pytest

_MISSING = object()
_PLAIN = (int, float, complex, str, bytes, bool, type(None))  # == runs no submission code
_TUPLES = (tuple, frozenset)


class Fixtures:
    """A plugin of the guard's: it records fixture definitions as pytest collects them, and
    judges, as a test function is about to be called, what the test was given."""

    __test__ = False  # not a test class, whatever collects it

    def __init__(self, calls):
        self.calls = calls  # testcalls.TestCalls: its judges of pytest's objects
        self.genuine = calls.genuine  # the module
        self.fixturedef = None  # pytest's FixtureDef class (snapshot)
        self.defined = {}  # id -> (definition, its function when first seen)
        self.made = {}  # id -> (definition, the cached_result its setup left)
        self.infos = {}  # id -> (fixture information, {name: its definitions})
        self.items = {}  # id -> (item, function, callspec, params, {name: param}, indices, info)
        self._seen = {}  # id -> (definition, ids of what it held, those objects, why)

    def snapshot(self):
        import _pytest.fixtures

        self.calls.guard.genuine.remember_class(Fixtures)  # its own hooks, as the guard's are
        self.fixturedef = _pytest.fixtures.FixtureDef

    # ------------------------------------------------------------------ recording

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_make_collect_report(self, collector):
        yield
        with contextlib.suppress(Exception):  # a collector pytest fails to read: no record
            self._sweep()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session):
        with contextlib.suppress(Exception):
            self._sweep()
        items = self.genuine.attributes(session).get("items")
        for item in list(items) if type(items) is list else []:
            with contextlib.suppress(Exception):
                self._record(item)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_fixture_setup(self, fixturedef):
        yield
        cached = self.genuine.attributes(fixturedef).get("cached_result")
        self.made[id(fixturedef)] = (fixturedef, cached)

    def _sweep(self):
        """Every definition in pytest's registry not recorded yet, with its function now."""
        manager = self._manager()
        for held in list(self.genuine.attributes(manager).values()):
            for inner in list(held.values()) if type(held) is dict else ():
                for defs in list(inner.values()) if type(inner) is dict else [inner]:
                    self._define(defs)

    def _define(self, defs):
        for fd in defs if type(defs) in (list, tuple) else ():
            if id(fd) not in self.defined and issubclass(type(fd), self.fixturedef):
                func = self.genuine.attributes(fd).get("func")
                self.defined[id(fd)] = (fd, func)
                self.calls.reads.remember(self.genuine.function_of(func))

    def _record(self, item):
        own = self.genuine.attributes(item)
        info = own.get("_fixtureinfo")
        if info is None:
            return  # not an item with fixtures (a doctest's, a non-Python item)
        if id(info) not in self.infos:
            found = self.calls._read(info, "name2fixturedefs")
            static = {k: tuple(v) for k, v in found.items()} if type(found) is dict else {}
            for defs in static.values():
                self._define(list(defs))  # parametrize's own definitions are made with items
            self.infos[id(info)] = (info, static)
        callspec = own.get("callspec")
        params = self.calls._read(callspec, "params") if callspec is not None else None
        pairs = dict(params) if type(params) is dict else {}
        indices = self.calls._read(callspec, "indices") if callspec is not None else None
        indices = dict(indices) if type(indices) is dict else {}
        func = self.genuine.function_of(own["_obj"]) if "_obj" in own else None
        self.calls.reads.remember(func)  # if pytest_pycollect_makeitem did not see it
        self.items[id(item)] = (item, func, callspec, params, pairs, indices, info)

    def readers(self, item):
        """The test function and its fixtures' functions, as collected for `item`."""
        record = self.items.get(id(item))
        if record is None or record[0] is not item:
            return []
        static = self.infos.get(id(record[6]), (None, {}))[1]
        funcs = [record[1]] + [self.defined.get(id(fd), (None, None))[1]
                               for defs in static.values() for fd in defs]  # fmt: skip
        return [f for f in map(self.genuine.function_of, funcs) if f is not None]

    def _manager(self):
        return self.genuine.attributes(self.calls.guard.session).get("_fixturemanager")

    # ------------------------------------------------------------------ judging

    def problem(self, item):
        """Why what `item`'s test function is about to be called with (or that function) is
        not what pytest collected for it, or None (testcalls.py words it)."""
        self.calls._now = {}
        record = self.items.get(id(item))
        if record is None or record[0] is not item:
            return "it is not a test pytest collected"
        _, func, callspec, params, pairs, indices, info = record
        own = self.genuine.attributes(item)
        now = self.genuine.function_of(own.get("_obj"))
        if func is not None and not self._reaches(now, func):
            return "its test function is not the one collected for it"
        why = self.calls.reads.changed(now)
        if why:
            return "its test function's %s changed after it was collected" % why
        now_params = self.calls._read(callspec, "params") if callspec is not None else None
        if own.get("callspec") is not callspec or now_params is not params:
            return "its parameters are not the ones collected for it"
        for name, value in pairs.items():
            if type(params) is not dict or params.get(name, _MISSING) is not value:
                return "its parameter %s is not the one collected for it" % name
        if own.get("_fixtureinfo") is not info or self.infos.get(id(info), (None,))[0] is not info:
            return "its fixture information is not the one collected for it"
        static = self.infos[id(info)][1]
        request = own.get("_request")
        why = self.calls._unless_same(request, self.calls._holds, request)
        if why:
            return "its fixture request %s" % why
        defs = self.genuine.attributes(request).get("_fixture_defs")
        args = own.get("funcargs")
        if type(defs) is not dict or type(args) is not dict:
            return "its fixtures could not be read"
        for name, value in list(args.items()):
            if name == "request":
                if value is not request:
                    return "its fixture request is not its own"
            elif name not in defs:
                return "its fixture %s was not set up by pytest" % name
        for name, fd in list(defs.items()):
            key = (pairs.get(name, _MISSING), indices.get(name))
            why = self._fixture(name, fd, static, key, args.get(name, _MISSING))
            if why:
                return why
        return None

    def _fixture(self, name, fd, static, key, value):
        what = "its fixture %s" % name
        if not self.calls._class_ok(type(fd)):
            return "%s is a %s, whose code is not genuine" % (what, type(fd).__name__)
        entry = self.defined.get(id(fd))
        own = self.genuine.attributes(fd)
        collected = static.get(name)
        if (
            entry is None
            or entry[0] is not fd
            or own.get("argname") != name
            or (collected is not None and not any(fd is d for d in collected))
        ):
            return "%s is not a definition collected for it" % what
        why = self._unless_same(fd, own, entry[1])
        if why:
            return "%s%s" % (what, why)
        why = self.calls.reads.changed(self.genuine.function_of(own.get("func")))
        if why:
            return "%s's function's %s changed after it was collected" % (what, why)
        made = self.made.get(id(fd))
        cached = own.get("cached_result")
        if made is None or made[0] is not fd or made[1] is not cached or type(cached) is not tuple:
            return "the value of %s was not made by its fixture's function" % what
        if value is not _MISSING and cached[0] is not value:
            return "the value of %s is not what its fixture's function made" % what
        if not _same_key(cached[1], *key):
            return "%s was set up for another parameter" % what
        return None

    def _reaches(self, func, target):
        """Whether `func` is `target` or holds it, through its wrappers' closures."""
        if func is None or target is None:
            return func is target
        return any(f is target for f in self.calls.reads.chain(func))

    def _unless_same(self, fd, own, collected):
        """Why a definition's code is not believed (what it holds, its function), or None:
        judged again only when something it holds (but its cached value) or its function's
        chain of wrappers changed (a function-scoped fixture's cache changes at every test)."""
        func = self.genuine.function_of(own.get("func"))
        held = [v for k, v in own.items() if k != "cached_result"]
        chain = self.calls.reads.chain(func) if func is not None else []
        held += chain + [x for f in chain for x in _reads(f, self.genuine.attributes)]
        ids = tuple(map(id, held)) + tuple(own)  # the objects are kept: no id is reused
        seen = self._seen.get(id(fd))
        if seen is None or seen[0] is not fd or seen[1] != ids:
            seen = self._seen[id(fd)] = (fd, ids, held, self._judge(fd, func, collected))
        return seen[3]

    def _judge(self, fd, func, collected):
        why = self.calls._holds(fd, ("func", "cached_result"))
        if why:
            return " " + why
        if func is None:
            return " is not Python code"
        why = self.genuine.unwrap(func, self.calls.guard._code_ok, self.calls.source)
        if why:
            return " " + why
        if not self._reaches(func, self.genuine.function_of(collected)):
            return "'s function is not the one collected for it"
        return None


def _same_key(key, param, index):
    """Whether a definition's cache key is the item's parameter (pytest before 4 keyed by its
    index, and before 8 a definition without parameters by 0; now by None)."""
    if param is _MISSING:
        return key is None or type(key) is int
    if key is param or (type(key) is int and type(index) is int and key == index):
        return True
    return type(key) is type(param) and _plain(key) and _plain(param) and key == param


def _plain(value, depth=0):
    """Whether comparing `value` runs only the interpreter's code (no class of the tests')."""
    if type(value) in _PLAIN:
        return True
    return type(value) in _TUPLES and depth < 4 and all(_plain(v, depth + 1) for v in value)


def _reads(func, attributes):
    """What genuine.unwrap reads of a function: its code, defaults, globals, closure, and
    the attributes it follows."""
    own = attributes(func)
    cells = []
    for cell in func.__closure__ or ():
        with contextlib.suppress(ValueError):
            cells.append(cell.cell_contents)
    return [func.__code__, func.__defaults__, func.__kwdefaults__, func.__globals__,
            own.get("__wrapped__"), own.get("hypothesis"), *cells]  # fmt: skip
