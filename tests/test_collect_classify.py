"""How validation reads a test's statuses over the runs before and after the reference patch:
FAIL_TO_PASS, PASS_TO_PASS and flaky."""

from __future__ import annotations

from swebounty.collect.validate import classify


def test_classify() -> None:
    before = [
        {"a": "failed", "b": "passed", "c": "passed", "d": "error", "e": "skipped"},
        {"a": "failed", "b": "passed", "c": "failed", "d": "error", "e": "skipped"},
    ]
    after = [
        {"a": "passed", "b": "passed", "c": "passed", "d": "passed", "e": "passed", "f": "passed"},
        {"a": "passed", "b": "passed", "c": "passed", "d": "failed", "e": "passed", "f": "passed"},
    ]
    result = classify(before, after)
    assert result.fail_to_pass == ["a", "f"]  # f: missing before (its module did not import)
    assert result.pass_to_pass == ["b"]
    assert result.flaky == ["c", "d"]


def test_failing_is_one_outcome_however_it_fails() -> None:
    # Failed in one run, an error at setup in another (a thread of an earlier test raised into
    # it), not collected in a third: it fails before in every run, and passes after.
    before = [{"t": "failed", "u": "passed"}, {"t": "error", "u": "passed"}, {"u": "passed"}]
    after = [{"t": "passed", "u": "failed"}, {"t": "passed", "u": "error"}, {"t": "passed"}]
    result = classify(before, after)
    assert result.fail_to_pass == ["t"]
    assert result.flaky == []  # u fails after in every run: neither label, not flaky
    assert result.pass_to_pass == []
