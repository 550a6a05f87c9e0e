"""A django-style project the django framework's tests build: its own `tests/runtests.py` and
settings module (`tests/test_sqlite.py`), and a tiny stand-in for django's test runner.

The stand-in keeps what the harness relies on from the real one, and nothing else: the runner
script parses django's options (--settings, --parallel, --verbosity, --noinput, labels),
defaults DJANGO_SETTINGS_MODULE to `test_sqlite`, takes the runner class from the settings'
TEST_RUNNER, and `DiscoverRunner` loads the labels with unittest's loader, runs them with
unittest's TextTestRunner and returns the number of failures and errors, which runtests.py
turns into its exit status. A real django is installed in the `network` test that uses one.
"""

from __future__ import annotations

import json
from pathlib import Path

from repo_helpers import WHEN, diff_of, git, git_repo

RUNTESTS = """\
    #!/usr/bin/env python
    import argparse
    import os
    import sys

    from django.conf import settings
    from django.test.utils import get_runner


    def django_tests(verbosity, labels, parallel):
        TestRunner = get_runner(settings)
        runner = TestRunner(verbosity=verbosity, parallel=parallel)
        return runner.run_tests(labels)


    if __name__ == "__main__":
        parser = argparse.ArgumentParser(description="Run the project's test suite.")
        parser.add_argument("modules", nargs="*", metavar="module")
        parser.add_argument("-v", "--verbosity", default=1, type=int)
        parser.add_argument("--noinput", action="store_false", dest="interactive")
        parser.add_argument("--settings")
        parser.add_argument("--parallel", nargs="?", default=0, type=int)
        options = parser.parse_args()
        if options.settings:
            os.environ["DJANGO_SETTINGS_MODULE"] = options.settings
        else:
            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "test_sqlite")
        failures = django_tests(options.verbosity, options.modules, options.parallel)
        if failures:
            sys.exit(1)
"""

SETTINGS = """\
    DATABASES = {"default": {"ENGINE": "sqlite3"}}
    SECRET_KEY = "django_tests_secret_key"
    TEST_RUNNER = "django.test.runner.DiscoverRunner"
"""

FAKE_DJANGO = {
    "django/__init__.py": "VERSION = (0, 1)\n",
    "django/conf.py": """\
        import importlib
        import os


        class _Settings:
            def __getattr__(self, name):
                module = importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])
                return getattr(module, name)


        settings = _Settings()
    """,
    "django/test/__init__.py": "",
    "django/test/utils.py": """\
        import importlib


        def get_runner(settings):
            module, _, name = settings.TEST_RUNNER.rpartition(".")
            return getattr(importlib.import_module(module), name)
    """,
    "django/test/runner.py": """\
        import unittest


        class DiscoverRunner:
            def __init__(self, verbosity=1, parallel=0, **kwargs):
                if parallel != 1:
                    raise SystemExit("this stand-in runs in one process only: --parallel 1")
                self.verbosity = verbosity

            def run_tests(self, labels):
                suite = unittest.defaultTestLoader.loadTestsFromNames(labels)
                result = unittest.TextTestRunner(verbosity=self.verbosity).run(suite)
                return len(result.failures) + len(result.errors)
    """,
}

BUGGY = {
    **FAKE_DJANGO,
    "setup.py": "from setuptools import setup, find_packages\n\n"
    "setup(name='calc', version='0.1', packages=find_packages(exclude=['tests*']))\n",
    "calc/__init__.py": """\
        def double(x):
            return x + 2


        def name():
            return "calc"
    """,
    "tests/runtests.py": RUNTESTS,
    "tests/test_sqlite.py": SETTINGS,
    "tests/calc_tests/__init__.py": "",
    "tests/calc_tests/tests.py": """\
        import unittest

        from calc import name


        class CalcTests(unittest.TestCase):
            def test_name(self):
                self.assertEqual(name(), "calc")
    """,
}

FIX = """\
    def double(x):
        return x * 2


    def triple(x):
        return x * 3


    def name():
        return "calc"
"""

HIDDEN_TESTS = """\
    import unittest

    import calc
    from calc import double, name


    class CalcTests(unittest.TestCase):
        def test_name(self):
            self.assertEqual(name(), "calc")

        def test_double(self):
            self.assertEqual(double(3), 6)

        def test_triple(self):
            self.assertEqual(calc.triple(2), 6)

        def test_negative(self):
            \"\"\"Doubling keeps the sign.\"\"\"
            self.assertEqual(double(-2), -4)

        @unittest.skip("needs a database")
        def test_database(self):
            pass
"""

# The ids as SWE-bench's datasets write them: both of django's formats, the dotted id and a
# docstring's first line.
F2P = [
    "test_double (calc_tests.tests.CalcTests)",
    "calc_tests.tests.CalcTests.test_triple",
    "Doubling keeps the sign.",
]
P2P = ["test_name (calc_tests.tests.CalcTests.test_name)"]
SKIPPED = "test_database (calc_tests.tests.CalcTests)"


def django_project(root: Path, extra: dict[str, str] | None = None) -> dict[str, object]:
    """The project as `root/repos/small__calc`, its tasks file and gold patch: task -1 lists
    tests that pass with the fix, task -2 also a skipped test as PASS_TO_PASS."""
    repo = git_repo(root / "repos" / "small__calc", {**BUGGY, **(extra or {})}, when=WHEN)
    base = git(repo, "rev-parse", "HEAD").strip()
    gold = diff_of(repo, {"calc/__init__.py": FIX})
    test_patch = diff_of(repo, {"tests/calc_tests/tests.py": HIDDEN_TESTS})
    record = {
        "repo": "small/calc", "base_commit": base, "problem_statement": "double adds",
        "patch": gold, "test_patch": test_patch, "created_at": "2024-03-01T12:00:00Z",
        "FAIL_TO_PASS": json.dumps(F2P), "PASS_TO_PASS": json.dumps(P2P),
    }  # fmt: skip
    records = [
        {**record, "instance_id": "small__calc-1"},
        {**record, "instance_id": "small__calc-2", "PASS_TO_PASS": json.dumps([*P2P, SKIPPED])},
    ]
    dataset = root / "tasks.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    return {"repo": repo, "dataset": dataset, "gold": gold, "repos": root / "repos",
            "cache": root / "cache", "runs": root / "runs"}  # fmt: skip
