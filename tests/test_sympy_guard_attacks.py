"""The sympy guard against forged passes: a reporter called from the library, a patched
reporter or runner, swapped test functions, the runner taken past the harness's import hook,
helpers of a test module rebound while it executes or while its tests run, a time limit the
submission chose (sympy_guard_helpers.py runs minisym's runner, guarded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sympy_guard_helpers import (
    CALC,
    PROJECT,
    TEST_FILE,
    TESTS,
    guarded,
    interpreters,
    statuses,
)

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


@pytest.mark.parametrize("python", interpreters())
def test_a_patched_reporter_is_a_problem_and_the_failure_stands(
    tmp_path: Path, python: str
) -> None:
    result, _ = guarded(tmp_path, calc=PATCH_THE_REPORTER, python=python)
    assert result is not None
    # Its failure went to the submission's test_fail, which reported no failure: never ran.
    assert f"{TEST_FILE}::test_bad" not in statuses(result)
    assert (
        "sympy's runner was changed: minisym.utilities.runtests.PyTestReporter.test_fail"
        in result.problems
    )
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
    assert (
        "sympy's runner was changed: minisym.utilities.runtests.SymPyTests.test_file"
        in result.problems
    )


def test_runner_modules_taken_past_the_harnesss_hook_report_nothing(tmp_path: Path) -> None:
    result, _ = guarded(tmp_path, calc=BYPASS_THE_HOOK)
    assert result is not None and result.tests == {}
    assert result.problems == [
        "minisym.utilities.pytest was not the one the harness loads",
        "minisym.utilities.runtests was not the one the harness loads",
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
    assert any(f"{TEST_FILE}::test_slow_one was not believed" in p for p in result.problems)


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


REBIND_THE_CALLERS_HELPERS = """
import sys

def double(x):
    return x + 2

def name():
    # Called by the test module's own code as it is executed: make its helpers no-ops.
    caller = sys._getframe(1).f_globals
    caller["check"] = lambda value, expected: None
    caller["raises"] = lambda expected, code: None
    return "minisym"
"""

AT_IMPORT = (
    TESTS.replace(
        "from minisym import double, name\n",
        "from minisym import double, name\nfrom minisym.utilities.pytest import raises\n",
    )
    + """

NAME = name()


def test_raises():
    raises(ValueError, lambda: double(1))
"""
)


@pytest.mark.parametrize("python", interpreters())
def test_helpers_rebound_while_the_test_module_is_executed_are_a_problem(
    tmp_path: Path, python: str
) -> None:
    result, _ = guarded(tmp_path / "a", calc=REBIND_THE_CALLERS_HELPERS, tests=AT_IMPORT,
                        python=python)  # fmt: skip
    assert result is not None
    assert "passed" not in statuses(result).values()
    assert any("not believed: its module's check is not its file's function" in p
               for p in result.problems)  # fmt: skip
    # The same tests, their helpers untouched: the rule raises no false problem.
    result, _ = guarded(tmp_path / "b", tests=AT_IMPORT, python=python)
    assert result is not None and result.problems == []
    assert statuses(result)[f"{TEST_FILE}::test_raises"] == "failed"
    assert statuses(result)[f"{TEST_FILE}::test_ok"] == "passed"


def test_a_helper_imported_from_the_runners_helpers_and_rebound_is_a_problem(
    tmp_path: Path,
) -> None:
    tests = AT_IMPORT.replace("def check(value, expected):", "def _check(value, expected):")
    tests = tests.replace("    check(", "    _check(")
    result, _ = guarded(tmp_path, calc=REBIND_THE_CALLERS_HELPERS, tests=tests)
    assert result is not None
    assert statuses(result).get(f"{TEST_FILE}::test_raises") != "passed"
    assert any("its module's raises is not minisym.utilities.pytest's" in p
               for p in result.problems)  # fmt: skip


SHADOW_A_BUILTIN = """
import sys

def double(x):
    # From test_ok, shadow a builtin the tests after it read with a module global of theirs.
    sys._getframe(1).f_globals["len"] = lambda value: 3
    return x * 2

def name():
    return "minisym"
"""


def test_a_builtin_shadowed_in_the_test_module_at_run_time_is_a_problem(tmp_path: Path) -> None:
    tests = TESTS + '\n\ndef test_len():\n    assert len("ab") == 3\n'
    result, _ = guarded(tmp_path, calc=SHADOW_A_BUILTIN, tests=tests)
    assert result is not None
    assert statuses(result).get(f"{TEST_FILE}::test_len") != "passed"
    assert any(f"a pass of {TEST_FILE}::test_len was not believed: it reads len of" in p
               for p in result.problems)  # fmt: skip
