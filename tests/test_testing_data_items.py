"""Items a project's conftest.py collects from data files (pygments' lexer snippets): which
files of a test patch pytest is handed, how their nameless JUnit cases are keyed, and what the
guard checks of them. The whole path on a small repository: test_data_only_patch.py."""

from __future__ import annotations

from pathlib import Path

from swebounty.pytest_guard import disagreements
from swebounty.testing import TestOutcome, data_files, parse_junit, parse_junit_bytes, test_files
from test_pytest_guard import XML
from test_testing import _diff, run_pytest


def test_a_test_patch_without_a_test_module_hands_its_data_files_in_test_folders() -> None:
    patch = "".join(
        [
            _diff("tests/snippets/python/test_a.txt"),
            _diff("tests/examplefiles/php/test.php.output"),
            _diff("tests/snippets/gone.txt", deleted=True),
            _diff("tests/helpers.py", "+def helper():\n"),  # .py: pytest would import it
            _diff("docs/example.txt"),  # not in a test folder
            _diff("tests/data/cases.json"),  # what tests read
            _diff("tests/odd::name.txt"),  # pytest would read it as `file::name`
            _diff("-tests/x.txt"),  # an option to pytest
            _diff("tests/../../outside.txt"),
            _diff("tests/snippets/python/test_a.txt"),
        ]
    )
    assert test_files(patch) == []
    assert data_files(patch) == [
        "tests/snippets/python/test_a.txt",
        "tests/examplefiles/php/test.php.output",
    ]
    # In eval, the data files the expected ids name (nameless items: `file::`) are run.
    assert test_files(patch, expected=["tests/snippets/python/test_a.txt::"]) == [
        "tests/snippets/python/test_a.txt"
    ]


# A project's conftest.py that collects `.txt` files as items without a name of their own, as
# pygments' tests/snippets/conftest.py does; `stop` in a snippet stops the session.
SNIPPET_CONFTEST = """
import pytest


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".txt":
        return Snippet.from_parent(parent, path=file_path)


class Snippet(pytest.File):
    def collect(self):
        yield Item.from_parent(self, name="")


class Item(pytest.Item):
    def runtest(self):
        text = self.path.read_text()
        if text.startswith("stop"):
            pytest.exit("stopped", returncode=1)
        assert text.startswith("ok")

    def reportinfo(self):
        return self.path, None, ""
"""


def test_nameless_items_of_the_files_run_are_keyed_by_their_node_id(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "tests/snippets").mkdir(parents=True)
    (tmp_path / "tests/conftest.py").write_text(SNIPPET_CONFTEST)
    for name, text in {"good": "ok\n", "bad": "no\n", "stop": "stop\n"}.items():
        (tmp_path / f"tests/snippets/{name}.txt").write_text(text)
    files = ["tests/snippets/good.txt", "tests/snippets/bad.txt"]
    assert run_pytest(tmp_path, files, tmp_path / "j.xml") == 1
    data = (tmp_path / "j.xml").read_bytes()
    assert b'name=""' in data
    status = {k: o.status for k, o in parse_junit_bytes(data, files=files).items()}
    assert status == {"tests/snippets/good.txt::": "passed", "tests/snippets/bad.txt::": "failed"}
    # From a rootdir below the repository's root, the files run are named from the root.
    assert parse_junit_bytes(data, files=["sub/" + f for f in files]).keys() == status.keys()
    # A nameless case of a file that was not run is not a test of this run.
    assert parse_junit_bytes(data, files=files[:1]).keys() == {"tests/snippets/good.txt::"}
    # A stopped session's bare testcase names no file: it never counts as a passing test.
    files = ["tests/snippets/stop.txt"]
    run_pytest(tmp_path, files, tmp_path / "stop.xml")
    assert b"<testcase " in (tmp_path / "stop.xml").read_bytes()
    assert parse_junit(tmp_path / "stop.xml", files=files) == {}


def test_a_nameless_case_must_be_its_files_item() -> None:
    def cases(*attrs: str) -> bytes:
        body = "".join(f"<testcase {a}/>" for a in attrs)
        return f"<testsuites><testsuite>{body}</testsuite></testsuites>".encode()

    files = ["tests/a.txt", "tests/t.py"]
    forged = cases(
        'classname="tests.b.txt" name="" file="tests/a.txt"',  # not the file's classname
        'classname="" name="" file="tests/a.txt"',
        'classname="tests.t" name="" file=""',
        'classname="tests.a.txt" name=""',  # no file
        "",  # pytest's own, when a session is stopped
    )
    assert parse_junit_bytes(forged, files=files) == {}
    ok = cases('classname="tests.t" name="" file="tests/t.py"')  # `.py`, dropped as pytest does
    assert parse_junit_bytes(ok, files=files) == {"tests/t.py::": TestOutcome("passed")}


def test_a_nameless_item_pytest_never_reported_disagrees() -> None:
    xml = XML.replace(b"</testsuite>", b'<testcase classname="s.a.txt" name="" file="s/a.txt"/>'
                      b"</testsuite>")  # fmt: skip
    outcomes = parse_junit_bytes(xml, files=["t.py", "s/a.txt"])
    seen = {"t.py::test_a": "passed", "t.py::test_b": "failed"}
    assert outcomes["s/a.txt::"].status == "passed"
    problems = disagreements(xml, outcomes, seen)
    assert problems == ["the JUnit XML holds s/a.txt:: (passed), a test pytest never reported"]
    assert disagreements(xml, outcomes, {**seen, "s/a.txt::": "passed"}) == []


def test_pytest_runs_the_data_files_of_a_patch_without_a_test_module_beside_the_ids_modules() -> (
    None
):
    from swebounty.frameworks.pytest import Pytest
    from swebounty.tasks import Task

    def task(patch: str, expected: list[str]) -> Task:
        return Task(instance_id="o__r-1", repo="o/r", base_commit="abc", test_patch=patch,
                    FAIL_TO_PASS=expected)  # fmt: skip

    data = _diff("tests/snippets/a.txt") + _diff("tests/examplefiles/x.out")
    both = ["tests/snippets/a.txt", "tests/examplefiles/x.out"]
    assert Pytest().test_files(task(data, [])) == both
    # Evaluation runs what validation ran, whatever the ids name (the items of x.out's input).
    assert Pytest().test_files(task(data, ["tests/examplefiles/x::"])) == both
    assert Pytest().test_files(task(data, ["tests/test_io.py::test_x"])) == [
        "tests/test_io.py",
        *both,
    ]
    # A patch with a test module runs its modules only, as before.
    assert Pytest().test_files(task(data + _diff("tests/test_m.py"), [])) == ["tests/test_m.py"]
