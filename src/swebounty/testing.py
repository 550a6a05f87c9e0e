"""Which tests to run, how to run them, and what became of each one.

Results come from the JUnit XML pytest writes to a path the harness chooses, never from log
regexes; the exit code is only a cross-check. Expected test ids (FAIL_TO_PASS/PASS_TO_PASS) are
matched against the node ids rebuilt from that XML in testids.py.
"""

from __future__ import annotations

import logging
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import defusedxml.ElementTree as DefusedET
from defusedxml import DefusedXmlException

from swebounty import safefs
from swebounty.diffs import parse_patch
from swebounty.verdicts import TestStatus

log = logging.getLogger(__name__)

DEFAULT_MAX_JUNIT_BYTES = 64 * 1024 * 1024
MESSAGE_CHARS = 2000

# Worst first: the worse outcome speaks for a node pytest wrote twice, and (testids.py) for the
# several nodes one expected id stands for.
SEVERITY: dict[str, int] = {"failed": 4, "error": 3, "missing": 2, "skipped": 1, "passed": 0}


class JUnitError(Exception):
    """The JUnit XML is missing, too large or not XML: the test run did not finish."""


@dataclass(frozen=True)
class TestOutcome:
    """What happened to one test (or to one expected id, after matching)."""

    __test__ = False  # not a pytest test class, despite the name

    status: TestStatus
    message: str = ""


# ---------------------------------------------------------------------------- which tests

_TEST_MODULE = re.compile(r"^(test_.*|.*_tests?|tests?|unittest_.*)\.py$")
_TEST_DIRS = {"test", "tests", "testing", "testsuite"}  # testsuite: pint's
# Python files that tests read as data (pylint's regrtest_data, pytest's example_scripts...).
_DATA_DIRS = {"data", "testdata", "test_data", "regrtest_data", "example_scripts", "input"}
_DEFINES_TESTS = re.compile(r"^\s*(?:async\s+)?def test|^\s*class Test|TestCase\b")


def test_files(test_patch: str, *, expected: Iterable[str] = ()) -> list[str]:
    """The test modules the test patch touches, in patch order: the files to hand to pytest.

    Kept: `.py` files that are not deleted and either are named like test modules (test_*.py,
    *_test.py, *_tests.py, tests.py, unittest_*.py) outside data folders, or sit in a
    test/tests/testing/testsuite folder and define tests in the patch's lines. Dropped: conftest.py,
    __init__.py, data and fixtures. A file an `expected` id names (`path.py::...`, or
    `snippet.txt::` for an item a conftest.py collects from a data file) is always kept: the
    dataset says tests live there. A test patch that touches no test module (it only changes
    the data the tests read) runs the files the expected ids name, FAIL_TO_PASS first: the
    dataset names the tests the data is for. With neither, pytest runs `data_files`.
    """
    named = {e.split("::", 1)[0] for e in expected if "::" in e}
    files: list[str] = []
    for diff in parse_patch(test_patch):
        path = diff.target
        if path is None or path in files:
            continue
        parts = PurePosixPath(path).parts
        name = parts[-1]
        if path in named and _runnable(path):
            files.append(path)
        elif _not_a_module(path, parts):
            continue
        elif _TEST_MODULE.match(name) or _defines_tests_in_test_dir(
            parts, diff.added + diff.context
        ):
            files.append(path)
    if not files:  # ids are the dataset's: only relative paths inside the workspace
        ids = dict.fromkeys(e.split("::", 1)[0] for e in expected if "::" in e)
        files = [f for f in ids if f.endswith(".py") and _inside(PurePosixPath(f))]
    return files


def _not_a_module(path: str, parts: tuple[str, ...]) -> bool:
    """Not Python, or Python that pytest must not run as a test module: configuration,
    packages' __init__.py, data."""
    if not path.endswith(".py") or parts[-1] in ("conftest.py", "__init__.py"):
        return True
    return bool(_DATA_DIRS & set(parts[:-1]))


def data_files(test_patch: str) -> list[str]:
    """The files other than Python the test patch adds or changes in a test folder, in patch
    order: what pytest is handed when `test_files` finds nothing. A project's conftest.py
    may collect such files as test items (pygments' lexer snippets, `tests/snippets/*/*.txt`);
    a file no collector claims just adds no test. Left out: `.py` files (pytest would import
    a data or helper module handed to it as a test module) and data folders' files (what
    tests read, `tests/data/cases.json`: no item of their own)."""
    found: list[str] = []
    for diff in parse_patch(test_patch):
        path = diff.target
        if path is None or path.endswith(".py") or path in found or not _runnable(path):
            continue
        folders = set(PurePosixPath(path).parts[:-1])
        if _TEST_DIRS & folders and not _DATA_DIRS & folders:
            found.append(path)
    return found


def _runnable(path: str) -> bool:
    """A path fit to hand to pytest: inside the workspace, not an option, and without `::`,
    which pytest would read as a node id's separator (`file::name`)."""
    return _inside(PurePosixPath(path)) and "::" not in path


def _inside(path: PurePosixPath) -> bool:
    return not path.is_absolute() and ".." not in path.parts and not str(path).startswith("-")


# pytest would collect the function as a test wherever a test module imports it by name.
test_files.__test__ = False  # type: ignore[attr-defined]


def _defines_tests_in_test_dir(parts: tuple[str, ...], lines: list[str]) -> bool:
    return bool(_TEST_DIRS & set(parts[:-1])) and any(_DEFINES_TESTS.search(ln) for ln in lines)


def cache_path(junit_path: Path) -> Path:
    """Where pytest's cache goes for a run writing `junit_path`."""
    return Path(junit_path).parent / "swebounty-pytest-cache"


def relocated(args: list[str], junit_path: Path) -> list[str]:
    """`pytest_command`'s arguments writing the JUnit file (and the cache) at `junit_path`."""
    swap = {
        "--junitxml=": f"--junitxml={junit_path}",
        "cache_dir=": f"cache_dir={cache_path(junit_path)}",
    }
    return [next((v for k, v in swap.items() if a.startswith(k)), a) for a in args]


def pytest_command(
    prefix: Sequence[str],
    files: Iterable[str],
    junit_path: Path,
    *,
    rootdir: Path | str | None = None,
    ignore: Sequence[str] = (),
) -> list[str]:
    """The argv that runs `files` (paths pytest may also `ignore` within them: dataitems.py)
    and writes xunit1 JUnit XML (it keeps the `file` attribute).

    pytest's cache goes beside the JUnit file (the sandbox's private /tmp), not into the
    workspace; it is not turned off (`-p no:cacheprovider`): plugins read `config.cache`
    (pytest-pep8, pytest-flakes) and stop the run with an INTERNALERROR without it. pytest
    before 3.2 has no `cache_dir` and ignores it (its `.cache` lands in the throw-away
    workspace).

    `-rap`: the short summary names every test with its outcome (`PASSED id`, `FAILED id`, as
    SWE-bench's logs and log parsers have them), without `-rA`'s PASSES section: pytest builds
    it by scanning every report once per passed test, so its cost grows with the square of
    the tests run (2,000 trivial tests: 20 s with `-rA`, 12 s with `-rap`, pytest 9)."""
    argv = [*prefix, "-rap", f"--junitxml={junit_path}", "-o", "junit_family=xunit1"]
    argv += ["-o", f"cache_dir={cache_path(junit_path)}", "--tb=short", "--color=no"]
    if rootdir is not None:
        argv.append(f"--rootdir={rootdir}")
    argv += [f"--ignore={p}" for p in ignore]
    # `--` so a file named like an option stays a file; dict.fromkeys drops repeats in order.
    return [*argv, "--", *dict.fromkeys(files)]


# ---------------------------------------------------------------------------- reading XML


def parse_junit(
    path: Path, *, files: Sequence[str] = (), max_bytes: int = DEFAULT_MAX_JUNIT_BYTES
) -> dict[str, TestOutcome]:
    """`parse_junit_bytes` of the file at `path`, read without following a link, as a
    regular file within `max_bytes` (code under test may have replaced it)."""
    data = safefs.read_regular(Path(path), max_bytes)
    if data is None:
        raise JUnitError(
            f"no usable JUnit XML at {path} (missing, not a regular file, or over the "
            f"{max_bytes}-byte limit): the test run did not finish"
        )
    return parse_junit_bytes(data, files=files)


def parse_junit_bytes(data: bytes, *, files: Sequence[str] = ()) -> dict[str, TestOutcome]:
    """Outcomes keyed by pytest node id (`tests/t.py::Class::test[param]`).

    Handles xunit1 and xunit2 and nested testsuites. `files` (the test files that were run)
    helps rebuild node ids when the XML lacks the `file` attribute (xunit2) or names the file
    that defines an inherited test rather than the one that ran it.

    Status rules: a `<failure>` is "failed", an `<error>` "error", `<skipped>` "skipped" (xfail
    included, its message starts "xfail:"); an XPASS that is not strict is "passed", as pytest
    itself counts it. pytest writes two testcases for a test that failed and then errored in
    teardown: "failed" wins. A setup error, or a pass followed by a teardown error, is "error":
    the test did not pass cleanly. A module that failed to import is keyed by its file path
    (`tests/t.py`) with status "error". An item without a name, collected from one of
    `files` by the project's conftest.py, is keyed `file::`, its node id (`_nameless_node`).
    DTDs and entities are refused (defusedxml): pytest never writes them.
    """
    try:
        root = DefusedET.fromstring(data, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise JUnitError(f"the JUnit XML declares a DOCTYPE or entities ({exc!r})") from exc
    except ET.ParseError as exc:
        raise JUnitError(f"the JUnit XML is not valid XML ({exc}); was the run cut short?") from exc
    outcomes: dict[str, TestOutcome] = {}
    for case in root.iter("testcase"):
        name = case.get("name", "")
        if name:
            node = _node_id(case.get("classname", ""), name, case.get("file"), files)
        else:
            nameless = _nameless_node(case, files)
            if nameless is None:
                continue  # pytest writes a bare one when the session was stopped: not a test
            node = nameless
        outcome = _case_outcome(case)
        previous = outcomes.get(node)
        if previous is not None:
            outcome = _merge_same_node(previous, outcome)
        outcomes[node] = outcome
    return outcomes


# What a test id holds in place of its run's workspace root: SWE-bench's, whose logs name the
# checkout /testbed, so an id with a path reads as theirs (and testids' rule 7 still applies).
WORKSPACE_IN_IDS = "/testbed"


def without_workspace(outcomes: dict[str, TestOutcome], workspace: Path) -> dict[str, TestOutcome]:
    """`outcomes` with the workspace's absolute path in a test id written `WORKSPACE_IN_IDS`.

    Each run checks out into a folder of its own (`<instance>-<random>`), and a parametrized
    test whose parameters are paths built from `__file__` or the rootdir names it in its id
    (werkzeug-3101): the same test had another id in every run, and two validations disagreed
    on its labels. Only the workspace root itself is replaced, as given and as resolved, where
    it is a whole path: followed by `/`, by `-` (pytest's separator of parameters; a workspace's
    name ends in random hex, so no other folder continues it so) or by a character no folder
    name continues with.
    """
    roots = sorted({str(workspace), os.path.realpath(workspace)}, key=len, reverse=True)
    alternatives = "|".join(re.escape(r.rstrip("/")) for r in roots if r.rstrip("/"))
    if not alternatives:
        return outcomes  # the root folder: every path is "in" it
    pattern = re.compile(f"(?:{alternatives})" + r"(?![\w.])")
    out: dict[str, TestOutcome] = {}
    for node, outcome in outcomes.items():
        key = pattern.sub(WORKSPACE_IN_IDS, node)
        previous = out.get(key)
        out[key] = outcome if previous is None else _merge_same_node(previous, outcome)
    return out


_CHILD_STATUS: tuple[tuple[str, TestStatus], ...] = (
    ("failure", "failed"),
    ("error", "error"),
    ("skipped", "skipped"),
)


def _case_outcome(case: ET.Element) -> TestOutcome:
    for tag, status in _CHILD_STATUS:
        child = case.find(tag)
        if child is None:
            continue
        message = child.get("message") or (child.text or "").strip()
        if tag == "skipped" and child.get("type") == "pytest.xfail":
            message = f"xfail: {message}"
        return TestOutcome(status, message[:MESSAGE_CHARS])
    return TestOutcome("passed")


def _merge_same_node(first: TestOutcome, second: TestOutcome) -> TestOutcome:
    worse, other = sorted((first, second), key=lambda o: -SEVERITY[o.status])
    if other.status == "passed" or not other.message:
        return worse
    return TestOutcome(worse.status, f"{worse.message}; then {other.status}: {other.message}")


def _nameless_node(case: ET.Element, files: Sequence[str]) -> str | None:
    """The node id (`file::`) of an item without a name of its own, as a project's conftest.py
    makes from a data file it collects (pygments: `LexerInlineTestItem.from_parent(self,
    name="")`), or None. pytest derives such a case's classname (the file, dotted) and `file`
    from the node id; the file must be one that was run. A stopped session's testcase has
    neither, and no file: it stays no test."""
    file = case.get("file")
    if not file or case.get("classname") != re.sub(r"\.py$", "", file.replace("/", ".")):
        return None
    if not any(f == file or f.endswith("/" + file) for f in files):
        return None  # pytest's rootdir may be a subfolder: `file` is relative to it
    return f"{file}::"


def _node_id(classname: str, name: str, file: str | None, files: Sequence[str]) -> str:
    """Undo pytest's `mangle_test_address`: classname = dotted file path + classes."""
    if not classname:
        # A collection error: pytest writes the module as the name, the path as the file.
        return file or name.replace(".", "/") + ".py"
    best: tuple[str, str] | None = None
    for candidate in [file, *files]:
        if not candidate or not candidate.endswith(".py"):
            continue
        dotted = candidate[:-3].replace("/", ".")
        prefixes = classname == dotted or classname.startswith(dotted + ".")
        if prefixes and (best is None or len(dotted) > len(best[1])):
            best = (candidate, dotted)
    if best is not None:
        classes = classname[len(best[1]) + 1 :]
        return "::".join([best[0], *filter(None, classes.split(".")), name])
    # No file to go by: take the trailing CapWords parts as classes, the rest as the module.
    parts = classname.split(".")
    split = len(parts)
    while split > 1 and parts[split - 1][:1].isupper():
        split -= 1
    return "::".join(["/".join(parts[:split]) + ".py", *parts[split:], name])


# ---------------------------------------------------------------------------- cross-check

_EXIT_MEANING = {
    2: "pytest was interrupted (exit code 2)",
    3: "pytest hit an internal error (exit code 3)",
    4: "pytest was called wrongly (exit code 4: usage error, e.g. a test file does not exist)",
    5: "pytest collected no tests (exit code 5)",
}


def not_loaded(exit_code: int | None, outcomes: dict[str, TestOutcome]) -> bool:
    """Whether a run is one whose conftest.py did not import, as frameworks/pytest.py reads it:
    exit code 4 and every result a test file that failed to collect (pytest itself writes no
    result then, so no XML of a run that did collect has this shape)."""
    return (
        exit_code == 4
        and bool(outcomes)
        and all("::" not in k and o.status == "error" for k, o in outcomes.items())
    )


def cross_check(exit_code: int | None, outcomes: dict[str, TestOutcome] | None) -> str | None:
    """Why the exit code and the JUnit XML disagree (or say the run went wrong), else None."""
    if outcomes is None:
        return f"no JUnit XML was written (exit code {exit_code})"
    if exit_code is None:
        return None
    broken = sorted(k for k in outcomes if "::" not in k)
    counts = {s: sum(1 for o in outcomes.values() if o.status == s) for s in SEVERITY}
    bad = counts["failed"] + counts["error"]
    if exit_code == 0:
        if bad:
            return (
                f"exit code 0 but the JUnit XML reports {counts['failed']} failed and"
                f" {counts['error']} errors"
            )
        if not outcomes:
            return "exit code 0 but the JUnit XML holds no test"
        return None
    if exit_code == 1:
        return None if bad else "exit code 1 (tests failed) but the JUnit XML reports no failure"
    if exit_code == 2 and broken:
        return f"pytest stopped: test modules failed to import: {', '.join(broken)}"
    if not_loaded(exit_code, outcomes):
        return "pytest stopped before collecting: a conftest.py did not import (exit code 4)"
    if exit_code in _EXIT_MEANING:
        return _EXIT_MEANING[exit_code]
    if exit_code < 0 or exit_code > 128:
        signal = -exit_code if exit_code < 0 else exit_code - 128
        return f"the test process was killed by signal {signal} (exit code {exit_code})"
    return f"unexpected exit code {exit_code} from pytest"
