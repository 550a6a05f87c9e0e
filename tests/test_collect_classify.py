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


def test_every_case_of_a_parametrized_test_with_a_flaky_case_is_flaky() -> None:
    before = [
        {"t.py::jit[a]": "passed", "t.py::jit[b]": "passed", "t.py::fix[a]": "failed"},
        {"t.py::jit[a]": "passed", "t.py::jit[b]": "failed", "t.py::fix[a]": "failed"},
    ]
    after = [
        {"t.py::jit[a]": "passed", "t.py::jit[b]": "passed", "t.py::fix[a]": "passed"},
        {"t.py::jit[a]": "passed", "t.py::jit[b]": "passed", "t.py::fix[a]": "passed"},
    ]
    after[0]["t.py::C::jit[x]"] = after[1]["t.py::C::jit[x]"] = "passed"  # another function
    for run in before:
        run["t.py::C::jit[x]"] = "passed"
        run["u.py::jit"] = "passed"
    for run in after:
        run["u.py::jit"] = "passed"
    result = classify(before, after)
    assert result.flaky == ["t.py::jit[a]", "t.py::jit[b]"]
    assert result.fail_to_pass == ["t.py::fix[a]"]
    assert result.pass_to_pass == ["t.py::C::jit[x]", "u.py::jit"]
