"""sympy's runner and its test helpers, loaded from the harness's bytes for the sympy guard
(sympy_guard.py), and what a test module's namespace must hold.

sympy's runner (sympy/utilities/runtests.py) and its test helpers (sympy/utilities/pytest.py:
raises, XFAIL, slow, SKIP) are modules of the package under test: sympy/__init__.py imports the
runner, the test modules import the helpers, both after code of the submission ran. An import
hook put first on sys.meta_path before any code of the workspace runs loads each of them from
the bytes the harness sent (the base's files: every function is this file's own compile), lets
the guard hook the runner's reporter, and snapshots each module's functions and classes
(machinery.py) the moment its body has run. At the end a change to them is a problem, as is a
module of those names the hook did not load (taken from elsewhere, put in sys.modules).

A test module's namespace is checked as the runner starts its tests (its `entering_filename`):
code of the submission runs while the file executes (its module-level calls into sympy), and
could rebind a helper the tests call. A name the file binds last with a `def` at its top level
must hold that function (or a wrapper holding it); one it binds last with `from HELPERS import
x` must hold what that helper module held when it was loaded. Names a `global` statement or a
nested block (if, try, for, with) binds are the file's own business, and are not checked.

Python 3.6+, standard library only.
"""

import ast
import os
import sys
import types

_compile, _exec, _realpath = compile, exec, os.path.realpath
_MISSING = object()
_MODULE_DICT = types.ModuleType.__dict__["__dict__"]


class Modules:
    """The import hook (importlib's finder and loader protocols) and its modules' snapshots."""

    def __init__(self, sources, genuine, machinery, chain, on_load):
        """`sources`: module name -> (its file, the harness's bytes of it); `chain(f)`: f and
        the functions its closures hold (reads.chain); `on_load(name, module, codes)` runs
        after a module's body with the ids of its code objects, before the snapshot."""
        self.sources, self.genuine, self.machinery = sources, genuine, machinery
        self._chain, self._on_load = chain, on_load
        self.loaded = {}  # name -> module
        self.snapshots, self.values = {}, {}  # name -> describe(); name -> a copy of its dict
        self.problems = []
        self._files = {}  # real path -> (defs, imports) of a test file

    def install(self):
        sys.meta_path.insert(0, self)

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.sources:
            return None
        import importlib.util

        spec = importlib.util.spec_from_loader(fullname, self, origin=self.sources[fullname][0])
        spec.has_location = True  # __file__, as the file's own loader sets it
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        namespace = _MODULE_DICT.__get__(module, type(module))  # no code of its class runs
        name = dict.get(namespace, "__name__")
        if name in self.loaded:
            self.problems.append("%s was imported a second time" % name)
            raise ImportError("swebounty: %s is loaded once per run" % name)
        path, source = self.sources[name]
        top = _compile(source, path, "exec", dont_inherit=True)
        self.loaded[name] = module
        _exec(top, namespace)
        self._on_load(name, module, {id(c) for c in _codes_in(top)})
        self.snapshots[name] = self.machinery.describe(module, self.genuine)
        self.values[name] = dict.copy(namespace)
        self.genuine.remember_module(module, _realpath(path))

    def check(self):
        """The problems found at the end: a module changed, replaced, or not the hook's."""
        found = list(self.problems)
        for name in sorted(self.sources):
            now, module = sys.modules.get(name), self.loaded.get(name)
            if module is None:
                if now is not None:
                    found.append("%s was not the one the harness loads" % name)
            elif now is not None and now is not module:
                found.append("module %s was replaced in sys.modules" % name)
            else:
                before, after = self.snapshots.get(name, {}), self.machinery.describe(module)
                changed = [k for k in before if after.get(k) != before[k]]
                changed += [k for k in after if k not in before]
                if changed:
                    shown = ", ".join(name + "." + k for k in sorted(changed)[:5])
                    found.append("sympy's runner was changed: " + shown)
        return found

    # ------------------------------------------------------------------ test modules

    def namespace_problem(self, namespace, real, source, is_genuine, attributes):
        """Why a test module's namespace cannot be believed (module docstring), or None.
        `is_genuine(f)`: f is code of the test file run in `namespace`, or of a trusted file;
        `attributes(f)`: f's own attributes, read without running code (genuine.py's)."""
        defs, imports = self._names(real, source)
        for name, codes in defs.items():
            value = dict.get(namespace, name, _MISSING)
            if value is _MISSING:
                continue
            held = self._chain(value) if type(value) is types.FunctionType else []
            for _ in range(8 if held else 0):  # and what a wrapper says it wraps (SKIP's)
                inner = attributes(held[-1]).get("__wrapped__")
                if type(inner) is not types.FunctionType:
                    break
                held.append(inner)
            ok = any(f.__code__ == c for f in held for c in codes)
            if not ok or not is_genuine(value):
                return "its module's %s is not its file's function (or a trusted wrapper)" % name
        for name, (module, attr) in imports.items():
            expected = dict.get(self.values.get(module, {}), attr, _MISSING)
            if expected is not _MISSING and dict.get(namespace, name, _MISSING) is not expected:
                return "its module's %s is not %s's" % (name, module)
        return None

    def _names(self, real, source):
        """({name: its top-level defs' code}, {name: (helper module, attribute)}) of the names
        the file binds last with a def or an import from a helper module (once per file)."""
        found = self._files.get(real)
        if found is not None:
            return found
        try:
            tree = ast.parse(source)
            top = _compile(source, real, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, TypeError):
            self._files[real] = ({}, {})
            return self._files[real]
        last, skipped = {}, set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                skipped.update(node.names)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                last[node.name] = "def" if isinstance(node, ast.FunctionDef) else None
            elif (
                isinstance(node, ast.ImportFrom) and not node.level and node.module in self.sources
            ):
                for alias in node.names:
                    last[alias.asname or alias.name] = (node.module, alias.name)
            else:
                for name in _bound(node):
                    last[name] = None
        defs = {}
        for code in top.co_consts:
            if isinstance(code, types.CodeType) and last.get(code.co_name) == "def":
                defs.setdefault(code.co_name, []).append(code)
        imports = {n: v for n, v in last.items() if isinstance(v, tuple) and n not in skipped}
        found = self._files[real] = ({n: c for n, c in defs.items() if n not in skipped}, imports)
        return found


def _bound(node):
    """Every name a top-level statement other than a def or a helper import may bind (all
    of a block's: its branches are the file's own business)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in sub.names)
    return names


def _codes_in(top):
    found, stack = [], [top]  # every code object a module's code holds
    while stack:
        code = stack.pop()
        found.append(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found
