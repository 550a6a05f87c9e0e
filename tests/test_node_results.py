"""Structured JavaScript results read safely, and expected ids matched as datasets name them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from swebounty.node.results import (
    cross_check,
    match,
    outcomes_of,
    parse_jest,
    parse_junit_js,
    read_untrusted,
    write_junit,
)
from swebounty.testing import JUnitError, parse_junit


def jest_report(ws: Path) -> dict[str, object]:
    return {
        "numFailedTests": 1,
        "testResults": [
            {"name": str(ws / "test/timezone.test.js"), "status": "failed", "message": "",
             "assertionResults": [
                 {"ancestorTitles": [], "title": "TZ with Locale", "status": "failed",
                  "failureMessages": ["\x1b[31mExpected 0, got 8\x1b[0m"]},
                 {"ancestorTitles": [], "title": "Diff (DST)", "status": "passed"},
             ]},
            {"name": str(ws / "tests/card.test.js"), "status": "passed", "message": "",
             "assertionResults": [
                 {"ancestorTitles": ["Card"], "title": "renders", "status": "passed"},
                 {"ancestorTitles": ["Card", "title"], "title": "hides", "status": "pending"},
             ]},
            {"name": str(ws / "tests/broken.test.js"), "status": "failed",
             "message": "SyntaxError: Unexpected token", "assertionResults": []},
        ],
    }  # fmt: skip


@pytest.fixture()
def jest(tmp_path: Path) -> Path:
    out = tmp_path / "out" / "jest.json"
    out.parent.mkdir()
    out.write_text(json.dumps(jest_report(tmp_path / "ws")))
    return out


def test_jest_ids_the_multi_swe_bench_way(jest: Path, tmp_path: Path) -> None:
    results = parse_jest(jest, tmp_path / "ws")
    got = match(
        [
            "test/timezone.test.js",  # a whole file: FAIL
            "test/timezone.test.js:TZ with Locale",
            "test/timezone.test.js:Diff (DST)",
            "tests/card.test.js",  # PASS: a skipped test does not fail its file
            "tests/card.test.js:renders",
            "tests/card.test.js:Card renders",  # file + full title
            "Card title hides",  # full title alone
            "Card > renders",  # vitest's arrow form
            "tests/broken.test.js",
            "tests/broken.test.js:anything",
            "tests/card.test.js:gone",
            "no such test",
        ],
        results,
    )
    status = {k: v.status for k, v in got.items()}
    assert status == {
        "test/timezone.test.js": "failed",
        "test/timezone.test.js:TZ with Locale": "failed",
        "test/timezone.test.js:Diff (DST)": "passed",
        "tests/card.test.js": "passed",
        "tests/card.test.js:renders": "passed",
        "tests/card.test.js:Card renders": "passed",
        "Card title hides": "skipped",
        "Card > renders": "passed",
        "tests/broken.test.js": "error",
        "tests/broken.test.js:anything": "error",
        "tests/card.test.js:gone": "missing",
        "no such test": "missing",
    }
    assert got["test/timezone.test.js:TZ with Locale"].message == "Expected 0, got 8"
    assert "SyntaxError" in got["tests/broken.test.js"].message


def test_one_id_for_several_tests_needs_all_to_pass(tmp_path: Path) -> None:
    out = tmp_path / "mocha.xml"
    out.write_text(
        '<testsuite name="Mocha Tests" tests="3">'
        '<testcase classname="req .hostname" name="should work" file="/ws/test/req.js"/>'
        '<testcase classname="res .send" name="should work" file="/ws/test/res.js">'
        '<failure message="boom">AssertionError</failure></testcase>'
        '<testcase classname="Route errors" name="should handle throws " file="/ws/test/Route.js"/>'
        '<testcase classname="http" name="reads a String (text)" file="/ws/test/http.js"/>'
        '<testcase classname="app" name="&quot;before all&quot; hook for &quot;x&quot;" '
        'file="/ws/test/app.js"><failure message="EADDRINUSE"/></testcase>'
        "</testsuite>"
    )
    results = parse_junit_js(out, Path("/ws"), "mocha")
    got = match(
        ["should work", "Route errors should handle throws", "test/app.js", "reads a String"],
        results,
    )
    assert got["reads a String"].status == "passed"  # a log parser took "(text)" for a time
    assert got["should work"].status == "failed" and "1 of 2" in got["should work"].message
    assert got["Route errors should handle throws"].status == "passed"
    assert got["test/app.js"].status == "error" and "EADDRINUSE" in got["test/app.js"].message


def test_vitest_junit(tmp_path: Path) -> None:
    out = tmp_path / "vitest.xml"
    out.write_text(
        '<testsuites><testsuite name="src/a.test.ts">'
        '<testcase classname="src/a.test.ts" name="math &gt; adds"/>'
        '<testcase classname="src/a.test.ts" name="math &gt; skips"><skipped/></testcase>'
        "</testsuite></testsuites>"
    )
    results = parse_junit_js(out, tmp_path, "vitest")
    got = match(["src/a.test.ts > math > adds", "src/a.test.ts:math adds", "math > skips"], results)
    assert [o.status for o in got.values()] == ["passed", "passed", "skipped"]


def test_results_files_are_read_defensively(tmp_path: Path, jest: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(jest)
    with pytest.raises(JUnitError, match="safely"):
        read_untrusted(link)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(JUnitError, match="not a regular file"):
        read_untrusted(fifo)
    with pytest.raises(JUnitError, match="limit"):
        read_untrusted(jest, max_bytes=10)
    with pytest.raises(JUnitError, match="wrote none"):
        parse_jest(tmp_path / "missing.json", tmp_path)
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<!DOCTYPE x [<!ENTITY a "a">]><testsuite/>')
    with pytest.raises(JUnitError, match="ENTITY"):
        parse_junit_js(bomb, tmp_path, "mocha")
    (tmp_path / "cut.json").write_text('{"testResults": [')
    with pytest.raises(JUnitError, match="not JSON"):
        parse_jest(tmp_path / "cut.json", tmp_path)


def test_cross_check(jest: Path, tmp_path: Path) -> None:
    results = parse_jest(jest, tmp_path / "ws")
    assert cross_check("jest", 1, results) is None
    assert "exit code 0 but" in (cross_check("jest", 0, results) or "")
    assert "signal 9" in (cross_check("jest", -9, results) or "")
    assert "no test results" in (cross_check("jest", 1, None) or "")
    clean = parse_jest(jest, tmp_path / "ws")
    clean.cases = [c for c in clean.cases if c.status == "passed"]
    clean.file_errors = {}
    assert "no failure" in (cross_check("mocha", 3, clean) or "")


def test_outcomes_and_junit_for_the_logs(jest: Path, tmp_path: Path) -> None:
    results = parse_jest(jest, tmp_path / "ws")
    outcomes = outcomes_of(results)
    assert outcomes["test/timezone.test.js::TZ with Locale"].status == "failed"
    assert (
        match(["test/timezone.test.js::TZ with Locale"], results)[
            "test/timezone.test.js::TZ with Locale"
        ].status
        == "failed"
    )  # fresh tasks' ids read back
    assert outcomes["tests/broken.test.js"].status == "error"
    write_junit(results, tmp_path / "junit.xml")
    assert len(parse_junit(tmp_path / "junit.xml")) >= 4


def test_a_test_fails_if_it_fails_in_any_run(jest: Path, tmp_path: Path) -> None:
    utc = parse_jest(jest, tmp_path / "ws")
    other = parse_jest(jest, tmp_path / "ws")
    for case in utc.cases:
        case.status = "passed"
    utc.file_errors, utc.files = {}, dict.fromkeys(utc.files, "passed")
    merged = utc.merged(other)
    got = match(["test/timezone.test.js", "test/timezone.test.js:TZ with Locale"], merged)
    assert [o.status for o in got.values()] == ["failed", "failed"]
    assert (
        match(["test/timezone.test.js:Diff (DST)"], merged)[
            "test/timezone.test.js:Diff (DST)"
        ].status
        == "passed"
    )
