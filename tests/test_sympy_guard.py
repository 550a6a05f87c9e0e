"""The sympy guard (pytest_guard/run_sympy.py, sympy_guard.py, sympy_modules.py): what a run of
sympy's own runner reports, as the runner's own code said it (sympy_guard_helpers.py runs it);
its refusals of forged passes are test_sympy_guard_attacks.py's."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from sympy_guard_helpers import (
    FIXED,
    HONEST,
    TEST_FILE,
    guarded,
    interpreters,
    statuses,
)


@pytest.mark.parametrize("python", interpreters())
def test_every_kind_of_result_is_recorded_as_the_runner_reported_it(
    tmp_path: Path, python: str
) -> None:
    result, code = guarded(tmp_path, python=python)
    assert result is not None and result.problems == [], result and result.problems
    assert result.errors == []  # a test's exception (test_crash's) is its own, not the guard's
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


HEADROOM = """\
import sys


def test_headroom():
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    assert sys.getrecursionlimit() - depth == 995  # `python bin/test`: 5 frames, limit 1000
"""


@pytest.mark.parametrize("python", interpreters())
def test_a_test_has_the_recursion_headroom_python_bin_test_gives_it(
    tmp_path: Path, python: str
) -> None:
    result, _ = guarded(tmp_path, tests=HEADROOM, python=python)
    assert result is not None and statuses(result) == {f"{TEST_FILE}::test_headroom": "passed"}
    plain = subprocess.run([python, "bin/test", "--no-subprocess", TEST_FILE],
                           cwd=tmp_path / "ws", capture_output=True, text=True)  # fmt: skip
    assert plain.returncode == 0, plain.stdout + plain.stderr


def test_globals_a_library_call_of_the_test_binds_are_the_tests_own(tmp_path: Path) -> None:
    """sympy's var() and vring() bind symbols in their caller's module: a test reads names its
    module never held, which the library made for it (sympy's test_wester.py::test_M38)."""
    vring = """
        def vring(names):  # "k1:3" binds k1 and k2 in the caller's module, as sympy's does
            import sys

            head, _, end = names.partition(":")
            for i in range(int(head[1:]), int(end)):
                sys._getframe(1).f_globals[head[0] + str(i)] = i
    """
    calc = textwrap.dedent(FIXED) + textwrap.dedent(vring)
    tests = "from minisym.calc import vring\n\n\ndef test_M38():\n    vring('k1:3')\n"
    tests += "    assert k1 + k2 == 3\n"
    result, _ = guarded(tmp_path, calc=calc, tests=tests)
    assert result is not None and result.problems == []
    assert statuses(result) == {f"{TEST_FILE}::test_M38": "passed"}
