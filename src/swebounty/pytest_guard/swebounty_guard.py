"""The harness's own pytest plugin: it watches the reporting machinery and sends the results.

Loaded by run_pytest.py before any code of the workspace is imported. It records:
- a snapshot of pytest's, pluggy's and unittest's code (every module object, function, class
  and class attribute), taken before the workspace's code could run;
- its own record of every test report, made before any other plugin sees the report.
At the end of the session it checks that the machinery is the one it started with, that no
hook implementation, trace function or import hook comes from a file the submission changed
(and that code claiming a trusted file really is that file's: genuine.py), reads the JUnit
XML pytest has just written (not whatever the file holds later), and sends all of it
through the harness's channel, authenticated with the key only this process holds.
Whatever it finds wrong is a "problem": the harness flags the attempt and never resolves it.

Python 3.6+ and any pytest from 4.6 on; standard library only.
"""

import contextlib
import importlib.util
import os
import sys

import pytest


def _load_sibling(name):
    """A module of this directory (never on sys.path, where the workspace could shadow it)."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "swebounty_" + name, os.path.join(here, name + ".py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


genuine = _load_sibling("genuine")
machinery = _load_sibling("machinery")
reportclass = _load_sibling("reportclass")
junitfile = _load_sibling("junitfile")
timelimit = _load_sibling("timelimit")
hypothesis_profile = _load_sibling("hypothesis_profile")
testcalls = _load_sibling("testcalls")
fixtures = _load_sibling("fixtures")

_MAX_PROBLEMS = 50
_watched, _describe, _member = machinery.watched, machinery.describe, machinery.member


class Guard:
    """The plugin object (pytest.main(plugins=[guard]))."""

    def __init__(self, channel, config, restored):
        self.channel = channel
        self.workspace = os.path.realpath(config["workspace"])
        self.untrusted = {os.path.realpath(p) for p in config.get("untrusted_files", [])}
        self.trusted_dirs = [
            os.path.join(os.path.realpath(d), "")
            for d in [os.path.dirname(__file__), *list(config.get("trusted_dirs", []))]
        ]
        self.trust_entry_points = config.get("trust_entry_points", True)
        self.self_hosted = bool(config.get("self_hosted"))
        self.own_dirs = [os.path.join(os.path.realpath(d), "") for d in config.get("own_dirs", [])]
        self.junit = config["junit"]
        self.restored = restored
        self.limit = timelimit.TimeLimit(config.get("test_limit_s"))  # a plugin of its own
        # Another: Hypothesis tests run without deadlines, speed checks or randomness.
        self.hypothesis = hypothesis_profile.StableHypothesis(config["workspace"])
        self.conftests = _load_sibling("conftests").Conftests(config["workspace"])  # a third
        self.calls = testcalls.TestCalls(self, genuine, fixtures, _load_sibling("reads"))
        workspace = config["workspace"]
        infra = (config.get("infra") or {}).get("files") or {}
        self.genuine = genuine.Genuine(
            {os.path.realpath(os.path.join(workspace, rel)): data for rel, data in infra.items()}
        )
        # As written, too: a directory swapped for a link later moves what _real resolves to.
        self.untrusted_names = {os.path.abspath(p) for p in config.get("untrusted_files", [])}
        self.rewrite_hook = None  # pytest's assertion rewriting import hook (its class)
        self.entry_points = None  # the plugins entry points loaded, before any conftest.py
        self._classes = {}  # id -> (class, whether its code is genuine), during one check
        self.notes = []  # facts for the log, not problems
        self.problems = []
        self.records = {}
        self.collect_errors = {}
        self.modules = {}
        self.snapshots = {}
        self.report_types = self.test_reports = ()  # pytest's own classes (the snapshot's)
        self.plugin_reports = reportclass.PluginReports(genuine, machinery)  # of plugins' own
        self.config = self.session = None
        self.exitstatus = self.xml = self.xml_problem = None
        self._reals = None  # path -> realpath, during one check (see _real)

    # ------------------------------------------------------------------ snapshot

    def snapshot(self):
        self._reals = {}
        try:
            self._snapshot()
        finally:
            self._reals = None

    def _snapshot(self):
        import importlib

        import _pytest.config

        try:
            from _pytest.reports import CollectReport, TestReport
        except ImportError:  # pytest before 3.7
            from _pytest.runner import CollectReport, TestReport

        # pytest imports its default plugins in main(): import them now, so they are in the
        # snapshot taken before the workspace's code runs.
        for name in getattr(_pytest.config, "default_plugins", ()):
            with contextlib.suppress(Exception):
                importlib.import_module("_pytest." + name)

        for name, module in list(sys.modules.items()):
            if module is not None and _watched(name):
                self.modules[name] = module
                self.snapshots[name] = _describe(module, self.genuine)
                path = getattr(module, "__file__", None)
                if path and not self._machinery_origin(path):
                    self._problem("module %s was imported from %s" % (name, path))
                self.genuine.remember_module(module, self._real(path) if path else None)
        # these plugins' own hooks
        own = (timelimit.TimeLimit, hypothesis_profile.StableHypothesis, type(self.conftests))
        for klass in (Guard, *own):
            self.genuine.remember_class(klass)
        self.calls.snapshot()  # remembers its class too
        # The import machinery as it is before the workspace's code runs: its finders and
        # loaders (frozen, no file of their own) are the interpreter's.
        for module in (
            sys.modules.get("_frozen_importlib"),
            sys.modules.get("_frozen_importlib_external"),
        ):
            for value in list(vars(module).values()) if module is not None else ():
                if isinstance(value, type):
                    self.genuine.remember_class(value)
        for finder in sys.meta_path:
            for klass in type(finder).__mro__:
                self.genuine.remember_class(klass)
        with contextlib.suppress(Exception):
            from _pytest.assertion.rewrite import AssertionRewritingHook

            self.rewrite_hook = AssertionRewritingHook
            for klass in AssertionRewritingHook.__mro__:  # importlib.abc's classes among them
                self.genuine.remember_class(klass)
        self.report_types = (TestReport, CollectReport)
        self.test_reports = reportclass.pytest_s_own(TestReport)

    def _problem(self, text):
        if text and text not in self.problems and len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(text)

    # ------------------------------------------------------------------ hooks

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        self.config = config
        self.genuine.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self, early_config):
        # Entry points are loaded by now, and no conftest.py yet: later code cannot pass its
        # plugin off as one by adding it to the list.
        with contextlib.suppress(Exception):
            self.entry_points = [p for p, _ in early_config.pluginmanager.list_plugin_distinfo()]
        self.plugin_reports.find(self)  # the report classes of the plugins loaded by now

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session):
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        if type(report) not in self.test_reports:
            self._problem(self.plugin_reports.problem(type(report)))
        self._check_tracers()
        record = self.records.setdefault(report.nodeid, {})
        if record.get(report.when) != "failed":  # a failed subtest fails its test, as in JUnit
            record[report.when] = report.outcome
        if self.limit.charged(report):  # over the time limit: failed, whatever it says now
            record[report.when] = "failed"
        if hasattr(report, "wasxfail"):
            record["xfail"] = True
        self._problem(self.calls.problem(report))  # a passing call ran the test's own code?

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors[report.nodeid] = "error"

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self.exitstatus = int(exitstatus)
        self.verify()
        yield
        # junitxml wrote its file inside this hook: read it now, not after later code ran.
        self.xml, self.xml_problem = junitfile.read(self.junit)
        self.verify()
        self.send()

    # ------------------------------------------------------------------ checks

    def verify(self):
        self._reals = {}
        try:
            self._verify()
        finally:
            self._reals = None

    def _real(self, path):
        """os.path.realpath, computed once per path during one snapshot or verify (which run
        no code of the workspace): hundreds of hook implementations share a few files."""
        if self._reals is None:
            return os.path.realpath(path)
        real = self._reals.get(path)
        if real is None:
            real = self._reals[path] = os.path.realpath(path)
        return real

    def _verify(self):
        plugins = []
        with contextlib.suppress(Exception):
            plugins = list(self.config.pluginmanager.get_plugins())
        self.genuine.set_modules(list(sys.modules.values()) + plugins)
        self._classes = {}
        for name, module in self.modules.items():
            now = sys.modules.get(name)
            if now is not None and now is not module:
                # pytest never replaces its own modules (pytester puts the same ones back).
                self._problem("module %s was replaced in sys.modules" % name)
                continue
            before, after = self.snapshots[name], _describe(module)
            changed = [k for k in before if after.get(k) != before[k]]
            changed += [k for k in after if k not in before]  # a class member can shadow
            # pytest patches itself (legacypath): a change is only suspect when the new code
            # is not genuinely from the environment or the base's files.
            bad = sorted(k for k in changed if not self._member_ok(module, k))
            if bad:
                shown = ", ".join(name + "." + k for k in bad[:5])
                self._problem("pytest's reporting machinery was changed: " + shown)
        for name, module in list(sys.modules.items()):
            new = name not in self.modules and module is not None and _watched(name)
            if new and not self._trusted(getattr(module, "__file__", None)):
                self._problem("module %s comes from code the submission controls" % name)
        self._check_hooks()
        self._check_tracers()
        self._check_import_hooks()
        self.calls.unfinished()  # passes whose teardown never ended

    def _machinery_origin(self, path):
        """pytest's own code comes from the environment, unless the project is pytest (or
        pluggy): then from its workspace, or from what its install put in the layer."""
        if self.self_hosted:
            return self._trusted(path)
        real = self._real(path)
        return any(real.startswith(d) for d in self.trusted_dirs)

    def _member_ok(self, module, key):
        value = _member(module, key)
        if isinstance(value, property):
            return all(f is None or self._code_ok(f) for f in (value.fget, value.fset, value.fdel))
        if isinstance(value, type) and key not in self.snapshots[module.__name__]:
            return True  # a new class: its members are new keys, judged one by one
        return value is not None and self._code_ok(value)

    def _code_ok(self, obj):
        """Whether calling `obj` runs code genuinely from the environment or a base file."""
        func = genuine.function_of(obj)
        if func is None:
            return False
        if self.genuine.is_known(func):
            return True
        path = func.__code__.co_filename
        if os.path.abspath(path) in self.untrusted_names or not self._trusted(path):
            return False
        return self.genuine.check(func, self._real(path), self._real)

    def _class_ok(self, klass):
        """Whether every method of `klass` (and its bases) is genuine: an import hook's."""
        seen = self._classes.get(id(klass))
        if seen is None:
            methods = [f for k in klass.__mro__ for f in list(vars(k).values())]
            ok = all(self._code_ok(f) for f in methods if genuine.has_code(f))
            seen = self._classes[id(klass)] = (klass, ok)
        return seen[1]

    def _trusted(self, path):
        """Code from the environment (read-only) or from a base file of the workspace; for a
        project that is pytest, also what its install put in the layer."""
        if not path:
            return False
        real = self._real(path)
        if any(real.startswith(d) for d in self.trusted_dirs):
            return True
        own = self.self_hosted and any(real.startswith(d) for d in self.own_dirs)
        if own and real not in self.untrusted:
            return True
        return real.startswith(os.path.join(self.workspace, "")) and real not in self.untrusted

    def _check_hooks(self):
        if self.config is None:
            return
        manager = self.config.pluginmanager
        entry_points = set()
        if self.trust_entry_points:
            try:
                found = self.entry_points
                if found is None:
                    found = [plugin for plugin, _ in manager.list_plugin_distinfo()]
                entry_points = {id(plugin) for plugin in found}
            except Exception:
                entry_points = set()
        for name, caller in list(vars(manager.hook).items()):
            try:
                impls = caller.get_hookimpls()
            except AttributeError:
                # pluggy before 0.8 (pytest 3.x) keeps them in two lists of its own
                impls = getattr(caller, "_nonwrappers", []) + getattr(caller, "_wrappers", [])
            for impl in impls:
                if id(impl.plugin) in entry_points and not self._own_plugin(impl.plugin):
                    continue
                if not self._code_ok(impl.function):
                    func = genuine.function_of(impl.function)
                    where = self._real(func.__code__.co_filename) if func else repr(impl.function)
                    self._problem(
                        "hook %s is implemented by %s, which the submission changed" % (name, where)
                    )

    def _own_plugin(self, plugin):
        """Whether an entry point's plugin is the project's own, installed editable: code the
        submission can change, checked like any other (anyio's pytest_plugin, say)."""
        space = genuine.namespace(plugin)  # a module, mostly; else its class's module
        if space is None:
            space = genuine.namespace(sys.modules.get(type(plugin).__module__)) or {}
        path = space.get("__file__")
        return isinstance(path, str) and self._real(path).startswith(self.workspace + os.sep)

    def _check_tracers(self):
        for what, tracer in (("trace", sys.gettrace()), ("profile", sys.getprofile())):
            # A tracer written in C (coverage's) has no code file: only Python ones are judged.
            func = genuine.function_of(tracer) if tracer is not None else None
            if func is not None and not self._code_ok(func):
                self._problem("a %s function from a file the submission changed" % what)

    def _check_import_hooks(self):
        rewrite = [i for i, f in enumerate(sys.meta_path) if type(f) is self.rewrite_hook]
        first = rewrite[0] if rewrite else len(sys.meta_path)
        for finder in sys.meta_path[:first]:
            if not self._class_ok(type(finder)):
                path = getattr(sys.modules.get(type(finder).__module__), "__file__", None)
                self._problem("an import hook from %s comes before pytest's" % path)
        if self.session is None:
            return
        for item in getattr(self.session, "items", []):
            module = getattr(item, "module", None)
            loader = getattr(getattr(module, "__spec__", None), "loader", None)
            if loader is not None and not self._class_ok(type(loader)):
                self._problem(
                    "test module %s was loaded by code the submission changed"
                    % getattr(module, "__name__", "?")
                )

    # ------------------------------------------------------------------ results

    def statuses(self):
        """nodeid -> passed/failed/error/skipped, by the rules the harness reads XML with."""
        out = dict(self.collect_errors)
        for nodeid, rec in self.records.items():
            if rec.get("call") == "failed":
                status = "failed"
            elif "failed" in (rec.get("setup"), rec.get("teardown")):
                status = "error"
            elif "skipped" in (rec.get("setup"), rec.get("call")):
                status = "skipped"
            else:
                status = "passed"
            out[nodeid] = status
        return out

    def send(self):
        self.channel.send({
            "exitstatus": self.exitstatus,
            "xml": self.xml.hex() if self.xml is not None else None,
            "xml_problem": self.xml_problem,
            "unloaded_conftest": self.conftests.failed,
            "statuses": self.statuses(),
            "problems": self.problems,
            "infra_restored": self.restored,
            "notes": self.notes,
        })  # fmt: skip

    def finish(self):
        """After pytest.main: a session that never reached its end sends what it has."""
        if not self.channel.sent:
            self.verify()
            self.xml, self.xml_problem = None, "the session ended before writing its results"
            self.send()
