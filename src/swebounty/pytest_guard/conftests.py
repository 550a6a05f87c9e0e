"""A conftest.py that pytest could not import: which one, and why (a plugin of the guard's).

pytest imports the conftest.py files of the folders it is given before its session starts;
when one of them does not import (it imports a name the fix adds), pytest prints the error,
ends with exit code 4 and writes no result at all. Without this the harness only knew that
the session never started, the same as an internal failure, and read the run as an
infrastructure error. The guard sends what this records (`Guard.send`) and the harness reads
such a run as every test of the run failing to collect (frameworks/pytest.py), as pytest
itself reports a conftest.py it meets later, during collection.

The hook wraps `pytest_cmdline_parse`, pytest's parsing of its command line and configuration
(called on the plugins passed to `pytest.main`, before any conftest.py is imported): the
failure passes through it on its way to `pytest.main`, which prints it and returns 4. What it
records is only a description; a submission that fakes one gains nothing (its tests are read
as failing).

Python 3.6+ and any pytest from 3.6 on (tests/test_guard_conftests.py runs 3.6.4 and the
newest); standard library only.
"""

import os

import pytest

MAX_CHARS = 2000  # of the error: its first line says what failed


class Conftests:
    """The plugin; `failed` is [path relative to the workspace, "Type: message"] or None."""

    def __init__(self, workspace):
        self.workspace = os.path.realpath(workspace)
        self.failed = None

    # The innermost wrapper: its end runs first. pytest's own (helpconfig) raises the failure
    # again at its end, which in pluggy before 1.0 skips the ends of the wrappers around it.
    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_cmdline_parse(self):
        outcome = yield
        error = outcome.excinfo[1] if outcome.excinfo else None
        if type(error).__name__ == "ConftestImportFailure" and hasattr(error, "path"):
            self.failed = [self._relative(str(error.path)), _cause(error)]

    def _relative(self, path):
        real = os.path.realpath(path)
        if real.startswith(os.path.join(self.workspace, "")):
            return os.path.relpath(real, self.workspace).replace(os.sep, "/")
        return path


def _cause(error):
    """What the conftest raised: pytest 7+ keeps it as `cause`, older ones in `excinfo`."""
    cause = getattr(error, "cause", None)
    if cause is None:
        excinfo = getattr(error, "excinfo", None) or (None, None)
        cause = excinfo[1]
    if cause is None:
        return str(error)[:MAX_CHARS]
    return f"{type(cause).__name__}: {cause}"[:MAX_CHARS]
