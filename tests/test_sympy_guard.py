"""The sympy guard (pytest_guard/run_sympy.py, sympy_guard.py): what a run of sympy's own
runner reports, as the runner's own code said it, and what it refuses to believe. The runner
is minisym's (sympy_helpers.py), run unsandboxed: what is checked is the guard itself."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from swebounty.frameworks.sympy import SYMPY_RUNNER
from swebounty.pytest_guard import GuardResult, new_key, read_channel, runner_argv, write_config
from swebounty.sandbox import Policy, UnsafeSandbox
from sympy_helpers import CALC, PROJECT

TESTS = """\
from minisym import double, name
from minisym.utilities.pytest import XFAIL, SKIP, raises, slow


def check(value, expected):
    assert value == expected


def test_ok():
    check(double(3), 6)


def test_bad():
    check(double(2), 5)


def test_crash():
    raise RuntimeError("boom")


@XFAIL
def test_known_bug():
    assert double(1) == 3


@SKIP("needs a printer")
def test_printer():
    assert False


@slow
def test_slow_one():
    assert name() == "minisym"
"""

FIXED = CALC.replace("x + 2", "x * 2")
TEST_FILE = "minisym/tests/test_x.py"
HONEST = {
    f"{TEST_FILE}::test_ok": "passed",
    f"{TEST_FILE}::test_bad": "failed",
    f"{TEST_FILE}::test_crash": "error",
    f"{TEST_FILE}::test_known_bug": "skipped",
    f"{TEST_FILE}::test_printer": "skipped",
    f"{TEST_FILE}::test_slow_one": "passed",
}


def _interpreters() -> list[object]:
    """This one, and the oldest the harness builds environments for (sympy-11400's)."""
    found = sorted(Path(os.path.expanduser("~/.pyenv/versions")).glob("3.6.*/bin/python"))
    usable = [p for p in found if os.access(p, os.X_OK)]
    old = str(usable[0]) if usable else None
    skip = pytest.mark.skipif(old is None, reason="no Python 3.6 on this machine")
    return [sys.executable, pytest.param(old or "python3.6", marks=skip, id="py36")]


def _prefixes(python: str) -> list[str]:
    code = "import sys; print(sys.base_prefix); print(sys.prefix)"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def guarded(
    tmp: Path,
    calc: str = FIXED,
    tests: str = TESTS,
    python: str = sys.executable,
    files: tuple[str, ...] = (TEST_FILE,),
    changed: dict[str, str] | None = None,
) -> tuple[GuardResult | None, int | None]:
    """A guarded `bin/test` run of minisym with `calc` as its (untrusted) library code;
    `changed`: more files of the submission's (untrusted)."""
    ws = tmp / "ws"
    project = {**PROJECT, "minisym/calc.py": calc, TEST_FILE: tests, **(changed or {})}
    for rel, text in project.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(textwrap.dedent(text) if rel != TEST_FILE else text)
    runner = ["minisym/utilities/runtests.py", "minisym/utilities/pytest.py"]
    config = {
        "workspace": str(ws), "infra": {"files": {}, "names": [], "suffixes": []},
        "untrusted_files": [str(ws / p) for p in ["minisym/calc.py", *(changed or {})]],
        "pinned_files": {p: (ws / p).read_bytes().hex() for p in [*files, *runner]},
        "tests": list(files), "setup": None, "trusted_dirs": _prefixes(python),
        "script": "bin/test", "runner_module": "minisym.utilities.runtests",
        "runner_file": runner[0], "args": ["-C", "--verbose", "--no-subprocess", *files],
    }  # fmt: skip
    write_config(tmp / "config.json", config)
    key = new_key()
    policy = Policy(timeout_s=120, env={"PATH": "/usr/bin:/bin"})
    argv = runner_argv(python, tmp / "config.json", SYMPY_RUNNER)
    run = UnsafeSandbox().run(argv, workdir=ws, mounts=[], policy=policy, stdin=key,
                              result_channel=True)  # fmt: skip
    return read_channel(run.channel, key), run.returncode


def statuses(result: GuardResult) -> dict[str, str | None]:
    return {k: v["status"] for k, v in result.tests.items()}


@pytest.mark.parametrize("python", _interpreters())
def test_every_kind_of_result_is_recorded_as_the_runner_reported_it(
    tmp_path: Path, python: str
) -> None:
    result, code = guarded(tmp_path, python=python)
    assert result is not None and result.problems == [], result and result.problems
    assert statuses(result) == HONEST
    assert result.exitstatus == code == 1
    assert "RuntimeError: boom" in (result.tests[f"{TEST_FILE}::test_crash"]["message"] or "")
    assert "AssertionError" in (result.tests[f"{TEST_FILE}::test_bad"]["message"] or "")
    assert result.tests[f"{TEST_FILE}::test_printer"]["message"] == "skipped: needs a printer"
    assert result.tests[f"{TEST_FILE}::test_known_bug"]["message"] == "expected to fail (XFAIL)"
    assert result.tests[f"{TEST_FILE}::test_ok"]["message"] == ""


def test_a_run_that_passes_exits_0_and_a_module_that_fails_to_import_is_its_files_error(
    tmp_path: Path,
) -> None:
    passing = "from minisym import name\n\n\ndef test_ok():\n    assert name() == 'minisym'\n"
    result, code = guarded(tmp_path / "a", tests=passing)
    assert result is not None and result.problems == []
    assert statuses(result) == {f"{TEST_FILE}::test_ok": "passed"}
    assert result.exitstatus == code == 0
    # A module whose code raises past its first test: its file's error, and that test runs.
    raising = "def test_early():\n    pass\n\n\nraise RuntimeError('half a module')\n"
    result, code = guarded(tmp_path / "c", tests=raising)
    assert result is not None and result.problems == []
    assert statuses(result) == {TEST_FILE: "error", f"{TEST_FILE}::test_early": "passed"}
    assert "half a module" in (result.tests[TEST_FILE]["message"] or "")
    assert result.exitstatus == code == 1
    broken = "from minisym import nothing_here\n\n\ndef test_ok():\n    pass\n"
    result, code = guarded(tmp_path / "b", tests=broken)
    assert result is not None and statuses(result) == {TEST_FILE: "error"}
    assert result.tests[TEST_FILE]["kind"] == "import"
    assert "nothing_here" in (result.tests[TEST_FILE]["message"] or "")
    assert result.exitstatus == code == 1


# ------------------------------------------------------------------------------ forgeries

REPORT_FROM_THE_LIBRARY = """
import sys

def double(x):
    # Find sympy's reporter in the runner's frame and report the running test as passed.
    frame = sys._getframe(1)
    while frame is not None:
        reporter = frame.f_locals.get("reporter")
        if reporter is not None and hasattr(reporter, "test_pass"):
            reporter.test_pass()
            break
        frame = frame.f_back
    return x + 2

def name():
    return "minisym"
"""

PATCH_THE_REPORTER = """
import minisym.utilities.runtests as _runtests

_runtests.PyTestReporter.test_fail = lambda self, exc_info: self.test_pass()

def double(x):
    return x + 2

def name():
    return "minisym"
"""

SWAP_THE_TESTS = """
import sys

def double(x):
    # From the first test, put other functions in the runner's list of tests: a no-op for
    # test_bad, and test_ok itself, renamed, for test_crash.
    frame = sys._getframe(1)
    while frame is not None and "funcs" not in frame.f_locals:
        frame = frame.f_back
    funcs = frame.f_locals["funcs"]
    ok = funcs[0]
    for i, func in enumerate(funcs):
        if func.__name__ == "test_bad":
            funcs[i] = lambda: None
            funcs[i].__name__ = "test_bad"
        elif func.__name__ == "test_crash":
            funcs[i] = ok
    ok.__name__ = "test_crash"
    return x * 2

def name():
    return "minisym"
"""

OWN_RUNNER = """
import minisym.utilities.runtests as _runtests

def _test_file(self, filename, timeout=False):
    reporter = self._reporter
    ns = {"__file__": filename}
    exec(compile(open(filename).read(), filename, "exec"), ns)
    for key in sorted(ns):
        if key.startswith("test_"):
            reporter.entering_test(ns[key])
            reporter.test_pass()

_runtests.SymPyTests.test_file = _test_file

def double(x):
    return x + 2

def name():
    return "minisym"
"""

BYPASS_THE_HOOK = """
import sys

# Take the runner from the disk, past whatever import hook the harness put first.
sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "__module__", "").startswith("_frozen")]

def double(x):
    return x + 2

def name():
    return "minisym"
"""


def test_a_pass_reported_from_the_library_is_not_believed(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, calc=REPORT_FROM_THE_LIBRARY)
    assert result is not None
    assert statuses(result)[f"{TEST_FILE}::test_bad"] == "failed"
    assert any(f"a pass of {TEST_FILE}::test_bad was not believed: reported by" in p
               for p in result.problems)  # fmt: skip


@pytest.mark.parametrize("python", _interpreters())
def test_a_patched_reporter_is_a_problem_and_the_failure_stands(
    tmp_path: Path, python: str
) -> None:
    result, _ = guarded(tmp_path, calc=PATCH_THE_REPORTER, python=python)
    assert result is not None
    # Its failure went to the submission's test_fail, which reported no failure: never ran.
    assert f"{TEST_FILE}::test_bad" not in statuses(result)
    assert "sympy's runner was changed: PyTestReporter.test_fail" in result.problems
    assert any(f"a pass of {TEST_FILE}::test_bad was not believed" in p for p in result.problems)


def test_swapped_test_functions_pass_as_themselves_or_not_at_all(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, calc=SWAP_THE_TESTS)
    assert result is not None
    found = statuses(result)
    assert f"{TEST_FILE}::test_crash" not in found  # test_ok ran in its place, as itself
    assert found[f"{TEST_FILE}::test_ok"] == "passed"
    assert f"{TEST_FILE}::test_bad" not in found
    # The no-op is named by its own code, whatever __name__ it was given.
    assert any("<lambda> was not believed: its test function is not the code of" in p
               for p in result.problems)  # fmt: skip


def test_a_runner_of_the_submissions_own_is_not_believed(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, calc=OWN_RUNNER)
    assert result is not None
    assert "passed" not in statuses(result).values()
    assert any("not by sympy's runner" in p for p in result.problems)
    assert "sympy's runner was changed: SymPyTests.test_file" in result.problems


def test_a_runner_module_taken_past_the_harnesss_hook_reports_nothing(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, calc=BYPASS_THE_HOOK)
    assert result is not None and result.tests == {}
    assert result.problems == [
        "sympy's runner (minisym.utilities.runtests) was not the one the harness loads"
    ]


def test_the_runners_test_helpers_changed_by_the_submission_prove_nothing(tmp_path: Path) -> None:
    # A slow test whose wrapper now comes from a file the submission changed (as reverting it
    # would not have: this run gets the changed file).
    helpers = PROJECT["minisym/utilities/pytest.py"].replace(
        "            func()\n\n        func_wrapper = functools",
        "            return None\n\n        func_wrapper = functools",
    )
    tests = TESTS.replace('assert name() == "minisym"', 'assert name() == "other"')
    result, _ = guarded(tmp_path, tests=tests, changed={"minisym/utilities/pytest.py": helpers})
    assert result is not None
    assert f"{TEST_FILE}::test_slow_one" not in statuses(result)
    assert any(f"{TEST_FILE}::test_slow_one was not believed: its test function is not the code"
               in p for p in result.problems)  # fmt: skip


GLOBAL_REBOUND = """
import sys

def double(x):
    # From test_ok, make the test module's helper a no-op for the tests after it.
    frame = sys._getframe(1)
    frame.f_globals["check"] = lambda value, expected: None
    return x + 2

def name():
    return "minisym"
"""


def test_a_helper_of_the_test_module_rebound_at_run_time_is_a_problem(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, calc=GLOBAL_REBOUND)
    assert result is not None
    assert statuses(result).get(f"{TEST_FILE}::test_bad") != "passed"
    assert any(f"a pass of {TEST_FILE}::test_bad was not believed: it reads check of" in p
               for p in result.problems)  # fmt: skip


A_TIME_LIMIT_OF_ITS_OWN = """
import minisym
import minisym.utilities.runtests as _runtests


class _Tests(_runtests.SymPyTests):
    def _timeout(self, function, seconds):
        pass  # the test never runs, and the runner's own code reports it passed


def _test(*paths, **kwargs):
    tests = _Tests(_runtests.PyTestReporter(verbose=True))
    tests._testfiles.extend(_runtests.os.path.join(_runtests.root_dir(), p) for p in paths)
    return tests.test(timeout=1)


minisym.test = _test

def double(x):
    return x + 2

def name():
    return "minisym"
"""


def test_the_runners_own_code_running_no_test_under_a_time_limit_is_not_believed(
    tmp_path: Path,
) -> None:
    changed = {"minisym/__init__.py": "from .calc import double, name\n"
               "from .utilities.runtests import test\nfrom . import forge\n",
               "minisym/forge.py": A_TIME_LIMIT_OF_ITS_OWN}  # fmt: skip
    result, code = guarded(tmp_path, calc=CALC, changed=changed)
    assert result is not None and code == 0  # every test "passed", as the runner saw it
    assert "passed" not in statuses(result).values()
    assert any("not believed: the runner ran it under a time limit" in p for p in result.problems)


HEADROOM = """\
import sys


def test_headroom():
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    assert sys.getrecursionlimit() - depth == 995  # `python bin/test`: 5 frames, limit 1000
"""


@pytest.mark.parametrize("python", _interpreters())
def test_a_test_has_the_recursion_headroom_python_bin_test_gives_it(
    tmp_path: Path, python: str
) -> None:
    result, _ = guarded(tmp_path, tests=HEADROOM, python=python)
    assert result is not None and statuses(result) == {f"{TEST_FILE}::test_headroom": "passed"}
    plain = subprocess.run([python, "bin/test", "--no-subprocess", TEST_FILE],
                           cwd=tmp_path / "ws", capture_output=True, text=True)  # fmt: skip
    assert plain.returncode == 0, plain.stdout + plain.stderr
