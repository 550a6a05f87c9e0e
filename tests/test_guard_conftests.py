"""A conftest.py pytest could not import (pytest_guard/conftests.py), and how the harness reads
the run: every test file failing to collect, gradable (frameworks/pytest.py's `unloaded`).

pytest imports the conftest.py files of the folders it is handed before its session: when one
does not import, it ends with exit code 4 and writes no result. The guard names the file and
the error; without it the run was an infrastructure error ("no JUnit XML").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from swebounty.frameworks.base import TestRun
from swebounty.frameworks.pytest import Pytest, read_results, unloaded, unusable
from swebounty.pytest_guard import GuardResult, read_channel
from swebounty.sandbox.base import RunResult
from swebounty.testing import TestOutcome, cross_check, not_loaded
from test_pytest_guard import _guarded_run, _venv, frame

CONFTEST = "from pkg import NEW\n"  # a name only the fix adds


@pytest.mark.parametrize("kind", ["current", pytest.param("old", marks=pytest.mark.network)])
def test_the_guard_names_a_conftest_that_does_not_import(tmp_path: Path, kind: str) -> None:
    # "old": Python 3.6 and pytest 3.6, whose failure keeps its cause in `excinfo`.
    venv = _venv(tmp_path, kind)
    got = _guarded_run(venv, tmp_path, tamper=False, files={"base:tests/conftest.py": CONFTEST})
    assert got is not None and got.problems == []
    assert got.exitstatus is None and got.xml is None  # no session, no results
    assert got.unloaded_conftest is not None
    path, why = got.unloaded_conftest
    assert path == "tests/conftest.py"
    assert why.startswith("ImportError: cannot import name 'NEW'"), why


def test_a_conftest_that_imports_names_nothing(tmp_path: Path) -> None:
    got = _guarded_run(_venv(tmp_path, "current"), tmp_path, tamper=False,
                       files={"base:tests/conftest.py": "from pkg import f\n"})  # fmt: skip
    assert got is not None and got.unloaded_conftest is None and got.exitstatus == 1


def test_only_two_strings_are_read_as_the_unloaded_conftest() -> None:
    key = b"k" * 64
    for sent, read in [
        (["tests/conftest.py", "ImportError: x"], ("tests/conftest.py", "ImportError: x")),
        (["tests/conftest.py"], None),
        (["tests/conftest.py", 3], None),
        ("tests/conftest.py", None),
        (None, None),
    ]:
        got = read_channel(frame(key, {"exitstatus": None, "unloaded_conftest": sent}), key)
        assert got is not None and got.unloaded_conftest == read, sent


def _read(
    guard: GuardResult, returncode: int = 4, timed_out: bool = False
) -> tuple[str | None, TestRun]:
    """read_results of a run whose guard sent `guard`, with the run's test files."""
    result = TestRun(test_files=["tests/test_a.py", "tests/test_b.py"])
    key = b"k" * 64
    payload = {"exitstatus": guard.exitstatus, "xml": None, "xml_problem": guard.xml_problem,
               "unloaded_conftest": list(guard.unloaded_conftest or []) or None}  # fmt: skip
    run = RunResult(returncode=returncode, stdout="", stderr="", timed_out=timed_out,
                    channel=frame(key, payload))  # fmt: skip
    ctx = type("Ctx", (), {"policy": type("Policy", (), {"timeout_s": 60.0})()})()
    why = read_results(ctx, run, key, Path("/nonexistent"), result)  # type: ignore[arg-type]
    return why, result


ENDED = "the session ended before writing its results"


def test_a_run_whose_conftest_does_not_import_is_every_test_file_failing_to_collect() -> None:
    guard = GuardResult(
        xml_problem=ENDED, unloaded_conftest=("tests/conftest.py", "ImportError: x")
    )
    why, result = _read(guard)
    assert why is None and result.exit_code == 4
    message = "tests/conftest.py does not import: ImportError: x"
    assert result.outcomes == {
        "tests/test_a.py": TestOutcome("error", message),
        "tests/test_b.py": TestOutcome("error", message),
    }
    assert result.uncollected == {"tests/test_a.py": message, "tests/test_b.py": message}
    # Graded as the tests failing (not an error), and said so.
    problem, cannot = Pytest().check(4, result.outcomes)
    assert cannot is None and problem is not None and "conftest.py did not import" in problem


@pytest.mark.parametrize(
    ("guard", "returncode", "timed_out", "expected"),
    [
        # No conftest named: the session ended for another reason (a usage error, a crash).
        (GuardResult(xml_problem=ENDED), 4, False, f"no JUnit XML: {ENDED}"),
        # A timeout stays one.
        (GuardResult(xml_problem=ENDED, unloaded_conftest=("c.py", "E: x")), -9, True,
         "tests timed out after 60 s"),
        # pytest ends a conftest failure with exit code 4, nothing else.
        (GuardResult(xml_problem=ENDED, unloaded_conftest=("c.py", "E: x")), 3, False,
         f"no JUnit XML: {ENDED}"),
    ],
)  # fmt: skip
def test_other_runs_without_results_stay_errors(
    guard: GuardResult, returncode: int, timed_out: bool, expected: str
) -> None:
    why, result = _read(guard, returncode, timed_out)
    assert why == expected and result.outcomes == {}


def test_no_test_file_no_reading() -> None:
    result = TestRun()
    assert unloaded(result, "tests/conftest.py", "ImportError: x") is not None
    assert result.outcomes == {}


def test_exit_code_4_is_gradable_only_when_every_result_is_a_file_that_did_not_collect() -> None:
    broken = {"tests/test_a.py": TestOutcome("error", "x")}
    assert not_loaded(4, broken) and unusable(4, broken) is None
    ran = {**broken, "tests/test_b.py::test_b": TestOutcome("passed")}
    assert not not_loaded(4, ran) and unusable(4, ran) is not None
    assert not not_loaded(4, {}) and unusable(4, {}) is not None
    assert not not_loaded(2, broken)
    assert cross_check(4, ran) is not None and "usage error" in str(cross_check(4, ran))
