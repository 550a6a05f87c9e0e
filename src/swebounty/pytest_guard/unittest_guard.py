"""The harness's own hook in a unittest-based test run: each test's result, as unittest said it.

Loaded by run_unittest.py after unittest is imported and before any code of the workspace
runs (django's runtests.py, `python -m unittest`, any runner built on unittest's result object).
Every `TestCase.run` and `TestSuite.run` hands the runner's result object a recorder that
writes down each report and passes it on. What a report is worth depends on who made it:
- bad news (a failure, an error, an unexpected success, a skip) is believed from anyone:
  forging it can only cost the submission;
- a pass counts only when unittest's own code reported it (the caller's code object is one of
  unittest's, as they were before the workspace ran), through the recorder that TestCase.run
  made for that very test, and the test method is genuinely its file's code (genuine.py): a
  file of the workspace the submission did not change, or of the environment; or a
  decorator's wrapper (mock.patch's, Hypothesis's @given, a test helper's functools.wraps)
  proven to run such code (genuine.unwrap). The method is the one unittest finds (the test
  object's own attribute before its class's), judged as TestCase.run starts and again at the
  pass: a no-op that puts the genuine method back as it runs is still seen;
  any other pass is a problem;
- a test reported twice keeps the worse report (passed, then an error in tear-down: error).
At the end it checks unittest's machinery as the pytest guard checks pytest's (machinery.py)
and sends everything, with the runner's exit status, through the harness's channel.

Python 3.6+, standard library only.
"""

import contextlib
import os
import sys
import types

_MAX_PROBLEMS = 50
_MESSAGE_CHARS = 2000
# Worst first, as the harness grades (testing.SEVERITY).
_SEVERITY = {"failed": 4, "error": 3, "skipped": 1, "passed": 0}
_REPORTS = {
    "addSuccess": "passed",
    "addFailure": "failed",
    "addError": "error",
    "addSkip": "skipped",
    "addExpectedFailure": "skipped",
    "addUnexpectedSuccess": "failed",
    "addSubTest": None,  # the parent test: failed or error when the subtest's err is set
}


class UnittestGuard:
    """Records, checks and sends; `install` puts its recorders in front of unittest."""

    def __init__(
        self, channel, config, restored, genuine, machinery, faults, hypothesis_profile=None,
        reads=None,
    ):  # fmt: skip
        self.channel = channel
        # An error of the guard's own code is sent as such, never a silent loss (faults.py).
        mods = [
            m for m in (genuine, genuine._forwarders, machinery, hypothesis_profile, reads) if m
        ]
        self.faults = faults.Faults("unittest guard", [globals(), *map(vars, mods)], _MESSAGE_CHARS)
        self.reads = reads.Reads(genuine.held) if reads else None  # test methods' code and defaults
        self.loaded = {}  # id -> each suite whose methods were remembered (kept alive)
        # Hypothesis tests without deadlines, speed checks or randomness (hypothesis_profile.py)
        self.hypothesis = (
            hypothesis_profile.StableHypothesis(config["workspace"]) if hypothesis_profile else None
        )
        self.config = config
        self.restored = restored
        self.machinery = machinery
        self.workspace = os.path.join(os.path.realpath(config["workspace"]), "")
        self.untrusted = {os.path.realpath(p) for p in config.get("untrusted_files", [])}
        # The environment and the interpreter: read-only in the sandbox (mock.patch's wrapper)
        self.trusted_dirs = [os.path.join(os.path.realpath(d), "") for d in
                             config.get("trusted_dirs", [])]  # fmt: skip
        pinned = dict((config.get("infra") or {}).get("files") or {})
        pinned.update(config.get("pinned_files") or {})
        self.genuine = genuine.Genuine(
            {os.path.realpath(os.path.join(config["workspace"], r)): d for r, d in pinned.items()}
        )
        self._function_of = genuine.function_of
        self._genuine_module = genuine
        self.tests = {}  # id -> {"status", "message", "doc", "kind"}
        self.doubted = {}  # id(test) -> (test, why its method was doubted before it ran)
        self.problems = []
        self.notes = []
        self.modules = {}
        self.snapshots = {}
        self.own = {}
        self.unittest_codes = set()  # ids of unittest's code objects (kept alive in _codes)
        self._codes = []
        self.exitstatus = None

    # ------------------------------------------------------------------ set-up

    def install(self):
        """Wrap TestCase.run and TestSuite.run, then snapshot unittest as it is now."""
        import unittest.case
        import unittest.suite

        for module in [m for n, m in sorted(sys.modules.items()) if m and n.startswith("unittest")]:
            for value in list(vars(module).values()):
                for code in _codes_of(value):
                    self._codes.append(code)
                    self.unittest_codes.add(id(code))
        guard = self
        case_run = unittest.case.TestCase.run
        suite_run = unittest.suite.TestSuite.run

        def run(self, result=None, *args, **kwargs):
            real = result._swebounty_result if isinstance(result, Recorder) else result
            recorder = Recorder(guard, real, self) if real is not None else None
            if guard.hypothesis is not None:
                guard.faults.run(guard.hypothesis.before_case, self)
            guard.faults.run(guard.before_run, self)
            return case_run(self, recorder, *args, **kwargs)

        def suite(self, result, *args, **kwargs):
            if not isinstance(result, Recorder):
                result = Recorder(guard, result, None)
            guard.faults.run(guard.load, self)
            return suite_run(self, result, *args, **kwargs)

        run.__wrapped__, suite.__wrapped__ = case_run, suite_run
        unittest.case.TestCase.run = run
        unittest.suite.TestSuite.run = suite
        for name, module in list(sys.modules.items()):
            if module is not None and self.machinery.watched(name):
                self.modules[name] = module
                self.snapshots[name] = self.machinery.describe(module, self.genuine)
                path = getattr(module, "__file__", None)
                self.genuine.remember_module(module, os.path.realpath(path) if path else None)
        own = (UnittestGuard, Recorder, type(self.faults))
        for klass in own:
            self.genuine.remember_class(klass)
        self.own = {k: self.machinery.describe(k) for k in own}

    def _problem(self, text):
        if text not in self.problems and len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(text)

    # ------------------------------------------------------------------ recording

    def record(self, method, recorder, args, caller):
        test = args[0] if args else None
        status = _REPORTS[method]
        message = ""
        if method == "addSubTest":
            if len(args) < 3 or args[2] is None:
                return  # a subtest that passed says nothing about its test
            test = getattr(args[1], "test_case", test)
            failure = getattr(test, "failureException", AssertionError)
            status = "failed" if _is_a(args[2], failure) else "error"
            message = _describe_error(args[2])
        elif method in ("addFailure", "addError"):
            message = _describe_error(args[1] if len(args) > 1 else None)
        elif method == "addSkip":
            message = "skipped: %s" % _text(args[1] if len(args) > 1 else "")
        elif method == "addExpectedFailure":
            message = "expected failure"
        elif method == "addUnexpectedSuccess":
            message = "unexpected success"
        key, kind, doc = self._identify(test)
        if key is None:
            self._problem("a %s report for something that is not a test" % method)
            return
        if status == "passed":
            why = self._doubtful_pass(test, recorder, caller)
            if why:
                self._problem("a pass of %s was not believed: %s" % (key, why))
                return
        entry = self.tests.get(key)
        if entry is None or _SEVERITY[status] > _SEVERITY[entry["status"]]:
            kept = entry["message"] if entry else ""
            both = "; then ".join(m for m in (kept, message) if m)
            self.tests[key] = {"status": status, "message": both[:_MESSAGE_CHARS], "kind": kind,
                               "doc": doc}  # fmt: skip

    def _identify(self, test):
        """(id, kind, docstring's first line) of what a report is about, from its class, never
        from methods the test could override: `module.Class.method` for a test, the module
        for one that failed to import, the description of a class or module fixture."""
        klass = type(test)
        if klass.__module__ == "unittest.suite" and klass.__name__ == "_ErrorHolder":
            return _text(vars(test).get("description", "")), "fixture", None
        name = vars(test).get("_testMethodName") if hasattr(test, "__dict__") else None
        if not isinstance(name, str):
            return None, None, None
        if klass.__module__ == "unittest.loader" and klass.__name__ == "_FailedTest":
            return name, "import", None
        doc = None
        method = getattr(klass, name, None)
        text = getattr(method, "__doc__", None)
        if isinstance(text, str) and text.strip():
            doc = text.strip().split("\n")[0].strip()
        return "%s.%s.%s" % (klass.__module__, klass.__qualname__, name), "test", doc

    def _doubtful_pass(self, test, recorder, caller):
        if id(caller) not in self.unittest_codes:
            return "reported by %s, not by unittest" % caller.co_filename
        if recorder.test is not test:
            return "reported through another test's result"
        before = self.doubted.get(id(test))
        if before is not None and before[0] is test:
            return before[1]
        return self._method_problem(test)

    def load(self, suite):
        """Every test method of `suite` as it is before any of them runs (its code and
        default arguments: reads.py), unless an outer suite's run saw them."""
        stack = [suite]
        while stack and self.reads is not None:
            node = stack.pop()
            if id(node) in self.loaded:
                continue
            self.loaded[id(node)] = node
            tests = self._genuine_module.attributes(node).get("_tests")
            if type(tests) is list:
                stack.extend(tests)
            else:
                # A descriptor of the submission's, say, or a builtin raising on an odd test
                # object, which the innermost frame cannot tell from the guard's own error:
                # a method not remembered is only read unchecked, never a lost run.
                with contextlib.suppress(Exception):
                    self.reads.remember(self._method(node))

    def before_run(self, test):
        """The test method as TestCase.run is about to find it: one that is put back after
        it ran is judged as it was, not as it is when its pass comes."""
        try:
            why = self._method_problem(test)
        except Exception as exc:  # a descriptor of the submission's, say; or the guard's error
            kind = "the guard's error" if self.faults.caught(exc) else type(exc).__name__
            why = "its test method could not be read (%s)" % kind
        if why:
            self.doubted[id(test)] = (test, why)  # kept alive, so no id is reused

    def _method(self, test):
        name = self._genuine_module.attributes(test).get("_testMethodName")
        if not isinstance(name, str):
            return None
        # What unittest's getattr(test, name) finds: the test object's own attribute first.
        method = self._genuine_module.attributes(test).get(name)
        if method is None:
            method = getattr(type(test), name, None)
        return self._function_of(method)

    def _method_problem(self, test):
        method = self._method(test)
        if method is None:
            return "its test method is not Python code"
        path = os.path.realpath(method.__code__.co_filename)
        forwarder = self._genuine_module.forwards(method) or self._genuine_module.hands_on(method)
        if not self._trusted(path) and not forwarder:
            return "its test method comes from %s, not from the workspace's tests" % path
        why = self._genuine_module.unwrap(method, self._is_genuine, self._source)
        if why:
            return "its test method %s" % why
        why = self.reads.changed(method) if self.reads is not None else None
        return "its test method's %s changed after it was loaded" % why if why else None

    def _source(self, func):
        return self.genuine.source(os.path.realpath(func.__code__.co_filename))

    def _trusted(self, path):
        """A file of the workspace the submission did not change, or of the environment."""
        ours = path.startswith(self.workspace) and path not in self.untrusted
        return ours or any(path.startswith(d) for d in self.trusted_dirs)

    def _is_genuine(self, func):
        """Whether `func` is the code of its trusted file, run with that file's module's
        globals (genuine.check, given the one module it may be)."""
        path = os.path.realpath(func.__code__.co_filename)
        if not self._trusted(path):
            return False
        name = dict.get(func.__globals__, "__name__")
        module = sys.modules.get(name) if isinstance(name, str) else None
        self.genuine.set_modules([module] if module is not None else [])
        return self.genuine.check(func, path, os.path.realpath)

    # ------------------------------------------------------------------ the end

    def verify(self):
        self.genuine.set_modules(list(sys.modules.values()))
        for klass, before in self.own.items():
            if self.machinery.describe(klass) != before:
                self._problem("the harness's own recorder (%s) was changed" % klass.__name__)
        for name, module in self.modules.items():
            now = sys.modules.get(name)
            if now is not None and now is not module:
                self._problem("module %s was replaced in sys.modules" % name)
                continue
            before, after = self.snapshots[name], self.machinery.describe(module)
            changed = [k for k in before if after.get(k) != before[k]]
            changed += [k for k in after if k not in before]
            if changed:
                shown = ", ".join(name + "." + k for k in sorted(changed)[:5])
                self._problem("unittest's machinery was changed: " + shown)
        for what, tracer in (("trace", sys.gettrace()), ("profile", sys.getprofile())):
            func = self._function_of(tracer) if tracer is not None else None
            if func is not None and not self.genuine.is_known(func):
                self._problem("a %s function from %s is on" % (what, func.__code__.co_filename))

    def finish(self, exitstatus):
        if self.channel.sent:
            return
        self.exitstatus = exitstatus
        self.faults.run(self.verify, cut=True)
        self.channel.send({
            "exitstatus": exitstatus,
            "tests": self.tests,
            "problems": self.problems,
            "errors": self.faults.errors,
            "infra_restored": self.restored,
            "notes": self.notes,
        })  # fmt: skip


class Recorder:
    """Stands in front of the runner's result object: records a report, then passes it on.
    Everything else (attributes unittest reads and sets) is the result object's own."""

    def __init__(self, guard, result, test):
        object.__setattr__(self, "_swebounty_result", result)
        object.__setattr__(self, "_swebounty_guard", guard)
        object.__setattr__(self, "test", test)

    def __getattr__(self, name):
        real = getattr(object.__getattribute__(self, "_swebounty_result"), name)
        if name not in _REPORTS or not callable(real):
            return real
        guard = object.__getattribute__(self, "_swebounty_guard")
        recorder = self

        def report(*args):
            # unittest goes on past an error of the guard's (recorded); a test's own
            # exception (a descriptor of its class, say) goes through, as before.
            guard.faults.run(guard.record, name, recorder, args, sys._getframe(1).f_code)
            return real(*args)

        return report

    def __setattr__(self, name, value):
        setattr(object.__getattribute__(self, "_swebounty_result"), name, value)

    def __delattr__(self, name):
        delattr(object.__getattribute__(self, "_swebounty_result"), name)


def _codes_of(value):
    """Every code object of a module's functions and classes' methods, nested ones too."""
    found, stack = [], []
    items = list(vars(value).values()) if isinstance(value, type) else [value]
    for item in items:
        if isinstance(item, property):
            item = item.fget
        func = getattr(item, "__func__", item)
        if isinstance(func, types.FunctionType):
            stack.append(func.__code__)
    while stack:
        code = stack.pop()
        found.append(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found


def _is_a(err, klass):
    try:
        return isinstance(err, tuple) and isinstance(err[0], type) and issubclass(err[0], klass)
    except TypeError:
        return False


def _describe_error(err):
    if not isinstance(err, tuple) or len(err) < 2:
        return ""
    name = getattr(err[0], "__name__", "?")
    return ("%s: %s" % (name, _text(err[1])))[:_MESSAGE_CHARS]


def _text(value):
    try:
        return str(value)[:_MESSAGE_CHARS]
    except Exception:
        return "<unprintable %s>" % type(value).__name__
