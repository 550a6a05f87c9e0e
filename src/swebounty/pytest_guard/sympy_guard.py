"""The harness's own hook in a run of sympy's own test runner (`bin/test`): each test's result,
as the runner's own code reported it.

sympy's runner is in the package it tests (sympy/utilities/runtests.py, which sympy/__init__.py
imports): code of the submission runs before it is imported. An import hook put first on
sys.meta_path before any code of the workspace runs loads it, and the runner's test helpers,
from the bytes the harness sent (sympy_modules.py); the guard then wraps its reporter's methods
on the class (`PyTestReporter.test_pass`, `test_fail`, ... `import_error`; `entering_filename`,
`entering_test`, `leaving_filename` say what runs). Those and `SymPyTests.test_file` must be
functions of the hook's own compile, with the module's namespace: a runner the workspace
replaced gets no hooks, and nothing of it counts.

What a report is worth depends on who made it (as in unittest_guard.py):
- bad news (a failure, an exception, a skip, an expected failure, an unexpected pass, a module
  that failed to import) is believed from anyone, for the test the runner is running;
- a pass counts only from the very frame of the hook's `test_file` that entered the test, its
  `f` still that test, run without a time limit (`self._timeout` is its caller's object's),
  the test genuinely its file's code: a function of a hidden test file (equal to compiling the
  harness's bytes, run in the namespace the runner executed that file in) or a wrapper proven
  to run one (genuine.unwrap: sympy's `slow`), the file's namespace as its code made it when
  its tests started (sympy_modules.py), the test's code, defaults and the globals it reads
  unchanged since (reads.py), no Python tracer on; any other pass is a problem;
- a test is named by its file and its function's own code name (`co_name`), never `__name__`
  or the name it is held under: a passing test put in place of a failing one passes as itself;
- a test reported twice keeps the worse report; passes of the runner's own wrappers (a
  generator test's `lambda: func(*args)`, which no SWE-bench id names) and of files that are
  not hidden test files are not recorded.
At the end it checks that the runner's modules are still the ones the hook loaded, with the
members they had, and sends everything, with the exit status, through the harness's channel.
Out of reach, as for the other guards (docs/integrity.md): code built against this guard, and a
trace function set and removed within one test (it could jump over lines or rewrite locals).

Python 3.6+, standard library only.
"""

import builtins
import os
import sys
import types

_MAX_PROBLEMS = 50
_MESSAGE_CHARS = 2000
_MAX_LINKS = 8
_RUNNER_CLASS, _RUNNER_METHOD, _REPORTER_CLASS = "SymPyTests", "test_file", "PyTestReporter"
# Worst first, as the harness grades (testing.SEVERITY).
_SEVERITY = {"failed": 4, "error": 3, "skipped": 1, "passed": 0}
_REPORTS = {
    "test_pass": "passed",
    "test_fail": "failed",
    "test_exception": "error",
    "test_skip": "skipped",
    "test_xfail": "skipped",
    "test_xpass": "skipped",  # the runner's XFAIL test passed: not the pass an id asks for
    "import_error": "error",
}
_STEPS = ("entering_filename", "entering_test", "leaving_filename")
# What the guard calls, as it was before any code of the workspace ran.
_getframe, _realpath, _join = sys._getframe, os.path.realpath, os.path.join
_gettrace, _getprofile = sys.gettrace, sys.getprofile
_compile, _exec, _str = builtins.compile, builtins.exec, builtins.str


class SympyGuard:
    """Loads sympy's runner, records its reports, checks and sends (module docstring)."""

    def __init__(self, channel, config, restored, genuine, machinery, reads, modules, faults):
        self.channel, self.restored = channel, restored
        # An error of the guard's own code is sent as such, never a silent loss (faults.py).
        spaces = [
            globals(),
            *(vars(m) for m in (genuine, genuine._forwarders, machinery, reads, modules)),
        ]
        self.faults = faults.Faults("sympy guard", spaces, _MESSAGE_CHARS)
        self.machinery, self._genuine_module = machinery, genuine
        self.workspace = os.path.join(_realpath(config["workspace"]), "")
        self.untrusted = {_realpath(p) for p in config.get("untrusted_files", [])}
        self.trusted_dirs = [os.path.join(_realpath(d), "") for d in
                             config.get("trusted_dirs", [])]  # fmt: skip
        pinned = dict((config.get("infra") or {}).get("files") or {})
        pinned.update(config.get("pinned_files") or {})
        self.genuine = genuine.Genuine({_realpath(_join(config["workspace"], r)): d
                                        for r, d in pinned.items()})  # fmt: skip
        self.hidden = {_realpath(_join(config["workspace"], p)) for p in config.get("tests", [])}
        self.module_name = config["runner_module"]
        self.runner_file = _join(config["workspace"], config["runner_file"])
        files = {self.module_name: config["runner_file"], **config.get("helper_modules", {})}
        sources = {n: (_join(config["workspace"], r), bytes.fromhex(pinned[r]))
                   for n, r in files.items()}  # fmt: skip
        self.reads = reads.Reads()
        self.modules = modules.Modules(sources, self.genuine, machinery, reads.chain, self._hook)
        self.namespace = self.test_file_code = None
        self.current = None  # (the runner's frame, the test it entered, its key)
        self.file = None  # (the runner's frame, the file's real path, its namespace, a problem)
        self.tests = {}  # key -> {"status", "message", "kind", "doc"}
        self.problems, self.notes = [], []
        self.own = {}

    # ------------------------------------------------------------------ set-up

    def install(self):
        """The import hook first on sys.meta_path; the builtins and the guard's classes as
        they are before any code of the workspace runs."""
        self.modules.install()
        self.reads.snapshot_builtins()
        own = (SympyGuard, type(self.modules), type(self.faults))
        for klass in own:
            self.genuine.remember_class(klass)
        self.own = {k: self.machinery.describe(k) for k in own}

    def _hook(self, name, module, codes):
        """Wrap the reporter's methods of the runner's module, once its body ran (an error of
        the guard's is recorded, not an ImportError of the runner's module)."""
        if name == self.module_name:
            self.faults.run(self._wrap_reporter, module, codes)

    def _wrap_reporter(self, module, codes):
        namespace = self._genuine_module.namespace(module)
        self.namespace = namespace
        runner, reporter = namespace.get(_RUNNER_CLASS), namespace.get(_REPORTER_CLASS)
        method = self._own_function(runner, _RUNNER_METHOD, codes)
        if method is None or self._own_function(reporter, "test_pass", codes) is None:
            self._problem("sympy's runner was changed as it was imported: %s.%s is not its code"
                          % (_RUNNER_CLASS, _RUNNER_METHOD))  # fmt: skip
            return
        self.test_file_code = method.__code__
        for name in (*_REPORTS, *_STEPS):
            original = self._own_function(reporter, name, codes)
            if original is not None:
                type.__setattr__(reporter, name, self._wrap(name, original))

    def _own_function(self, klass, name, codes):
        """`klass.name` if it is a function the runner's module made (None otherwise)."""
        if type(klass) is not type or dict.get(self.namespace, klass.__name__) is not klass:
            return None
        func = type.__dict__["__dict__"].__get__(klass, type).get(name)
        ok = type(func) is types.FunctionType and id(func.__code__) in codes
        return func if ok and func.__globals__ is self.namespace else None

    def _wrap(self, name, original):
        guard = self

        def report(*args, **kwargs):
            # The runner goes on past an error of the guard's (recorded), and lets the test's
            # own exceptions (a reported value's `__str__`, say) through, as before.
            guard.faults.run(guard.report, name, args, _getframe(1))
            return original(*args, **kwargs)

        return report

    def _problem(self, text):
        if text not in self.problems and len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(text)

    # ------------------------------------------------------------------ recording

    def report(self, name, args, caller):
        ours = caller.f_code is self.test_file_code and caller.f_globals is self.namespace
        local = _locals(caller) if ours else {}
        if name in _STEPS:  # only the runner's own steps say what runs
            if ours and name == "entering_filename":
                self._enter_file(caller, local)
            elif ours and name == "entering_test" and dict.get(local, "f") is args[-1]:
                self._enter_test(caller, args[-1], local)
            elif ours:
                self.current = None
            return
        status = _REPORTS[name]
        if name == "import_error":
            where = args[1] if len(args) > 1 else None
            key = self._file_key(where) if type(where) is _str else "<unknown file>"
            self._record(key, status, _describe(args[2] if len(args) > 2 else None), "import")
            return
        key, kind = self._subject(caller, ours, local)
        if status == "passed":
            why = self._doubtful_pass(caller, ours, local)
            if why:
                self._problem("a pass of %s was not believed: %s" % (key, why))
                return
            if why is not None:
                return
        elif self.current is not None:
            self.reads.end(self.current[2], self._codes_of)
        message = _message(name, args[1] if len(args) > 1 else None)
        self._record(key, status, message, kind)

    def _enter_file(self, caller, local):
        filename, gl = dict.get(local, "filename"), dict.get(local, "gl")
        if type(filename) is not _str or type(gl) is not dict:
            return
        real, why = _realpath(filename), None
        if real in self.hidden:
            why = self.modules.namespace_problem(
                gl, real, self.genuine.source(real), lambda f: self._is_genuine(f, real, gl),
                self._genuine_module.attributes,
            )  # fmt: skip
            self.reads.track(gl, real)
        self.file, self.current = (caller, real, gl, why), None

    def _enter_test(self, caller, test, local):
        key = self._key(dict.get(local, "filename"), test)
        self.current = (caller, test, key)
        self.reads.remember(test)
        self.reads.start(key, [test])

    def _subject(self, caller, ours, local):
        """(key, kind) of what a report is about: the test the runner is running; a test file
        whose module-level code raised (the runner's report before it entered any test)."""
        current = self.current
        if ours and (current is None or current[0] is not caller):
            return self._file_key(dict.get(local, "filename")), "import"
        if current is not None:
            return current[2], "test"
        if self.file is not None:
            return self._file_key(self.file[1]), "import"
        return "<no test>", "test"

    def _doubtful_pass(self, caller, ours, local):
        """Why a pass is not believed; "" for a pass not to record (the runner's own wrapper,
        a test of a file that is not a hidden test file); None for a pass."""
        if not ours:
            return "reported by %s, not by sympy's runner" % caller.f_code.co_filename
        current, file = self.current, self.file
        if current is None or current[0] is not caller or file is None or file[0] is not caller:
            return "the runner reported it without entering a test"
        test, key = current[1], current[2]
        if dict.get(local, "f") is not test:
            return "the runner's test function was changed while it ran"
        if dict.get(local, "timeout"):
            return "the runner ran it under a time limit the harness never asks for"
        if type(test) is not types.FunctionType:
            return "its test is not a Python function"
        real, gl = file[1], file[2]
        if _realpath(test.__code__.co_filename) == _realpath(self.runner_file):
            ok = self._is_genuine(test, real, gl)
            return "" if ok else "its test comes from a copy of the runner's code"
        if real not in self.hidden:
            return ""  # what the runner ran besides the hidden tests is not recorded
        if file[3]:
            return file[3]
        why = self._genuine_module.unwrap(test, lambda f: self._is_genuine(f, real, gl))
        if why:
            return "its test function %s" % why
        inner = _innermost(test, self._genuine_module.attributes)
        if _realpath(inner.__code__.co_filename) != real or key != self._key(real, inner):
            return "its test function is not the test of %s it was entered as" % key
        why = self.reads.changed(test)
        if why:
            return "its test function's %s changed after its file was run" % why
        why = self.reads.look(key, passed=True)
        self.reads.created(key)
        why = why or self.reads.end(key, self._codes_of)
        if why:
            return why
        return self._tracer()

    def _tracer(self):
        """Which Python trace or profile function of the workspace's is on, or None."""
        for what, tracer in (("trace", _gettrace()), ("profile", _getprofile())):
            func = self._genuine_module.function_of(tracer) if tracer is not None else None
            if func is not None and not self.genuine.is_known(func):
                return "a %s function from %s is on" % (what, func.__code__.co_filename)
        return None

    def _is_genuine(self, func, real, gl):
        """Whether `func` is the code of its trusted file: of the test file `real`, run with
        the namespace `gl` the runner executed it in; else of a module's file."""
        path = _realpath(func.__code__.co_filename)
        if path == real:
            index = self.genuine._codes(real)  # (name, first line) -> codes, compiled once
            code = func.__code__
            same = any(c == code for c in index.get((code.co_name, code.co_firstlineno), ()))
            return same and func.__globals__ is gl
        inside = path.startswith(self.workspace) and path not in self.untrusted
        if not inside and not any(path.startswith(d) for d in self.trusted_dirs):
            return False
        name = dict.get(func.__globals__, "__name__")
        module = sys.modules.get(name) if type(name) is _str else None
        self.genuine.set_modules([module] if module is not None else [])
        return self.genuine.check(func, path, _realpath)

    def _codes_of(self, path):
        return self.genuine.codes(path)

    def _key(self, filename, test):
        """`file::function` of a test: its innermost function's own code name."""
        inner = _innermost(test, self._genuine_module.attributes)
        name = inner.__code__.co_name if type(inner) is types.FunctionType else "<not Python>"
        return "%s::%s" % (self._file_key(filename), name)

    def _file_key(self, filename):
        if type(filename) is not _str:
            return "<unknown file>"
        real = _realpath(filename)
        return real[len(self.workspace) :] if real.startswith(self.workspace) else real

    def _record(self, key, status, message, kind):
        entry = self.tests.get(key)
        if entry is None or _SEVERITY[status] > _SEVERITY[entry["status"]]:
            kept = entry["message"] if entry else ""
            both = "; then ".join(m for m in (kept, message) if m)
            self.tests[key] = {"status": status, "message": both[:_MESSAGE_CHARS], "kind": kind,
                               "doc": None}  # fmt: skip

    # ------------------------------------------------------------------ the end

    def verify(self):
        for klass, before in self.own.items():
            if self.machinery.describe(klass) != before:
                self._problem("the harness's own recorder (%s) was changed" % klass.__name__)
        for problem in self.modules.check():
            self._problem(problem)
        tracer = self._tracer()
        if tracer:
            self._problem(tracer)

    def finish(self, exitstatus):
        if self.channel.sent:
            return
        self.faults.run(self.verify, cut=True)
        self.channel.send({
            "exitstatus": exitstatus,
            "tests": self.tests,
            "problems": self.problems,
            "errors": self.faults.errors,
            "infra_restored": self.restored,
            "notes": self.notes,
        })  # fmt: skip


def _innermost(func, attributes):
    """The function at the end of `func`'s `__wrapped__` links, read without running code."""
    for _ in range(_MAX_LINKS):
        inner = attributes(func).get("__wrapped__") if type(func) is types.FunctionType else None
        if type(inner) is not types.FunctionType:
            break
        func = inner
    return func


def _locals(frame):
    found = frame.f_locals  # a proxy of them from Python 3.13 on
    return found if type(found) is dict else dict(found)


def _message(name, value):
    said = "" if value is None or name == "test_pass" else _text(value)
    if name in ("test_fail", "test_exception"):
        return _describe(value)
    if name in ("test_xfail", "test_xpass"):
        return "expected to fail (XFAIL)" + (
            ", but passed: " + said if name == "test_xpass" else ""
        )
    return "skipped: %s" % said if said else ("skipped" if name == "test_skip" else "")


def _describe(err):
    if type(err) is not tuple or len(err) < 2:
        return ""
    return ("%s: %s" % (getattr(err[0], "__name__", "?"), _text(err[1])))[:_MESSAGE_CHARS]


def _text(value):
    try:
        return _str(value)[:_MESSAGE_CHARS]
    except Exception:
        return "<unprintable %s>" % type(value).__name__
