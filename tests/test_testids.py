"""Matching SWE-bench's test ids to the nodes that ran: every rule, and how several matches add up."""

from __future__ import annotations

import pytest

from swebounty.testids import match_results
from swebounty.testing import TestOutcome

OUTCOMES = {
    "tests/t.py::test_a": TestOutcome("passed"),
    "tests/t.py::test_p[a b]": TestOutcome("passed"),
    "tests/t.py::test_p[a c]": TestOutcome("failed", "no"),
    "tests/t.py::test_p[z]": TestOutcome("passed"),
    "tests/t.py::test_q[1]": TestOutcome("passed"),
    "tests/t.py::test_q[2]": TestOutcome("passed"),
    "tests/t.py::TestK::test_m": TestOutcome("passed"),
    "tests/t.py::TestK::Inner::test_n": TestOutcome("skipped", "why"),
    "sympy/core/tests/test_basic.py::test_foo": TestOutcome("passed"),
    "sympy/core/tests/test_other.py::test_dup": TestOutcome("passed"),
    "sympy/core/tests/test_basic.py::test_dup": TestOutcome("error", "setup"),
    "tests/admin_views/tests.py::AdminViewTests::test_changelist": TestOutcome("passed"),
    "tests/t.py::test_sql[NULL::INT]": TestOutcome("passed"),
    "tests/t.py::test_sql[NULL::INT AS x]": TestOutcome("failed", "no"),
    "tests/t.py::TestK::test_sql[a::b c]": TestOutcome("passed"),
    "tests/t.py::TestK::test_stdin[/ws/tests/mod.py-mod-/ws/tests/mod.py]": TestOutcome("passed"),
    "tests/t.py::test_glob[/ws/*.py]": TestOutcome("passed"),
    "tests/t.py::test_u[1234-12340]": TestOutcome("passed"),
    "tests/t.py::test_u[1234-12341]": TestOutcome("failed", "no"),
}


@pytest.mark.parametrize(
    ("test_id", "status"),
    [
        ("tests/t.py::test_a", "passed"),  # exact
        ("t.py::test_a", "passed"),  # other rootdir
        ("repo/tests/t.py::test_a", "passed"),
        ("tests/t.py::test_p[z]", "passed"),  # parametrized, exact
        ("tests/t.py::test_p[a", "failed"),  # cut at a space: both [a b] and [a c]
        ("tests/t.py::test_q", "passed"),  # all parametrizations
        ("tests/t.py::TestK::test_m", "passed"),  # class-qualified
        ("tests/t.py::TestK::Inner::test_n", "skipped"),
        ("test_foo", "passed"),  # bare name (sympy)
        ("test_dup", "error"),  # bare name in two files: all must pass
        ("test_q[2]", "passed"),
        ("TestK.test_m", "passed"),  # dotted
        ("test_changelist (admin_views.tests.AdminViewTests)", "passed"),  # unittest style
        ("test_changelist (admin_views.tests.AdminViewTests.test_changelist)", "passed"),
        ("test_changelist (other.tests.AdminViewTests)", "missing"),
        # `::` inside parameters is text, not a class separator (sqlfluff's ids)
        ("tests/t.py::test_sql[NULL::INT]", "passed"),
        ("tests/t.py::test_sql[NULL::INT", "failed"),  # cut at a space
        ("test_sql[NULL::INT]", "passed"),  # bare with parameters
        ("tests/t.py::TestK::test_sql[a::b", "passed"),
        ("TestK.test_sql[a::b c]", "passed"),
        # parameters that are absolute paths, cut to /basename as SWE-bench's parser does
        ("tests/t.py::TestK::test_stdin[/mod.py]", "passed"),
        ("test_stdin[/mod.py]", "passed"),
        ("tests/t.py::TestK::test_stdin[/other.py]", "missing"),
        ("tests/t.py::test_glob[/*.py]", "missing"),  # a glob is left as it is
        # a duplicated id numbered by pytest 8 (`_0`) for one numbered by an older pytest
        ("tests/t.py::test_u[1234-1234_0]", "passed"),
        ("tests/t.py::test_u[1234-1234_1]", "failed"),
        ("tests/t.py::test_u[1234-1234_2]", "missing"),
        ("[100%]", "passed"),  # not a test: SWE-bench's parser read pytest's progress column
        ("tests/t.py::test_p[a b", "missing"),  # a prefix that is not cut at a space
        ("tests/t.py::test_", "missing"),
        ("tests/u.py::test_a", "missing"),
        ("test_nothing", "missing"),
    ],
)
def test_match_rules(test_id: str, status: str) -> None:
    assert match_results([test_id], OUTCOMES)[test_id].status == status


def test_several_matches_name_the_ones_that_did_not_pass() -> None:
    outcome = match_results(["tests/t.py::test_p[a"], OUTCOMES)["tests/t.py::test_p[a"]
    assert outcome.message == "1 of 2 matching tests did not pass: tests/t.py::test_p[a c]: failed"
    assert match_results(["x"], {})["x"] == TestOutcome("missing", "never ran")


def test_a_nameless_item_matches_its_own_id_only() -> None:
    # Items a conftest.py collects from data files without a name (pygments' snippets).
    outcomes = {
        "tests/snippets/a.txt::": TestOutcome("passed"),
        "tests/snippets/b.txt::": TestOutcome("passed"),
        "tests/t.py::test_a": TestOutcome("failed", "no"),
    }
    results = match_results(
        ["tests/snippets/a.txt::", "", "tests/snippets/a.txt::test_x", "tests/t.py::", "::"],
        outcomes,
    )
    assert {k: o.status for k, o in results.items()} == {
        "tests/snippets/a.txt::": "passed",
        "": "missing",  # a bare empty id would match every nameless item
        "tests/snippets/a.txt::test_x": "missing",
        "tests/t.py::": "missing",
        "::": "missing",
    }
