"""A sympy-style project the sympy framework's tests build: `minisym`, with its own `bin/test`
and a small runner of its own (`minisym/utilities/runtests.py`) that keeps sympy's reporting
API and nothing else.

What the harness relies on from sympy's runner, and this one has: `bin/test` takes `-C`
(`--no-cache`), `--verbose`, `--no-subprocess` and test files, puts the repository first on
sys.path through `bin/get_minisym.py`, imports the package (whose `__init__` imports the runner
module, as sympy's does) and exits 0 when the run passed; `SymPyTests.test_file` executes a
test file into a fresh namespace, runs its `test_*` functions in line order and reports each
through `PyTestReporter` (`entering_filename`, `entering_test`, `test_pass`, `test_fail`,
`test_exception`, `test_skip`, `test_xfail`, `test_xpass`, `import_error`,
`leaving_filename`); `minisym/utilities/pytest.py` has `raises`, `XFAIL`, `SKIP` and `slow`.
"""

from __future__ import annotations

import json
from pathlib import Path

from repo_helpers import WHEN, diff_of, git, git_repo

BIN_TEST = """\
    #!/usr/bin/env python
    \"\"\"Run minisym's tests: bin/test [-C] [--verbose] [--no-subprocess] [FILES].\"\"\"
    import os
    import sys
    from optparse import OptionParser

    from get_minisym import path_hack

    path_hack()

    parser = OptionParser()
    parser.add_option("-v", "--verbose", action="store_true", dest="verbose", default=False)
    parser.add_option("-C", "--no-cache", dest="cache", action="store_false", default=True)
    parser.add_option("--no-subprocess", action="store_false", dest="subprocess", default=True)
    options, args = parser.parse_args()
    if not options.cache:
        os.environ["MINISYM_USE_CACHE"] = "no"

    import minisym

    ok = minisym.test(*args, verbose=options.verbose, subprocess=options.subprocess)
    sys.exit(0 if ok else 1)
"""

GET_MINISYM = """\
    import os
    import sys


    def path_hack():
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.normpath(os.path.join(here, "..")))
"""

RUNTESTS = """\
    \"\"\"minisym's test runner: sympy's reporting API, written small.\"\"\"
    import inspect
    import os
    import sys


    class Skipped(Exception):
        pass


    def root_dir():
        here = os.path.dirname(os.path.abspath(__file__))
        return os.path.normpath(os.path.join(here, "..", ".."))


    def test(*paths, **kwargs):
        if kwargs.get("subprocess", True):
            raise SystemExit("this small runner has no subprocess mode: --no-subprocess")
        reporter = PyTestReporter(verbose=kwargs.get("verbose", False))
        tests = SymPyTests(reporter)
        tests._testfiles.extend(os.path.join(root_dir(), p) for p in paths)
        return tests.test(timeout=kwargs.get("timeout", False))


    class SymPyTests(object):
        def __init__(self, reporter):
            self._reporter = reporter
            self._testfiles = []

        def test(self, timeout=False):
            self._reporter.start()
            for filename in sorted(self._testfiles):
                self.test_file(filename, timeout=timeout)
            return self._reporter.finish()

        def test_file(self, filename, timeout=False):
            reporter = self._reporter
            gl = {"__file__": filename}
            try:
                with open(filename) as f:  # `f` is bound before any test, as in sympy's
                    source = f.read()
                exec(compile(source, filename, "exec"), gl)
            except ImportError:
                reporter.import_error(filename, sys.exc_info())
                return
            except Exception:
                reporter.test_exception(sys.exc_info())
            funcs = [gl[name] for name in sorted(gl)
                     if name.startswith("test_") and inspect.isfunction(gl[name])]
            funcs.sort(key=lambda func: inspect.getsourcelines(func)[1])
            reporter.entering_filename(filename, len(funcs))
            for f in funcs:
                reporter.entering_test(f)
                try:
                    if timeout:
                        self._timeout(f, timeout)
                    else:
                        f()
                except Exception:
                    kind, value, tb = sys.exc_info()
                    if kind is AssertionError:
                        reporter.test_fail((kind, value, tb))
                    elif kind.__name__ == "Skipped":
                        reporter.test_skip(value)
                    elif kind.__name__ == "XFail":
                        reporter.test_xfail()
                    elif kind.__name__ == "XPass":
                        reporter.test_xpass(value)
                    else:
                        reporter.test_exception((kind, value, tb))
                else:
                    reporter.test_pass()
            reporter.leaving_filename()

        def _timeout(self, function, seconds):
            function()


    class PyTestReporter(object):
        def __init__(self, verbose=False):
            self._verbose = verbose
            self._passed = self._skipped = self._xfailed = 0
            self._failed, self._exceptions, self._xpassed = [], [], []
            self._active_file = self._active_f = None

        def write(self, text):
            sys.stdout.write(text)
            sys.stdout.flush()

        def start(self):
            self.write("===== test process starts =====\\n")

        def finish(self):
            self.write("\\n===== tests finished: %d passed, %d failed, %d exceptions =====\\n"
                       % (self._passed, len(self._failed), len(self._exceptions)))
            return not self._failed and not self._exceptions

        def entering_filename(self, filename, n):
            self._active_file = filename
            self.write("%s[%d] " % (os.path.relpath(filename, root_dir()), n))

        def leaving_filename(self):
            self.write("\\n")

        def entering_test(self, f):
            self._active_f = f
            if self._verbose:
                self.write("\\n" + f.__name__ + " ")

        def test_pass(self, char="."):
            self._passed += 1
            self.write("ok" if self._verbose else char)

        def test_fail(self, exc_info):
            self._failed.append((self._active_file, self._active_f, exc_info))
            self.write("F")

        def test_exception(self, exc_info):
            self._exceptions.append((self._active_file, self._active_f, exc_info))
            self.write("E")

        def test_skip(self, v=None):
            self._skipped += 1
            self.write("s")

        def test_xfail(self):
            self._xfailed += 1
            self.write("f")

        def test_xpass(self, v):
            self._xpassed.append((self._active_file, str(v)))
            self.write("X")

        def import_error(self, filename, exc_info):
            self._exceptions.append((filename, None, exc_info))
            self.write("%s[?]   Failed to import\\n" % os.path.relpath(filename, root_dir()))
"""

TEST_HELPERS = """\
    import functools


    class XFail(Exception):
        pass


    class XPass(Exception):
        pass


    class Skipped(Exception):
        pass


    def raises(expected, code):
        try:
            code()
        except expected:
            return
        raise AssertionError("DID NOT RAISE")


    def XFAIL(func):
        def wrapper():
            try:
                func()
            except Exception:
                raise XFail(func.__name__)
            raise XPass(func.__name__)

        return functools.update_wrapper(wrapper, func)


    def SKIP(reason):
        def decorate(func):
            def skipping():
                raise Skipped(reason)

            return functools.update_wrapper(skipping, func)

        return decorate


    def slow(func):
        def func_wrapper():
            func()

        func_wrapper = functools.update_wrapper(func_wrapper, func)
        func_wrapper._slow = True
        return func_wrapper
"""

CALC = """\
    def double(x):
        return x + 2


    def name():
        return "minisym"
"""

FIX = """\
    def double(x):
        return x * 2


    def name():
        return "minisym"
"""

PROJECT = {
    "setup.py": "from setuptools import setup, find_packages\n\n"
    "setup(name='minisym', version='0.1', packages=find_packages())\n",
    "bin/test": BIN_TEST,
    "bin/get_minisym.py": GET_MINISYM,
    "minisym/__init__.py": "from .calc import double, name\nfrom .utilities.runtests import test\n",
    "minisym/calc.py": CALC,
    "minisym/utilities/__init__.py": "",
    "minisym/utilities/runtests.py": RUNTESTS,
    "minisym/utilities/pytest.py": TEST_HELPERS,
    "minisym/tests/__init__.py": "",
    "minisym/tests/test_calc.py": "from minisym import name\n\n\ndef test_name():\n"
    "    assert name() == 'minisym'\n",
}

HIDDEN_TESTS = """\
    from minisym import double, name
    from minisym.utilities.pytest import XFAIL, SKIP, raises


    def test_name():
        assert name() == "minisym"


    def test_double():
        assert double(3) == 6


    def test_crash():
        raises(ValueError, lambda: double(None))


    @XFAIL
    def test_known_bug():
        assert double(1) == 3


    @SKIP("needs a printer")
    def test_printer():
        assert False
"""

F2P = ["test_double"]
P2P = ["test_name"]


def sympy_project(root: Path) -> dict[str, object]:
    """The project as `root/repos/small__minisym`, its tasks file and gold patch."""
    repo = git_repo(root / "repos" / "small__minisym", PROJECT, when=WHEN)
    base = git(repo, "rev-parse", "HEAD").strip()
    gold = diff_of(repo, {"minisym/calc.py": FIX})
    test_patch = diff_of(repo, {"minisym/tests/test_calc.py": HIDDEN_TESTS})
    record = {
        "repo": "small/minisym", "base_commit": base, "problem_statement": "double adds",
        "patch": gold, "test_patch": test_patch, "created_at": "2024-03-01T12:00:00Z",
        "FAIL_TO_PASS": json.dumps(F2P), "PASS_TO_PASS": json.dumps(P2P),
        "instance_id": "small__minisym-1",
    }  # fmt: skip
    dataset = root / "tasks.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    return {"repo": repo, "dataset": dataset, "gold": gold, "repos": root / "repos",
            "cache": root / "cache", "runs": root / "runs"}  # fmt: skip
