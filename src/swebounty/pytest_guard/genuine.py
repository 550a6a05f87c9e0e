"""Whether a callable's code really is what a trusted file holds (used by swebounty_guard.py).

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

Python 3.6+, standard library only; no code of the workspace runs while it checks.
"""

import sys
import types

# A module's own namespace, read through ModuleType's slot: a module class may define a
# `__dict__` property (py's apipkg does, and imports every lazy submodule in it: 0.08 s of
# seaborn's session end); reading it that way runs no code of the module's class.
_MODULE_DICT = types.ModuleType.__dict__["__dict__"]


def namespace(module):
    """The globals of a module's functions, without running code of its class; None for
    anything whose type is not a module type."""
    if not issubclass(type(module), types.ModuleType):
        return None
    return _MODULE_DICT.__get__(module, type(module))


def function_of(obj):
    """The Python function that runs when `obj` is called (or is the member), or None for
    code the guard cannot read (written in C, a functools.partial, ...)."""
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

    def _source(self, real):
        if real in self.pinned:
            return bytes.fromhex(self.pinned[real])
        with open(real, "rb") as f:
            return f.read()

    def _codes(self, real):
        found = self._files.get(real)
        if found is None:
            try:
                top = compile(self._source(real), real, "exec", dont_inherit=True)
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
            source = self._source(real)
            tree = ast.parse(source)
        except (OSError, SyntaxError, ValueError, TypeError):
            return None
        try:
            try:
                rewrite(tree, source, real, self.config)  # pytest 5 and later
            except TypeError:
                tree = ast.parse(source)
                rewrite(tree, real, self.config)  # pytest 3 and 4
            return compile(tree, real, "exec", dont_inherit=True)
        except Exception:
            return None


def _index(top):
    """(name, first line) -> every code object nested in `top`, itself included."""
    found = {}
    stack = [top] if top is not None else []
    while stack:
        code = stack.pop()
        found.setdefault((code.co_name, code.co_firstlineno), []).append(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found
