"""A guard whose own code raises says so (pytest_guard/faults.py): its error is sent as the
guard's `errors` and the harness reads no result of that run, where the runner it hooks would
have swallowed the exception, or died without naming the guard, and left fewer results or none.
An exception of the test's code stays the test's."""

from __future__ import annotations

import importlib.util
import shutil
import types
from pathlib import Path
from typing import Any

import pytest

import sympy_guard_helpers
import test_unittest_guard
from swebounty.frameworks.base import TestRun
from swebounty.frameworks.unittest import received
from swebounty.pytest_guard import GUARD_DIR, GuardResult


def faulty_guard(tmp: Path, file: str, old: str, new: str) -> Path:
    """A copy of the guard's directory whose `file` has `old` replaced by `new` (once)."""
    copy = tmp / "guard"
    shutil.copytree(GUARD_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    text = (copy / file).read_text()
    assert text.count(old) == 1, f"{old!r} is not in {file} once"
    (copy / file).write_text(text.replace(old, new))
    return copy


@pytest.mark.parametrize("python", sympy_guard_helpers.interpreters())
def test_an_attribute_error_of_the_sympy_guard_is_its_error_not_a_silent_loss(
    tmp_path: Path, python: str
) -> None:
    # Last session's fault: Genuine._source renamed to `source`, one caller left behind.
    guard = faulty_guard(tmp_path, "sympy_guard.py", "self.genuine.source(real)",
                         "self.genuine._source(real)")  # fmt: skip
    result, _ = sympy_guard_helpers.guarded(tmp_path, python=python,
                                            guard=guard / "run_sympy.py")  # fmt: skip
    assert result is not None
    error = "swebounty's sympy guard failed: AttributeError: "
    assert [e[: len(error)] for e in result.errors] == [error], result.errors
    assert "_source" in result.errors[0]


def test_an_error_of_the_unittest_guard_in_a_result_hook_is_its_error(tmp_path: Path) -> None:
    # unittest's TestCase.run calls the recorder's addSuccess, addError...: the guard's code.
    guard = faulty_guard(tmp_path, "unittest_guard.py", "        doc = None\n",
                         "        doc = None.real\n")  # fmt: skip
    result, _ = test_unittest_guard.guarded(tmp_path, runner=guard / "run_unittest.py")
    assert result is not None
    assert result.errors == [
        "swebounty's unittest guard failed: AttributeError: "
        "'NoneType' object has no attribute 'real'"
    ]


def test_the_guards_checks_at_the_end_cut_short_are_its_error(tmp_path: Path) -> None:
    every = "self.genuine.set_modules(list(sys.modules.values()))"  # verify's first step
    guard = faulty_guard(tmp_path, "unittest_guard.py", every, "1 / 0")
    result, _ = test_unittest_guard.guarded(tmp_path, runner=guard / "run_unittest.py")
    assert result is not None
    assert result.errors == [
        "swebounty's unittest guard failed: ZeroDivisionError: division by zero"
    ]


def _faults_module() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("swebounty_faults", GUARD_DIR / "faults.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Test:
    """Code that is not the guard's: what a test's `__str__` or descriptor runs."""

    def __str__(self) -> str:
        raise ValueError("the test's own")


# A guard's module: code that calls the test's, and code that fails by itself.
GUARD_MODULE = """
def calls(value):
    return str(value)


def bug(value):
    return value.missing
"""


def test_only_an_exception_the_guards_code_raised_is_the_guards() -> None:
    space: dict[str, Any] = {}
    exec(GUARD_MODULE, space)
    faults = _faults_module().Faults("test guard", [space], 80)
    with pytest.raises(ValueError, match="the test's own"):  # goes on, as without the guard
        faults.run(space["calls"], _Test())
    assert faults.run(space["bug"], _Test()) is None  # recorded, ends there
    said = (
        "swebounty's test guard failed: AttributeError: '_Test' object has no attribute 'missing'"
    )
    assert faults.errors == [said[:80]]  # cut to the guard's message length
    # Checks the results wait for: what cuts them short, whoever raised it, is recorded.
    assert faults.run(space["calls"], _Test(), cut=True) is None
    assert faults.errors[1].startswith("swebounty's test guard's checks were cut short")
    assert not faults.own(ValueError("never raised"))


def test_the_harness_reads_no_result_of_a_run_whose_guard_failed() -> None:
    """Its problems neither: a guard that broke may see false ones after (a pass it no longer
    knows the test of). The run is a crash; the unpatched base's run says whose."""
    guard = GuardResult(errors=["swebounty's sympy guard failed: AttributeError: x"],
                        problems=["a pass of t was not believed"], exitstatus=0)  # fmt: skip
    result = TestRun()
    read, why = received(guard, result, 60)
    assert read is None and why == "swebounty's sympy guard failed: AttributeError: x"
    assert result.failure is None and result.flags == []
