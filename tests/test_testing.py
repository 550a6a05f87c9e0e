"""Test selection, the pytest command, JUnit XML from real pytest runs (and matching their ids),
cross-checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swebounty.testids import match_results
from swebounty.testing import (
    JUnitError,
    TestOutcome,
    cross_check,
    parse_junit,
    pytest_command,
    test_files,
)

SUITE = """
import unittest
import pytest
from base import Base


@pytest.fixture
def broken():
    raise RuntimeError("fixture boom")


@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown boom")


def test_pass():
    pass


def test_fail():
    assert 1 == 2


def test_setup_error(broken):
    pass


def test_pass_teardown_error(bad_teardown):
    pass


def test_fail_teardown_error(bad_teardown):
    assert 0


@pytest.mark.skip(reason="not today")
def test_skip():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert 0


@pytest.mark.xfail(reason="known bug")
def test_xpass():
    pass


@pytest.mark.xfail(reason="strict", strict=True)
def test_xpass_strict():
    pass


@pytest.mark.parametrize("v", ["a b", "a c", "x[y] z", "\\u00e9 \\u00fc", 1.5])
def test_param(v):
    assert v != "x[y] z"


class TestOuter:
    def test_m(self):
        pass

    class TestInner:
        def test_n(self):
            pass


class TestSub(Base):
    pass


class UT(unittest.TestCase):
    def test_u(self):
        pass
"""

BASE = """
class Base:
    def test_inherited(self):
        pass
"""


def run_pytest(root: Path, files: list[str], junit: Path, family: str = "xunit1") -> int:
    argv = pytest_command([sys.executable, "-m", "pytest"], files, junit)
    argv = [a.replace("junit_family=xunit1", f"junit_family={family}") for a in argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # this machine's plugins cost ~1 s a start
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, env=env, check=False)
    return proc.returncode


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    (root / "pytest.ini").write_text("[pytest]\n")  # pins rootdir: ids relative to root
    (root / "tests").mkdir()
    (root / "tests/test_suite.py").write_text(SUITE)
    (root / "tests/base.py").write_text(BASE)
    (root / "tests/test_broken.py").write_text("import module_that_does_not_exist\n")
    return root


@pytest.fixture(scope="module")
def xunit1(suite: Path) -> tuple[int, dict[str, TestOutcome]]:
    code = run_pytest(suite, ["tests/test_suite.py"], suite / "x1.xml")
    return code, parse_junit(suite / "x1.xml")


T = "tests/test_suite.py::"


# ---------------------------------------------------------------------------- selection


def _diff(path: str, body: str = "+x = 1\n", deleted: bool = False) -> str:
    if deleted:
        return f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,0 +1,1 @@\n{body}"


def test_test_files_keeps_test_modules_and_drops_the_rest() -> None:
    patch = "".join(
        [
            _diff("tests/test_a.py"),
            _diff("src/pkg/core_test.py"),
            _diff("tests/unittest_nodes.py"),
            _diff("app/tests.py"),
            _diff("tests/conftest.py"),
            _diff("tests/__init__.py"),
            _diff("tests/test_gone.py", deleted=True),
            _diff("tests/data/test_sample_input.py"),
            _diff("tests/fixtures.json", "+{}\n"),
            _diff("tests/helpers.py", "+def helper():\n"),
            _diff("tests/checks.py", "+def test_it():\n"),
            _diff("pkg/testsuite/checks.py", "+def test_it():\n"),
            _diff("pkg/testsuite/helpers.py", "+def helper():\n"),
            _diff("tests/test_a.py"),
        ]
    )
    assert test_files(patch) == [
        "tests/test_a.py",
        "src/pkg/core_test.py",
        "tests/unittest_nodes.py",
        "app/tests.py",
        "tests/checks.py",
        "pkg/testsuite/checks.py",
    ]


def test_test_files_keeps_a_file_that_expected_ids_name() -> None:
    patch = _diff("tests/data/oddly_named.py")
    assert test_files(patch) == []
    assert test_files(patch, expected=["tests/data/oddly_named.py::test_x"]) == [
        "tests/data/oddly_named.py"
    ]


def test_a_test_patch_of_data_only_runs_the_files_the_expected_ids_name() -> None:
    patch = _diff("tests/data/expected.json", "+{}\n") + _diff("tests/conftest.py")
    expected = [
        "tests/test_io.py::test_reads[new]",
        "tests/test_io.py::test_other",
        "tests/test_more.py::TestX::test_y",
        "../outside.py::test_x",
        "/etc/abs.py::test_x",
        "tests/test_io.py",  # no test named: not an id of a test
    ]
    assert test_files(patch, expected=expected) == ["tests/test_io.py", "tests/test_more.py"]
    assert test_files(patch) == []


def test_pytest_command_has_the_reporting_flags_and_each_file_once(tmp_path: Path) -> None:
    argv = pytest_command(["py", "-m", "pytest"], ["a.py", "b.py", "a.py"], tmp_path / "j.xml")
    assert argv[:3] == ["py", "-m", "pytest"]
    for flag in ["-rap", f"--junitxml={tmp_path / 'j.xml'}", "--tb=short", "--color=no"]:
        assert flag in argv
    assert argv[argv.index("-o") + 1] == "junit_family=xunit1"
    assert f"cache_dir={tmp_path / 'swebounty-pytest-cache'}" in argv and "-p" not in argv
    assert argv[-3:] == ["--", "a.py", "b.py"]
    assert "--rootdir=/w" in pytest_command(["pytest"], [], tmp_path / "j", rootdir="/w")
    argv = pytest_command(["pytest"], ["t"], tmp_path / "j", ignore=["t/a", "t/b"])
    assert argv[-4:] == ["--ignore=t/a", "--ignore=t/b", "--", "t"]


# ---------------------------------------------------------------------------- JUnit XML


def test_real_junit_statuses(xunit1: tuple[int, dict[str, TestOutcome]]) -> None:
    code, outcomes = xunit1
    assert code == 1
    status = {k: o.status for k, o in outcomes.items()}
    assert status == {
        T + "test_pass": "passed",
        T + "test_fail": "failed",
        T + "test_setup_error": "error",
        T + "test_pass_teardown_error": "error",
        T + "test_fail_teardown_error": "failed",
        T + "test_skip": "skipped",
        T + "test_xfail": "skipped",
        T + "test_xpass": "passed",
        T + "test_xpass_strict": "failed",
        T + "test_param[a b]": "passed",
        T + "test_param[a c]": "passed",
        T + "test_param[x[y] z]": "failed",
        T + "test_param[\\xe9 \\xfc]": "passed",
        T + "test_param[1.5]": "passed",
        T + "TestOuter::test_m": "passed",
        T + "TestOuter::TestInner::test_n": "passed",
        T + "TestSub::test_inherited": "passed",  # the XML's file attribute says base.py
        T + "UT::test_u": "passed",
    }
    assert outcomes[T + "test_fail"].message == "assert 1 == 2"
    assert "fixture boom" in outcomes[T + "test_setup_error"].message
    assert "teardown boom" in outcomes[T + "test_fail_teardown_error"].message
    assert outcomes[T + "test_xfail"].message == "xfail: known bug"
    assert outcomes[T + "test_skip"].message == "not today"


def test_xunit2_gives_the_same_ids_with_the_files_that_ran(
    suite: Path, xunit1: tuple[int, dict[str, TestOutcome]]
) -> None:
    run_pytest(suite, ["tests/test_suite.py"], suite / "x2.xml", family="xunit2")
    assert b" file=" not in (suite / "x2.xml").read_bytes()
    assert parse_junit(suite / "x2.xml", files=["tests/test_suite.py"]) == xunit1[1]
    # Without the hint, CapWords parts are taken as classes: right for this suite too.
    assert parse_junit(suite / "x2.xml").keys() == xunit1[1].keys()


def test_import_error_is_keyed_by_file_and_explains_exit_code_2(suite: Path) -> None:
    files = ["tests/test_broken.py", "tests/test_suite.py"]
    code = run_pytest(suite, files, suite / "broken.xml")
    outcomes = parse_junit(suite / "broken.xml")
    assert code == 2
    assert outcomes.keys() == {"tests/test_broken.py"}
    assert outcomes["tests/test_broken.py"].status == "error"
    matched = match_results(
        ["tests/test_broken.py::test_x", "tests/test_suite.py::test_pass"], outcomes
    )
    assert matched["tests/test_broken.py::test_x"].status == "error"
    assert "failed to import" in matched["tests/test_broken.py::test_x"].message
    assert matched["tests/test_suite.py::test_pass"].status == "missing"
    assert "test_broken.py" in (cross_check(code, outcomes) or "")


def test_nested_testsuites(tmp_path: Path) -> None:
    xml = tmp_path / "j.xml"
    xml.write_text(
        '<testsuites><testsuite name="a"><testsuite name="b">'
        '<testcase classname="pkg.tests.test_x.TestC" name="test_y[p q]" file="pkg/tests/test_x.py"/>'
        '<testcase classname="pkg.tests.test_x" name="test_z" file="pkg/tests/test_x.py">'
        '<failure message="boom">trace</failure></testcase>'
        "</testsuite></testsuite></testsuites>"
    )
    assert parse_junit(xml) == {
        "pkg/tests/test_x.py::TestC::test_y[p q]": TestOutcome("passed"),
        "pkg/tests/test_x.py::test_z": TestOutcome("failed", "boom"),
    }


def test_bad_junit_files_raise(tmp_path: Path) -> None:
    with pytest.raises(JUnitError, match="did not finish"):
        parse_junit(tmp_path / "absent.xml")
    truncated = tmp_path / "t.xml"
    truncated.write_text('<testsuites><testsuite><testcase classname="a" name="b">')
    with pytest.raises(JUnitError, match="not valid XML"):
        parse_junit(truncated)
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>')
    with pytest.raises(JUnitError, match="DOCTYPE"):
        parse_junit(bomb)
    link = tmp_path / "link.xml"
    link.symlink_to("/proc/self/environ")  # a planted link is never followed
    with pytest.raises(JUnitError, match="did not finish"):
        parse_junit(link)
    fifo = tmp_path / "fifo.xml"
    os.mkfifo(fifo)  # nobody writes it: a blocking open would hang the harness
    with pytest.raises(JUnitError, match="did not finish"):
        parse_junit(fifo)
    big = tmp_path / "big.xml"
    big.write_text("<testsuites>" + " " * 100 + "</testsuites>")
    with pytest.raises(JUnitError, match="limit"):
        parse_junit(big, max_bytes=50)


# ---------------------------------------------------------------------------- ids of a real run
# (the matching rules themselves: test_testids.py)


def test_truncated_ids_match_a_real_run(xunit1: tuple[int, dict[str, TestOutcome]]) -> None:
    outcomes = xunit1[1]
    results = match_results([T + "test_param[a", T + "test_param[\\xe9", "test_m"], outcomes)
    assert {k: o.status for k, o in results.items()} == {
        T + "test_param[a": "passed",
        T + "test_param[\\xe9": "passed",
        "test_m": "passed",
    }


# ---------------------------------------------------------------------------- cross-check

PASSED = {"t.py::a": TestOutcome("passed")}
FAILED = {"t.py::a": TestOutcome("failed")}


@pytest.mark.parametrize(
    ("code", "outcomes", "expect"),
    [
        (0, PASSED, None),
        (1, FAILED, None),
        (0, FAILED, "exit code 0 but the JUnit XML reports 1 failed"),
        (0, {}, "holds no test"),
        (1, PASSED, "reports no failure"),
        (2, PASSED, "interrupted"),
        (3, PASSED, "internal error"),
        (4, {}, "usage error"),
        (5, {}, "no tests"),
        (-9, {}, "signal 9"),
        (137, {}, "signal 9"),
        (7, PASSED, "unexpected exit code 7"),
        (0, None, "no JUnit XML"),
    ],
)
def test_cross_check(
    code: int, outcomes: dict[str, TestOutcome] | None, expect: str | None
) -> None:
    problem = cross_check(code, outcomes)
    if expect is None:
        assert problem is None
    else:
        assert problem is not None and expect in problem


def test_the_workspace_root_in_a_test_id_is_written_as_testbed(tmp_path: Path) -> None:
    from swebounty.testing import WORKSPACE_IN_IDS, without_workspace

    real = tmp_path / "real" / "werkzeug-3101-ab12"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    ws = tmp_path / "link"  # as the run was given it; pytest may name the resolved path
    ids = {
        f"tests/t.py::test_p[{ws}/tests/res/a.txt]": "passed",
        f"tests/t.py::test_q[{real}/tests/b.py-{real}]": "failed",
        f"tests/t.py::test_r[{ws}-x]": "passed",
        f"tests/t.py::test_s[{real}2/a]": "passed",  # another folder: its name goes on
        f"tests/t.py::test_t[{real}.bak/a]": "passed",
        "tests/t.py::test_u[/elsewhere/a]": "skipped",
    }
    got = without_workspace({k: TestOutcome(v) for k, v in ids.items()}, ws)  # type: ignore[arg-type]
    assert {k: o.status for k, o in got.items()} == {
        f"tests/t.py::test_p[{WORKSPACE_IN_IDS}/tests/res/a.txt]": "passed",
        f"tests/t.py::test_q[{WORKSPACE_IN_IDS}/tests/b.py-{WORKSPACE_IN_IDS}]": "failed",
        f"tests/t.py::test_r[{WORKSPACE_IN_IDS}-x]": "passed",
        f"tests/t.py::test_s[{real}2/a]": "passed",
        f"tests/t.py::test_t[{real}.bak/a]": "passed",
        "tests/t.py::test_u[/elsewhere/a]": "skipped",
    }
    # Two ids that become one (the same path given both ways): the worse outcome stands.
    both = {
        f"t.py::test_p[{ws}]": TestOutcome("passed"),
        f"t.py::test_p[{real}]": TestOutcome("failed"),
    }
    assert {k: o.status for k, o in without_workspace(both, ws).items()} == {
        f"t.py::test_p[{WORKSPACE_IN_IDS}]": "failed"
    }
    assert match_results([f"t.py::test_p[{WORKSPACE_IN_IDS}]"], without_workspace(both, ws))
