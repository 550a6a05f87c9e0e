"""unittestids.py: SWE-bench's unittest-style ids matched to the unittest guard's records."""

from __future__ import annotations

from swebounty.unittestids import canonical, left_out, match_unittest

RECORDS: dict[str, dict[str, str | None]] = {
    "forms.tests.T.test_ok": {"status": "passed", "kind": "test", "doc": "Adds one."},
    "forms.tests.T.test_bad": {"status": "failed", "kind": "test", "message": "AssertionError"},
    "forms.tests.T.test_same_doc": {"status": "passed", "kind": "test", "doc": "Shared."},
    "forms.tests.U.test_same_doc": {"status": "error", "kind": "test", "doc": "Shared."},
    "forms.tests.T.test_skip": {"status": "skipped", "kind": "test", "message": "skipped: db"},
    "setUpClass (forms.tests.Broken)": {"status": "error", "kind": "fixture", "message": "E"},
    "tests": {"status": "error", "kind": "import", "message": "ImportError: x"},
}


def test_both_unittest_formats_and_the_dotted_id_name_one_test() -> None:
    assert canonical("test_ok (forms.tests.T)") == "forms.tests.T.test_ok"
    assert canonical("test_ok (forms.tests.T.test_ok)") == "forms.tests.T.test_ok"
    assert canonical("forms.tests.T.test_ok") == "forms.tests.T.test_ok"
    assert canonical("Adds one.") is None
    got = match_unittest(
        ["test_ok (forms.tests.T)", "test_ok (forms.tests.T.test_ok)", "forms.tests.T.test_ok"],
        RECORDS,
    )
    assert {o.status for o in got.values()} == {"passed"}


def test_each_status_is_kept() -> None:
    got = match_unittest(["test_bad (forms.tests.T)", "test_skip (forms.tests.T)"], RECORDS)
    assert got["test_bad (forms.tests.T)"].status == "failed"
    assert got["test_skip (forms.tests.T)"].status == "skipped"


def test_a_docstring_id_stands_for_every_test_with_that_first_line() -> None:
    got = match_unittest(["Adds one.", "Shared.", "Nobody says this."], RECORDS)
    assert got["Adds one."].status == "passed"
    assert got["Shared."].status == "error"
    assert "forms.tests.U.test_same_doc: error" in got["Shared."].message
    assert got["Nobody says this."].status == "missing"


def test_a_docstring_id_leaves_out_the_tests_that_skipped_but_not_those_that_failed() -> None:
    records: dict[str, dict[str, str | None]] = {
        f"cache.tests.{c}.test_zero": {"status": s, "kind": "test", "doc": "Zero timeout."}
        for c, s in (("LocMem", "passed"), ("File", "passed"), ("PyLibMC", "skipped"))
    }
    got = match_unittest(["Zero timeout."], records)["Zero timeout."]
    assert got.status == "passed" and "2 passed; 1 skipped" in got.message
    records["cache.tests.File.test_zero"]["status"] = "failed"
    assert match_unittest(["Zero timeout."], records)["Zero timeout."].status == "failed"
    for record in records.values():  # none ran: not a pass
        record["status"] = "skipped"
    assert match_unittest(["Zero timeout."], records)["Zero timeout."].status == "skipped"


def test_tests_that_never_ran_say_why() -> None:
    got = match_unittest(
        ["test_x (forms.tests.Broken)", "test_y (gone.tests.C)", "test_z (forms.other.T)"],
        RECORDS,
    )
    assert got["test_x (forms.tests.Broken)"].status == "error"
    assert "setUpClass (forms.tests.Broken)" in got["test_x (forms.tests.Broken)"].message
    assert got["test_y (gone.tests.C)"].status == "error"
    assert got["test_z (forms.other.T)"].status == "missing"


def test_an_unknown_status_is_an_error_not_a_pass() -> None:
    records = {"m.C.test": {"status": "PASSED!", "kind": "test"}}
    assert match_unittest(["m.C.test"], records)["m.C.test"].status == "error"


def test_the_members_a_docstring_id_left_out_are_named() -> None:
    records: dict[str, dict[str, str | None]] = {
        f"cache.tests.{c}.test_zero": {"status": s, "kind": "test", "doc": "Zero timeout."}
        for c, s in (("LocMem", "passed"), ("File", "skipped"), ("PyLibMC", "skipped"))
    }
    records["m.C.test_one"] = {"status": "skipped", "kind": "test", "doc": "Alone."}
    expected = ["Zero timeout.", "Alone.", "test_one (m.C)"]
    assert left_out(expected, records) == {
        "Zero timeout.": ["cache.tests.File.test_zero", "cache.tests.PyLibMC.test_zero"]
    }  # one member alone, or a test named by its id: nothing left out
    records["cache.tests.LocMem.test_zero"]["status"] = "failed"
    assert left_out(expected, records) == {}  # not a pass: nothing to confirm
