"""The per-test time limit's default, in a module light enough for the CLI's --help.

The limit itself is enforced inside the test process by the pytest guard
(pytest_guard/timelimit.py); the Policy carries it (`Policy.test_limit_s`).
"""

from __future__ import annotations

from collections.abc import Mapping

# The slowest honest tests in the JUnit XML of the fresh-task validations and evaluations run
# so far (3,416 runs, 2026-11) took 206 s (pygments' test_xml_redos_resistance, on a loaded
# 2-core machine), 203 s and 148 s (mpmath's test_format), 135 s (cattrs), 87 s (seaborn):
# the default is ~3 times the slowest, so no honest test is cut on a busy machine, and a third
# of the run's 1,800 s, so the run still finishes after one hung test (docs/integrity.md,
# "One test that hangs").
DEFAULT_TEST_LIMIT_S = 600.0

# How the message of a test stopped at the limit starts (timelimit.MESSAGE, which runs inside
# the sandbox and cannot import this; tests/security/test_time_limit_attacks.py checks both).
STOPPED = "swebounty: this test ran longer than"


def stopped(outcomes: Mapping[str, object]) -> list[str]:
    """The test ids of `outcomes` (id -> TestOutcome) that were stopped at the time limit."""
    return sorted(t for t, o in outcomes.items() if STOPPED in (getattr(o, "message", "") or ""))
