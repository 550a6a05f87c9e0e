"""Hypothesis tests graded by their code alone (pytest_guard/hypothesis_profile.py, issue 28).

Two validations of mpmath-1026 disagreed: under load a Hypothesis test ran past its deadline or
failed the `too_slow` health check in one run and not in the next, with other random examples
each time. The guarded runner runs every Hypothesis test without a deadline, without the speed
health checks, without the example database and with examples derived from the test alone,
keeping the project's other settings. These tests run the guarded runner on a small workspace
whose conftest.py loads its own profile (a 50 ms deadline, 5 examples), as projects do.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from test_pytest_guard import _guarded_run, _venv
from test_unittest_guard import guarded, statuses

# Hypothesis of December 2017 (the settings `deadline` and `timeout`, the `hung_test` health
# check), with the pytest, Python and companions of its time (old atomicwrites releases were
# deleted from PyPI in 2022, hence the later date).
HYPOTHESIS_2017 = ("3.6", "hypothesis==3.44.0", "attrs==17.4.0", "coverage==4.4.2",
                   "pytest==3.6.4", "2022-12-31")  # fmt: skip

CONFTEST = """\
from hypothesis import settings

# The project's own profile, loaded as many conftest.py files load theirs.
settings.register_profile("project", settings(deadline=50, max_examples=5, stateful_step_count=5))
settings.load_profile("project")
"""

# Appended to the workspace's tests/test_x.py (_guarded_run's). Without the rule the first test
# fails with DeadlineExceeded and the second with FailedHealthCheck (too_slow), in every run.
SLOW = """

import time

from hypothesis import given, strategies as st


@given(st.integers())
def test_slower_than_the_deadline(x):
    time.sleep(0.08)


SLOW_DRAWS = []


def _slow(x):
    SLOW_DRAWS.append(x)
    if len(SLOW_DRAWS) <= 4:  # 2 s: over the second the too_slow health check allows
        time.sleep(0.5)
    return x


@given(st.integers().map(_slow))
def test_slow_to_generate(x):
    pass
"""

# Without the rule each run draws other examples (and would replay its database's).
DRAWS = """

import os

from hypothesis import given, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

DRAWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "drawn.txt")


def _keep(*values):
    with open(DRAWN, "a") as f:
        f.write(" ".join(map(repr, values)) + "\\n")


@given(st.integers(), st.text())
def test_draws(x, s):
    _keep("given", x, s)


class Counter(RuleBasedStateMachine):
    @rule(n=st.integers())
    def add(self, n):
        _keep("stateful", n)


TestCounter = Counter.TestCase
"""


def _run(venv: Path, tmp: Path, tests: str) -> dict[str, str]:
    """The statuses of the tests `tests` adds to the workspace."""
    got = _guarded_run(venv, tmp, tamper=False, extra_test=tests,
                       files={"base:conftest.py": CONFTEST})  # fmt: skip
    assert got is not None and got.problems == []
    return {
        k: v for k, v in got.statuses.items() if k.split("::")[1] not in ("test_ok", "test_bad")
    }


def _drawn(tmp: Path) -> list[str]:
    return (tmp / "ws" / "tests" / "drawn.txt").read_text().splitlines()


def test_slow_hypothesis_tests_pass_under_the_project_s_50_ms_deadline(tmp_path: Path) -> None:
    assert _run(_venv(tmp_path, "current"), tmp_path, SLOW) == {
        "tests/test_x.py::test_slower_than_the_deadline": "passed",
        "tests/test_x.py::test_slow_to_generate": "passed",
    }


def test_every_run_draws_the_same_examples_and_as_many_as_the_project_set(
    tmp_path: Path,
) -> None:
    venv = _venv(tmp_path, "current")
    passed = {"tests/test_x.py::test_draws": "passed",
              "tests/test_x.py::TestCounter::runTest": "passed"}  # fmt: skip
    assert _run(venv, tmp_path / "one", DRAWS) == passed
    assert _run(venv, tmp_path / "two", DRAWS) == passed
    drawn = _drawn(tmp_path / "one")
    assert _drawn(tmp_path / "two") == drawn
    # The project's max_examples (5, not Hypothesis's 100) stands: only time and chance change.
    assert 0 < sum(1 for line in drawn if line.startswith("'given'")) <= 5
    assert any(line.startswith("'stateful'") for line in drawn)


@pytest.mark.network
@pytest.mark.slow
def test_the_rule_holds_with_the_hypothesis_of_2017(tmp_path: Path) -> None:
    venv = _venv(tmp_path, "old", HYPOTHESIS_2017)
    assert set(_run(venv, tmp_path / "slow", SLOW).values()) == {"passed"}
    assert set(_run(venv, tmp_path / "one", DRAWS).values()) == {"passed"}
    assert _run(venv, tmp_path / "two", DRAWS) and _drawn(tmp_path / "two") == _drawn(
        tmp_path / "one"
    )


def test_a_run_whose_tests_never_import_hypothesis_does_not_import_it(tmp_path: Path) -> None:
    check = "\n\ndef test_hypothesis_is_not_imported():\n    import sys\n\n" \
            "    assert 'hypothesis' not in sys.modules\n"  # fmt: skip
    got = _guarded_run(_venv(tmp_path, "current"), tmp_path, tamper=False, extra_test=check)
    assert got is not None and got.problems == []
    assert got.statuses["tests/test_x.py::test_hypothesis_is_not_imported"] == "passed"


# A Hypothesis test in a unittest method's body (@given on the method itself:
# test_unittest_guard_wrappers.py). Without the rule it exceeds the default deadline (200 ms).
UNITTEST = """
import os
import time
import unittest

from hypothesis import given, settings, strategies as st

DRAWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "drawn.txt")


class T(unittest.TestCase):
    def test_slower_than_the_deadline(self):
        @settings(max_examples=3)
        @given(st.integers())
        def check(x):
            with open(DRAWN, "a") as f:
                f.write(repr(x) + "\\n")
            time.sleep(0.3)

        check()
"""


def test_the_unittest_runner_follows_the_same_rule(tmp_path: Path) -> None:
    program = {"module": "unittest", "args": ["-v", "tests.test_x"]}
    for run in ("one", "two"):
        result, _ = guarded(tmp_path / run, tests=UNITTEST, **program)
        assert result is not None and result.problems == []
        assert statuses(result) == {"tests.test_x.T.test_slower_than_the_deadline": "passed"}
    drawn = (tmp_path / "one" / "ws" / "tests" / "drawn.txt").read_text().splitlines()
    assert 0 < len(drawn) <= 3
    assert (tmp_path / "two" / "ws" / "tests" / "drawn.txt").read_text().splitlines() == drawn
