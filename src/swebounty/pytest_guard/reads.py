"""What a genuine test reads besides its arguments (testcalls.py's, fixtures.py's and
unittest_guard.py's check).

genuine.py proves a function's code is its file's; a call also reads what the function holds
and what it names, and code of the submission (imported by the tests) can change those in
memory so that a failing test passes with its code untouched: the test function's, a
fixture's or a helper's default arguments (`__defaults__`, `__kwdefaults__`, in place too),
its code (another genuine function's of the same file), a global of the test module or of a
conftest.py it names (a constant, a helper rebound, a builtin shadowed), a builtin.

Functions: the code and default arguments of each test function and of the functions its
wrappers hold are recorded as pytest makes its item (unittest: as the first suite starts to
run), a fixture's function's as its definition is recorded, and a test module's or
conftest.py's functions as that module is first seen; a pass is not believed when any of
those it runs (or calls by a global name) changed since.

Globals: a test module's namespace is copied as pytest makes its first item, a conftest.py's
as it is registered, the builtins before the first conftest.py. The names a test reads are the names
its code and its fixtures' code (nested code too) hold, and those of the module's helpers they
name, transitively; each must hold the value it had, unless:
- code of a test module or conftest.py may store that name itself: a `global` statement, an
  attribute of that name set or deleted (setup_module's `module.X = ...`), or the name in a
  string (monkeypatch.setattr(module, "X", ...), mock.patch("tests.test_x.X")); or
- the change was made and undone within the test (not there as it started, gone after its
  teardown): a fixture's monkeypatch, mock.patch, freezegun, pyfakefs; or
- (the sympy guard's runs only: `created`) neither the module nor the builtins held the name
  when first seen: a call of the test's own made it (sympy's var() and vring()).
What this cannot prove: a container changed in place (its identity stays), a class's
attributes, the globals of other modules (the package's own, test helpers' modules), what
ran between the checks (a change made and put back by the submission during one test), nor
a module- or session-scoped fixture that changes a global by a name no test code spells (a
false problem, never a false pass).

Python 3.6+, standard library only; no code of the workspace runs while it checks.
"""

import builtins
import contextlib
import opcode
import types

_MISSING = object()
_OPNAME = tuple(opcode.opname)
_EXTENDED_ARG = opcode.opmap["EXTENDED_ARG"]
_STORES = frozenset(("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_ATTR", "DELETE_ATTR"))
_QUIET = frozenset(("CACHE", "EXTENDED_ARG", "NOP"))
_MAX_FUNCTIONS = 64  # functions whose names one test reads (helpers, transitively)
_MAX_LINKS = 16


def state(func):
    """What of a function decides what a call of it does, besides its globals and closure."""
    kw = func.__kwdefaults__
    return func.__code__, func.__defaults__, kw, dict.copy(kw) if type(kw) is dict else None


def change(func, before):
    """What of `func` changed since `state(func)` gave `before` ("code was", "default
    arguments were"), or None."""
    code, defaults, kw, items = before
    if func.__code__ is not code:
        return "code was"
    now = func.__kwdefaults__
    if func.__defaults__ is not defaults or now is not kw:
        return "default arguments were"
    if items is None:
        return None
    if len(now) != len(items) or any(dict.get(now, k, _MISSING) is not v for k, v in items.items()):
        return "default arguments were"
    return None


def chain(func, held=None):
    """`func` and the functions its closures hold, and theirs (at most _MAX_LINKS). `held(f)`:
    the functions a link holds, if not only its closure's (genuine.held: a generated
    forwarder's caller and the function it hands on, which its globals hold)."""
    todo, seen = [func] if type(func) is types.FunctionType else [], []
    while todo and len(seen) < _MAX_LINKS:
        f = todo.pop()
        if any(f is s for s in seen):
            continue
        seen.append(f)
        if held is not None:
            todo.extend(h for h in held(f) if type(h) is types.FunctionType)
            continue
        for cell in f.__closure__ or ():
            with contextlib.suppress(ValueError):  # an empty cell
                if type(cell.cell_contents) is types.FunctionType:
                    todo.append(cell.cell_contents)
    return seen


class Reads:
    """The functions and namespaces as first seen, and each running test's reads."""

    def __init__(self, held=None):
        self.held = held  # what a link holds (chain)
        self.functions = {}  # id -> (function, its state when first seen)
        self.spaces = {}  # id -> (namespace, a copy when first seen, its file)
        self.builtins = ({}, {})  # the builtins and their copy (snapshot_builtins)
        self.tests = {}  # test id -> [pairs, changed when it started, changed while it ran]
        self._names = {}  # id(code) -> (code, the names it and its nested code hold)
        self._excused = (-1, frozenset())

    def chain(self, func):
        """`func` and the functions its wrappers hold (fixtures.py follows them the same way)."""
        return chain(func, self.held)

    # ------------------------------------------------------------------ recording

    def snapshot_builtins(self):
        """The builtins as the environment and the startup files left them (before any
        conftest.py or test module runs)."""
        self.builtins = (vars(builtins), dict.copy(vars(builtins)))

    def remember(self, func):
        """`func` and the functions its wrappers hold, as they are now (once each)."""
        for f in self.chain(func):
            if id(f) not in self.functions:  # kept alive: no id is reused
                self.functions[id(f)] = (f, state(f))

    def changed(self, func):
        """What of `func` or a function its wrappers hold changed since remembered, or None."""
        for f in self.chain(func):
            seen = self.functions.get(id(f))
            if seen is not None and seen[0] is f:
                why = change(f, seen[1])
                if why:
                    return why
        return None

    def track(self, namespace, path):
        """A test module's or conftest.py's namespace (and its own functions), once."""
        if type(namespace) is not dict or id(namespace) in self.spaces:
            return
        copy = dict.copy(namespace)
        self.spaces[id(namespace)] = (namespace, copy, path)
        for value in copy.values():
            if type(value) is types.FunctionType and value.__globals__ is namespace:
                self.remember(value)

    # ------------------------------------------------------------------ one test

    def start(self, test, readers):
        """As `test` starts: the names its `readers` (its function, its fixtures' functions)
        read, and which of them are changed already."""
        pairs, helpers = self._reads([g for f in readers for g in self.chain(f)])
        self.tests[test] = [pairs, helpers, set(self._changes(pairs)), {}, False]

    def look(self, test, passed=False):
        """As the test's call starts, and as it passes: why it is not believed now (a helper
        it calls changed), or None; the globals changed by now are judged as it ends."""
        record = self.tests.get(test)
        if record is None:
            return None
        pairs, helpers, _, seen, _ = record
        seen.update(self._changes(pairs))
        record[4] = record[4] or passed
        for func in helpers:
            why = self.changed(func)
            if why:
                entry = self.spaces[id(func.__globals__)]
                return "it calls %s of %s, whose %s changed after it was imported" % (
                    func.__name__, entry[2], why)  # fmt: skip
        return None

    def created(self, test):
        """Forget, for `test`, the globals it reads that neither their module nor the builtins
        held when first seen: without them it could only raise NameError, so a call of its
        own made them (sympy's var() and vring() bind symbols in their caller's module). Used
        by the sympy guard only, before `end`."""
        record = self.tests.get(test)
        for key, (entry, name) in list(record[3].items()) if record is not None else ():
            if entry is not None and name not in entry[1] and name not in self.builtins[1]:
                del record[3][key]

    def end(self, test, codes_of):
        """As the test's teardown ends: why what it read while it ran is not believed, or
        None. `codes_of(path)`: every code object of that file."""
        record = self.tests.pop(test, None)
        if record is None or not record[3] or not record[4]:
            return None  # nothing changed while it ran, or its call did not pass
        pairs, _, before, seen, _ = record
        after = set(self._changes(pairs))
        for key, (entry, name) in sorted(seen.items(), key=lambda kv: kv[0][1]):
            if (key in before or key in after) and name not in self._stored(codes_of):
                if entry is None:
                    return "it reads the builtin %s, changed after the session started" % name
                return "it reads %s of %s, changed after it was imported" % (name, entry[2])
        return None

    def unfinished(self, codes_of):
        """(test, why) for the tests that never ended (the session stopped)."""
        return [(t, self.end(t, codes_of)) for t in list(self.tests)]

    # ------------------------------------------------------------------ reading

    def _reads(self, readers):
        """((namespace entry, name) pairs, helper functions) the readers reach."""
        pairs, helpers, seen = {}, [], []
        todo = [f for f in readers if type(f) is types.FunctionType]
        while todo and len(seen) < _MAX_FUNCTIONS:
            func = todo.pop(0)
            if any(func is s for s in seen):
                continue
            seen.append(func)
            entry = self.spaces.get(id(func.__globals__))
            if entry is None or entry[0] is not func.__globals__:
                continue
            for name in self._names_of(func.__code__):
                pairs.setdefault((id(entry[0]), name), (entry, name))
                value = dict.get(entry[1], name)
                if type(value) is types.FunctionType and id(value.__globals__) in self.spaces:
                    helpers.append(value)
                    todo.append(value)
        return pairs, helpers

    def _changes(self, pairs):
        """{key: (entry or None for builtins, name)} of the pairs whose value changed."""
        found = {}
        space, before = self.builtins
        for key, (entry, name) in pairs.items():
            now = dict.get(entry[0], name, _MISSING)
            if now is not dict.get(entry[1], name, _MISSING):
                found[key] = (entry, name)
            elif now is _MISSING and name in before and dict.get(space, name) is not before[name]:
                found[(None, name)] = (None, name)  # a builtin replaced or deleted
        return found

    def _names_of(self, code):
        seen = self._names.get(id(code))
        if seen is None or seen[0] is not code:
            names, stack = set(), [code]
            while stack:
                c = stack.pop()
                names.update(c.co_names)
                stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
            seen = self._names[id(code)] = (code, frozenset(names))
        return seen[1]

    def _stored(self, codes_of):
        """The names code of a tracked file may store in a module: see the docstring."""
        if self._excused[0] != len(self.spaces):
            names = set()
            for _, _, path in list(self.spaces.values()):
                for code in codes_of(path) if path else ():
                    names.update(_stored_by(code))
            self._excused = (len(self.spaces), frozenset(names))
        return self._excused[1]


def _stored_by(code):
    """The global and attribute names `code` stores or deletes, and its strings' names (but
    an import's list of names: `from pkg import f` does not store f later)."""
    found, fromlists, last = set(), set(), None
    ops, extended = code.co_code, 0
    for i in range(0, len(ops) - 1, 2):
        op, arg = ops[i], ops[i + 1] | extended
        extended = arg << 8 if op == _EXTENDED_ARG else 0
        name = _OPNAME[op] if not extended else "EXTENDED_ARG"
        if name in _STORES and arg < len(code.co_names):
            found.add(code.co_names[arg])
        elif name == "IMPORT_NAME" and last is not None:
            fromlists.add(last)
        if name not in _QUIET:
            last = arg if name == "LOAD_CONST" else None
    stack = [c for i, c in enumerate(code.co_consts) if i not in fromlists]
    while stack:
        const = stack.pop()
        if type(const) is str:
            found.add(const)
            found.add(const.rpartition(".")[2])
        elif type(const) in (tuple, frozenset):
            stack.extend(const)
    return found
