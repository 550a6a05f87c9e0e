"""Whether a callable's code really is what a trusted file holds (swebounty_guard.py's and
unittest_guard.py's check).

A code object names the file it came from (co_filename), but whoever compiles it chooses that
name: compile(source, "<site-packages>/_pytest/runner.py", "exec") or
code.replace(co_filename=...) make the submission's code look like pytest's. So the guard
believes a function's file only when the function is genuine:
- it is a function the guard saw in pytest's, pluggy's or unittest's modules (or its own)
  before any code of the workspace ran, still with the code and defaults it had then; or
- its code is equal to what compiling that file gives (code objects compare everything but
  their file name: bytecode, constants, names, line numbers), found by name and first line,
  and its globals are those of the module the snapshot saw for that file (else of a module
  in sys.modules or among pytest's plugins whose __file__ is that file).
A file is compiled at most once per run, and only for code the first rule did not settle:
conftest hooks, plugins and patches imported after the snapshot. Infrastructure files
(conftest.py, ...) are compiled from the contents the harness sent, never from the disk the
sandbox can write. Modules pytest rewrote for assertions are compared with pytest's rewrite.

A test method is often a decorator's wrapper (mock.patch's, Hypothesis's @given, a project's
functools.wraps): unwrap() accepts one only when every link from it to the test is proven:
- a wrapper is genuine code of a trusted file (the environment, a base file) that holds the
  function it wraps in its closure: `__wrapped__` is believed only when it is a cell's
  contents, never for its name; Hypothesis's `.hypothesis.inner_test` only on the forwarder
  its closure holds, an earlier link of the chain (before 2019: the closure's `test`); a
  `__wrapped__` a later functools.wraps set (matplotlib's image_comparison, around
  contextlib's decorator) leads through the one held function whose names lead to it, and the
  proven chain must then reach the function it named;
- or it is a forwarder (forwarders.py), code no file holds that is proven by reading it to
  pass its arguments on: to the one function its closure holds (Hypothesis's signature-copying
  wrapper), which takes its test's file and line as its own, a claim that must be the file
  and line of genuine code further in the chain; or, with the function it holds, to a genuine
  caller proven to call it (SQLAlchemy's util.decorator: `return target(fn, self)`).
A test function may also be functools.partial(contextvars.Context.run, test) (pypa/build's
conftest.py runs each test in a copy of the context so): that C code calls the test with
exactly the arguments it is given, and function_of reads through it (forwarders.py).
What this cannot prove: what a genuine wrapper does with the rest of what it holds (mock.patch's
target and replacement, Hypothesis's strategies and settings, a project decorator's
arguments): a submission that rebuilds the decorator around the genuine test with arguments
of its own is not seen. Nor that the test is the one its class body put under that name
(another genuine test's code passes as well), nor what a link's closure held while the test
ran: the chain is read before and after, not during.

Python 3.6+, standard library only; no code of the workspace runs while it checks.
"""

import importlib.util
import os
import sys
import types

# A module's own namespace, read through ModuleType's slot: a module class may define a
# `__dict__` property (py's apipkg does, and imports every lazy submodule in it: 0.08 s of
# seaborn's session end); reading it that way runs no code of the module's class.
_MODULE_DICT = types.ModuleType.__dict__["__dict__"]


def _sibling(name):
    """A module of this directory, loaded as the runners load this one (never from sys.path,
    where the workspace could shadow it)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location("swebounty_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_forwarders = _sibling("forwarders")
forwards, hands_on, held = _forwarders.forwards, _forwarders.hands_on, _forwarders.held


def namespace(module):
    """The globals of a module's functions, without running code of its class; None for
    anything whose type is not a module type."""
    if not issubclass(type(module), types.ModuleType):
        return None
    return _MODULE_DICT.__get__(module, type(module))


def function_of(obj):
    """The Python function that runs when `obj` is called (or is the member), or None for
    code the guard cannot read (written in C, a functools.partial, ...)."""
    through = _forwarders.run_in_context(obj)
    obj = obj if through is None else through
    obj = getattr(obj, "__func__", obj)  # bound methods, staticmethod, classmethod
    if isinstance(obj, types.FunctionType):
        return obj
    for klass in type(obj).__mro__:
        call = vars(klass).get("__call__")
        if call is not None:
            return call if isinstance(call, types.FunctionType) else None
    return None


def has_code(value):
    """Whether `value` is a member that runs code of its own when called (not a class)."""
    return not isinstance(value, type) and function_of(value) is not None


class Genuine:
    """The functions known before the workspace's code ran, and the code of trusted files."""

    def __init__(self, pinned=None):
        self.known = {}  # id -> (function, code, defaults, kwdefaults): kept, so no id is reused
        self.homes = {}  # real path of a module known at the snapshot -> that module's globals
        self.modules = {}  # id(globals) -> module, for the check under way (set_modules)
        self.pinned = dict(pinned or {})  # real path -> hex of the bytes the harness sent
        self.config = None  # pytest's, for its assertion rewriting
        self._files = {}  # real path -> {(name, first line): [code]}
        self._rewritten = {}
        self._sources = {}  # real path -> the bytes compiled (None: unreadable)

    def remember_module(self, module, real):
        if real:
            self.homes.setdefault(real, namespace(module))

    def set_modules(self, modules):
        """The modules code may run from now: sys.modules and pytest's plugin modules (a
        conftest.py leaves sys.modules when pytest imports the next one of the same name)."""
        found = ((namespace(m), m) for m in modules)
        self.modules = {id(ns): m for ns, m in found if ns is not None}

    def remember(self, func):
        if isinstance(func, types.FunctionType):
            self.known[id(func)] = (func, func.__code__, func.__defaults__, func.__kwdefaults__)

    def remember_class(self, klass):
        for member in list(vars(klass).values()):
            if isinstance(member, property):
                for f in (member.fget, member.fset, member.fdel):
                    self.remember(f)
            else:
                self.remember(getattr(member, "__func__", member))

    def is_known(self, func):
        seen = self.known.get(id(func))
        return (
            seen is not None
            and seen[0] is func
            and seen[1] is func.__code__
            and seen[2] is func.__defaults__
            and seen[3] is func.__kwdefaults__
        )

    def check(self, func, real, realpath):
        """True when `func` (a Python function) is known, or is the code of the file at
        `real` (its co_filename, resolved) run with that file's module's globals."""
        if self.is_known(func):
            return True
        if not self._module_of(func, real, realpath):
            return False
        code = func.__code__
        key = (code.co_name, code.co_firstlineno)
        if any(c == code for c in self._codes(real).get(key, ())):
            return True
        return any(c == code for c in self._rewritten_codes(real).get(key, ()))

    def _module_of(self, func, real, realpath):
        """Whether the globals `func` runs with are those of the module that comes from
        `real`: the one known at the snapshot, if there was one (not a copy made later)."""
        globals_ = func.__globals__
        home = self.homes.get(real)
        if home is not None:
            return globals_ is home
        module = self.modules.get(id(globals_))
        if module is None or namespace(module) is not globals_:
            return False
        path = getattr(module, "__file__", None)
        return bool(path) and realpath(path) == real

    def codes(self, real):
        """Every code object of the file at `real`, nested ones too (compiled once)."""
        return [c for found in self._codes(real).values() for c in found]

    def source(self, real):
        """The bytes the file at `real` is compiled from (read once a run), or None."""
        if real not in self._sources:
            try:
                if real in self.pinned:
                    self._sources[real] = bytes.fromhex(self.pinned[real])
                else:
                    with open(real, "rb") as f:
                        self._sources[real] = f.read()
            except (OSError, ValueError):
                self._sources[real] = None
        return self._sources[real]

    def _codes(self, real):
        found = self._files.get(real)
        if found is None:
            try:
                top = compile(self.source(real), real, "exec", dont_inherit=True)
            except (OSError, SyntaxError, ValueError, TypeError):
                top = None
            found = self._files[real] = _index(top)
        return found

    def _rewritten_codes(self, real):
        """The file's code as pytest's assertion rewriting makes it (conftest.py files,
        plugins, test modules), or nothing when pytest has no rewriter we know how to call."""
        found = self._rewritten.get(real)
        if found is None:
            found = self._rewritten[real] = _index(self._rewrite(real))
        return found

    def _rewrite(self, real):
        rewrite = getattr(sys.modules.get("_pytest.assertion.rewrite"), "rewrite_asserts", None)
        if rewrite is None:
            return None
        import ast

        try:
            source = self.source(real)
            tree = ast.parse(source)
        except (OSError, SyntaxError, ValueError, TypeError):
            return None
        args = _rewrite_args(rewrite, tree, source, real, self.config)
        if args is None:
            return None
        try:
            rewrite(*args)
            return compile(tree, real, "exec", dont_inherit=True)
        except Exception:
            return None


def _rewrite_args(rewrite, tree, source, real, config):
    """pytest's arguments for its rewriter, by its parameters: (mod, source, path, config) from
    5.0, (mod, path, config) in 3-4, (mod, path) on its master of mid-2019 (pytest-5495)."""
    code = rewrite.__code__ if isinstance(rewrite, types.FunctionType) else None
    names = code.co_varnames[: code.co_argcount] if code else ()
    if names[1:2] == ("source",):
        return (tree, source, real, config)
    if names[1:2] == ("module_path",):
        return (tree, _ModulePath(real), config)[: len(names)]
    return None


class _ModulePath(str):
    """The module path pytest 3 and 4 give their rewriter: a py.path.local, whose `strpath`
    4.1-4.6 write into the rewritten code (a warning's file name). The path's own text, with
    no code of the `py` package run (the workspace's sys.modules could hold any `py`)."""

    @property
    def strpath(self):
        return str(self)


def _index(top):
    """(name, first line) -> every code object nested in `top`, itself included."""
    found = {}
    stack = [top] if top is not None else []
    while stack:
        code = stack.pop()
        found.setdefault((code.co_name, code.co_firstlineno), []).append(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found


# ---------------------------------------------------------------------- decorators' wrappers

_MAX_LINKS = 8
_INSTANCE_DICT = type(types.FunctionType.__dict__["__dict__"])  # a slot only C code makes
# A class's own namespace and bases, whatever its metaclass says they are.
_TYPE_DICT, _MRO = type.__dict__["__dict__"], type.__dict__["__mro__"]


def unwrap(func, is_genuine, source_of=None):
    """Why `func` (a test method's function) is not proven to run its test's own code (a
    clause: "is not the code of FILE"), or None.
    `is_genuine(f)`: whether f is genuine code of a trusted file (Genuine.check, for the
    caller's files). A function that is genuine and wraps nothing is the test itself.
    `source_of(f)`: the bytes of genuine f's file as Genuine compiled them (Genuine.source),
    which prove a caller's forwarder's caller; without it, such a forwarder is not believed."""
    chain, forwarders, promised = [func], [], []
    while True:
        if len(chain) > _MAX_LINKS:
            return "has more than %d wrappers" % _MAX_LINKS
        if is_genuine(func):
            inner, why = _wrapped(func, chain, bool(forwarders), promised)
            if why:
                return why
        elif forwards(func):
            forwarders.append(len(chain) - 1)
            inner = func.__closure__[0].cell_contents
        else:
            caller, inner = hands_on(func) or (None, None)
            if caller is None:
                return "is not the code of %s" % _where(func)
            why = _forwarders.caller_problem(caller, is_genuine, source_of)
            if why:
                return "has a wrapper from %s that hands it to %s" % (_where(func), why)
        if inner is None:
            break
        if not isinstance(inner, types.FunctionType):
            return "has a wrapper from %s around something that is not Python code" % _where(func)
        if _among(inner, chain):
            return "has wrappers that wrap one another"
        chain.append(inner)
        func = inner
    for wrapper, named in promised:
        if not _among(named, chain):
            return "has a wrapper from %s whose __wrapped__ is not what it runs" % _where(wrapper)
    for at in forwarders:
        code = chain[at].__code__
        claim = (code.co_filename, code.co_firstlineno)
        further = [f.__code__ for i, f in enumerate(chain) if i > at and i not in forwarders]
        if not any((c.co_filename, c.co_firstlineno) == claim for c in further):
            return (
                "has a wrapper that claims line %d of %s, whose code it does not run" % claim[::-1]
            )
    return None


def _wrapped(func, chain, forwarded, promised):
    """(what genuine `func` wraps, or None; why that cannot be believed, or None).
    A wrapper whose __wrapped__ was set by a later functools.wraps (matplotlib's
    image_comparison puts one around contextlib's decorator, which holds the inner wrapper)
    is followed through the one function it holds whose own __wrapped__ names lead there;
    (func, named) goes to `promised`: the proven chain must reach `named`."""
    held = _closure_functions(func)
    inner = attributes(func).get("__wrapped__")
    if inner is None:
        # Hypothesis's @given (2019 on): its wrapper reads the test from the function it
        # returned, the signature-copying forwarder its closure holds (a handle on the
        # wrapper itself is never read: it is not believed).
        for owner in held:
            handle = attributes(owner).get("hypothesis")
            found = attributes(handle).get("inner_test") if handle is not None else None
            if found is not None:
                if not _among(owner, chain):
                    return None, "has a Hypothesis handle its wrapper does not read"
                return found, None
        # Hypothesis of 2017-2018: the test is in its wrapper's closure, as `test`.
        if forwarded and "test" in func.__code__.co_freevars:
            cell = func.__closure__[func.__code__.co_freevars.index("test")]
            return _contents(cell), None
        return None, None
    if _among(inner, held):
        return inner, None
    via = [h for h in held if not _among(h, chain) and _names_on_the_way(h, inner)]
    if len(via) != 1:
        return None, "has a wrapper from %s that does not hold the __wrapped__ it names" % _where(
            func
        )
    promised.append((func, inner))
    return via[0], None


def _names_on_the_way(func, target):
    """Whether following `func`'s __wrapped__ names reaches `target` (names only: which
    function to follow; every link is proven on its own as the chain goes on)."""
    for _ in range(_MAX_LINKS):
        func = attributes(func).get("__wrapped__")
        if func is None:
            return False
        if func is target:
            return True
    return False


def _closure_functions(func):
    cells = [_contents(c) for c in func.__closure__ or ()]
    return [c for c in cells if isinstance(c, types.FunctionType)]


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def attributes(obj):
    """An object's own attributes, read without running code of its class: through the
    `__dict__` slot Python gives instances (never a property or __getattr__), or nothing."""
    for klass in _MRO.__get__(type(obj), type):
        slot = _TYPE_DICT.__get__(klass, type).get("__dict__")
        if slot is None:
            continue
        try:
            found = slot.__get__(obj, type(obj)) if type(slot) is _INSTANCE_DICT else None
        except TypeError:  # another C type's slot, put there by hand
            found = None
        return found if type(found) is dict else {}
    return {}


def _among(func, functions):
    return any(func is f for f in functions)


def _where(func):
    return func.__code__.co_filename
