"""The unittest guard (pytest_guard/run_unittest.py, unittest_guard.py): what a unittest-based
run reports, as unittest's own code said it, and what it refuses to believe."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from swebounty.pytest_guard import (
    UNITTEST_RUNNER,
    GuardResult,
    new_key,
    read_channel,
    runner_argv,
    write_config,
)
from swebounty.sandbox import Policy, UnsafeSandbox

TESTS = '''
import unittest
from unittest import mock

from pkg import f


class T(unittest.TestCase):
    def test_ok(self):
        """Adds one.

        More words.
        """
        self.assertEqual(f(), 1)

    def test_bad(self):
        self.assertEqual(f(), 2)

    def test_crash(self):
        raise RuntimeError("boom")

    @mock.patch("os.getcwd", return_value="/nowhere")
    def test_mocked(self, getcwd):
        import os

        self.assertEqual(os.getcwd(), "/nowhere")

    @unittest.skip("not today")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_known_bug(self):
        self.assertEqual(f(), 2)

    def test_sub(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, 0)


class Broken(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise ValueError("no fixture")

    def test_never(self):
        pass
'''

RUNTESTS = """
import sys
import unittest

if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromNames(sys.argv[1:])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(bool(result.failures or result.errors))
"""


def _interpreters() -> list[object]:
    """This one, and the oldest the harness builds environments for (unittest is stdlib)."""
    found = sorted(Path(os.path.expanduser("~/.pyenv/versions")).glob("3.6.*/bin/python"))
    usable = [p for p in found if os.access(p, os.X_OK)]
    old = str(usable[0]) if usable else None
    skip = pytest.mark.skipif(old is None, reason="no Python 3.6 on this machine")
    return [sys.executable, pytest.param(old or "python3.6", marks=skip, id="py36")]


def _base_prefix(python: str, which: str = "base_prefix") -> str:
    code = f"import sys; print(sys.{which})"
    return subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()


def _prefix(python: str) -> str:
    return _base_prefix(python, "prefix")


def guarded(
    tmp: Path,
    pkg: str = "def f():\n    return 1\n",
    tests: str = TESTS,
    python: str = sys.executable,
    helpers: str = "",
    runner: Path = UNITTEST_RUNNER,
    **program: object,
) -> tuple[GuardResult | None, int | None]:
    """`helpers`: tests/helpers.py, a base file of the tests (a project's decorators);
    `runner`: the guard's (a copy)."""
    ws = tmp / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "pkg" / "__init__.py").write_text(textwrap.dedent(pkg))
    (ws / "tests" / "__init__.py").write_text("")
    (ws / "tests" / "test_x.py").write_text(tests)
    (ws / "tests" / "helpers.py").write_text(helpers)
    (ws / "tests" / "runtests.py").write_text(RUNTESTS)
    config = {
        "workspace": str(ws), "infra": {"files": {}, "names": [], "suffixes": []},
        "untrusted_files": [str(ws / "pkg" / "__init__.py")],
        "pinned_files": {"tests/test_x.py": tests.encode().hex()}, "setup": None,
        "trusted_dirs": [_base_prefix(python), _prefix(python)],  # the venv: Hypothesis
        **(program or {"module": "unittest", "args": ["-v", "tests.test_x"]}),
    }  # fmt: skip
    write_config(tmp / "config.json", config)
    key = new_key()
    policy = Policy(timeout_s=120, env={"PYTHONPATH": str(ws), "PATH": "/usr/bin:/bin"})
    argv = runner_argv(python, tmp / "config.json", runner)
    run = UnsafeSandbox().run(argv, workdir=ws, mounts=[], policy=policy, stdin=key,
                              result_channel=True)  # fmt: skip
    return read_channel(run.channel, key), run.returncode


def statuses(result: GuardResult) -> dict[str, str | None]:
    return {k: v["status"] for k, v in result.tests.items()}


HONEST = {
    "tests.test_x.T.test_ok": "passed",
    "tests.test_x.T.test_bad": "failed",
    "tests.test_x.T.test_crash": "error",
    "tests.test_x.T.test_mocked": "passed",
    "tests.test_x.T.test_skipped": "skipped",
    "tests.test_x.T.test_known_bug": "skipped",
    "tests.test_x.T.test_sub": "failed",
    "setUpClass (tests.test_x.Broken)": "error",
}


@pytest.mark.parametrize("python", _interpreters())
def test_every_kind_of_result_is_recorded_as_unittest_reported_it(
    tmp_path: Path, python: str
) -> None:
    result, code = guarded(tmp_path, python=python)
    assert result is not None and result.problems == [] and result.errors == []
    assert statuses(result) == HONEST
    assert result.exitstatus == code == 1
    ok = result.tests["tests.test_x.T.test_ok"]
    assert ok["doc"] == "Adds one." and ok["kind"] == "test"
    assert result.tests["setUpClass (tests.test_x.Broken)"]["kind"] == "fixture"
    assert "RuntimeError: boom" in (result.tests["tests.test_x.T.test_crash"]["message"] or "")
    assert result.tests["tests.test_x.T.test_known_bug"]["message"] == "expected failure"


def test_a_script_runner_and_its_exit_status(tmp_path: Path) -> None:
    passing = "tests.test_x.T.test_ok"
    result, code = guarded(tmp_path / "a", script="tests/runtests.py", args=[passing])
    assert result is not None and result.problems == [] and statuses(result) == {passing: "passed"}
    assert result.exitstatus == code == 0
    failing = "tests.test_x.T.test_bad"
    result, code = guarded(tmp_path / "b", script="tests/runtests.py", args=[failing])
    assert result is not None and statuses(result) == {failing: "failed"}
    assert result.exitstatus == code == 1


def test_a_module_that_fails_to_import_is_an_error_of_that_module(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, args=["-v", "tests.test_x", "tests.test_gone"], module="unittest")
    assert result is not None
    # unittest's loader names it by the part of the dotted name it failed on
    assert result.tests["test_gone"]["status"] == "error"
    assert result.tests["test_gone"]["kind"] == "import"


# ------------------------------------------------------------------------------ forgeries

FORGE_FROM_THE_LIBRARY = """
import sys

def f():
    # Called by the test: find unittest's result (the recorder) in the caller frames, report
    # the calling test as passed, and make the test itself pass.
    frame = sys._getframe(1)
    test = frame.f_locals["self"]
    while frame is not None:
        result = frame.f_locals.get("result")
        if result is not None and hasattr(result, "addSuccess"):
            result.addSuccess(test)
            break
        frame = frame.f_back
    return 1 if test._testMethodName == "test_ok" else 3
"""

PATCH_THE_RESULT = """
import unittest
unittest.TestResult.addFailure = lambda self, test, err: self.addSuccess(test)
def f():
    return 1
"""

FAKE_TEST = """
import unittest

def f():
    return 1

class T(unittest.TestCase):  # passes itself off as the hidden tests' class
    def test_bad(self):
        pass

T.__module__ = "tests.test_x"
_result = unittest.TestResult()
T("test_bad").run(_result)
"""


@pytest.mark.parametrize("python", _interpreters())
def test_a_pass_reported_from_outside_unittest_is_not_believed(tmp_path: Path, python: str) -> None:
    result, _ = guarded(tmp_path, pkg=FORGE_FROM_THE_LIBRARY, python=python)
    assert result is not None
    assert statuses(result)["tests.test_x.T.test_bad"] == "failed"
    assert any("a pass of tests.test_x.T.test_bad was not believed" in p for p in result.problems)


def test_patched_result_machinery_is_a_problem_and_the_failure_stands(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, pkg=PATCH_THE_RESULT)
    assert result is not None
    assert statuses(result)["tests.test_x.T.test_bad"] == "failed"
    assert "unittest's machinery was changed: unittest.result.TestResult.addFailure" in (
        result.problems
    )


def test_a_look_alike_test_run_by_unittest_itself_is_not_the_hidden_test(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, pkg=FAKE_TEST)
    assert result is not None
    assert statuses(result)["tests.test_x.T.test_bad"] == "failed"
    assert any("a pass of tests.test_x.T.test_bad was not believed" in p for p in result.problems)


PATCH_THE_GUARD = """
import gc
for _o in gc.get_objects():
    if type(_o).__name__ == "UnittestGuard":
        type(_o).record = lambda *a, **k: None
        break
def f():
    return 1
"""


def test_a_patched_recorder_is_a_problem(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, pkg=PATCH_THE_GUARD)
    assert result is not None
    assert "the harness's own recorder (UnittestGuard) was changed" in result.problems


@pytest.mark.parametrize("exit_code", [0, 7])
def test_a_program_that_exits_early_still_sends_what_it_saw(tmp_path: Path, exit_code: int) -> None:
    tests = TESTS + f"\n\nimport sys\nsys.exit({exit_code})\n"
    result, code = guarded(tmp_path, tests=tests)
    assert result is not None and result.exitstatus == code == exit_code
    assert result.tests == {}
