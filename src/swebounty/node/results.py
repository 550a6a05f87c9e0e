"""What became of each JavaScript test: structured results in, outcomes per expected id out.

The harness's reporters send every runner's results signed through the result channel
(runners/): Jest's and Vitest's in the shape of Jest's `--json` report (`jest_results`), the
others as cases (runners/cases.py); nothing is read from the log. Jest before 21 writes its
`--json` report to a file in a directory the harness owns, opened without following links, as
a regular file, with a size bound (the code under test runs as the same sandbox user and could
have planted anything there). `parse_junit_js` reads Mocha's xunit and Vitest's junit XML
(datasets' logs; no run writes them now). Every result is also written as one JUnit XML for
the logs and the report.

Expected ids are matched the way SWE-bench-style JavaScript datasets name tests:
`path/to/file.test.js` (the whole file), `path:title` or `path:full title` (Multi-SWE-bench's
Jest ids), the full title (`describe it`, Mocha's), the bare title, or `describe > it`
(Vitest's). When one id matches several tests, all must pass.
"""

from __future__ import annotations

import json
import os
import re
import stat
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from swebounty.testing import MESSAGE_CHARS, SEVERITY, JUnitError, TestOutcome

MAX_RESULT_BYTES = 64 * 1024 * 1024
_JEST_STATUS = {"passed": "passed", "failed": "failed", "pending": "skipped", "skipped": "skipped",
                "todo": "skipped", "disabled": "skipped", "focused": "passed"}  # fmt: skip


@dataclass
class JsCase:
    file: str | None
    ancestors: list[str]
    title: str
    status: str
    message: str = ""

    @property
    def full(self) -> str:
        return " ".join([*self.ancestors, self.title])

    @property
    def arrow(self) -> str:
        return " > ".join([*self.ancestors, self.title])


@dataclass
class JsResults:
    cases: list[JsCase] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # suite file -> passed/failed/error
    file_errors: dict[str, str] = field(default_factory=dict)  # suite that did not run -> why

    def merged(self, other: JsResults) -> JsResults:
        """Both runs' results: an id matching tests of both must pass in both."""
        files = dict(self.files)
        for f, status in other.files.items():
            if SEVERITY.get(status, 0) > SEVERITY.get(files.get(f, "passed"), 0):
                files[f] = status
            files.setdefault(f, status)
        return JsResults(self.cases + other.cases, files, {**other.file_errors, **self.file_errors})

    def under(self, prefix: str) -> JsResults:
        """The same results with relative file paths put under `prefix` (a package's dir)."""

        def up(f: str) -> str:
            return f if f.startswith("/") else f"{prefix}/{f}"

        cases = [JsCase(up(c.file) if c.file else c.file, c.ancestors, c.title, c.status,
                        c.message) for c in self.cases]  # fmt: skip
        return JsResults(cases, {up(f): s for f, s in self.files.items()},
                         {up(f): m for f, m in self.file_errors.items()})  # fmt: skip


def read_untrusted(path: Path, max_bytes: int = MAX_RESULT_BYTES) -> bytes:
    """A result file the sandboxed code could have replaced: no links, regular, bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError as exc:
        raise JUnitError(f"no results at {path}: the runner wrote none") from exc
    except OSError as exc:
        raise JUnitError(f"cannot open {path} safely ({exc}); refusing it") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise JUnitError(f"{path} is not a regular file; refusing it")
        if st.st_size > max_bytes:
            raise JUnitError(f"{path} is {st.st_size} bytes, over the {max_bytes}-byte limit")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(max_bytes + 1)
    finally:
        os.close(fd)


def _rel(path: str, workspace: Path) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return p.relative_to(workspace).as_posix()
        except ValueError:
            return p.as_posix()
    return p.as_posix().removeprefix("./")


def parse_jest(path: Path, workspace: Path) -> JsResults:
    try:
        data = json.loads(read_untrusted(path))
    except ValueError as exc:
        raise JUnitError(f"Jest's JSON report {path} is not JSON ({exc})") from exc
    return jest_results(data, workspace, str(path))


def jest_results(data: object, workspace: Path, where: str = "Jest's report") -> JsResults:
    """Results from a report in the shape of Jest's `--json` (its file, or what the harness's
    reporter sent: runners/jest_reporter.js)."""
    if not isinstance(data, dict) or not isinstance(data.get("testResults"), list):
        raise JUnitError(f"{where} has no testResults")
    results = JsResults()
    for suite in data["testResults"]:
        if not isinstance(suite, dict):
            continue
        file = _rel(str(suite.get("name") or suite.get("testFilePath") or ""), workspace)
        cases = suite.get("assertionResults") or suite.get("testResults") or []
        message = str(suite.get("message") or suite.get("failureMessage") or "")
        if suite.get("status") == "failed" and not cases:
            results.file_errors[file] = _clean(message) or "the test file failed to run"
            results.files[file] = "error"
            continue
        worst = "passed"
        for case in cases:
            status = _JEST_STATUS.get(str(case.get("status")), "failed")
            msg = "\n".join(map(str, case.get("failureMessages") or []))
            results.cases.append(
                JsCase(file, [str(a) for a in case.get("ancestorTitles") or []],
                       str(case.get("title", "")), status, _clean(msg))
            )  # fmt: skip
            if status == "failed":
                worst = "failed"
        if suite.get("status") == "failed" and worst == "passed":
            worst = "error"  # e.g. an afterAll hook that threw
            results.file_errors[file] = _clean(message) or "the test file failed"
        results.files[file] = worst
    return results


def parse_junit_js(path: Path, workspace: Path, runner: str) -> JsResults:
    """Mocha's xunit (classname = parent's full title) or Vitest's junit (classname = file,
    name = `describe > it`)."""
    data = read_untrusted(path)
    if re.search(rb"<!(DOCTYPE|ENTITY)", data, re.IGNORECASE):
        raise JUnitError(f"{path} declares a DOCTYPE or ENTITY; refusing to read it")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise JUnitError(f"{path} is not valid XML ({exc}); was the run cut short?") from exc
    results = JsResults()
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        file = case.get("file")
        if runner == "vitest":
            file = file or classname
            parts = name.split(" > ")
            ancestors, title = parts[:-1], parts[-1]
        else:
            ancestors, title = ([classname] if classname else []), name
            # Mocha names a failed hook as a test: '"before all" hook for "x"'.
        status, message = "passed", ""
        for tag, st in (("failure", "failed"), ("error", "failed"), ("skipped", "skipped")):
            child = case.find(tag)
            if child is not None:
                status = st
                message = child.get("message") or (child.text or "")
                break
        rel = _rel(file, workspace) if file else None
        if re.match(r'^"(before|after) (all|each)" hook', title):
            if rel:
                results.file_errors[rel] = _clean(f"{title}: {message}")
            results.cases.append(JsCase(rel, ancestors, title, "error", _clean(message)))
            continue
        results.cases.append(JsCase(rel, ancestors, title, status, _clean(message)))
        if rel:
            failed = status == "failed" or results.files.get(rel) == "failed"
            results.files[rel] = "failed" if failed else "passed"
    return results


def _clean(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text).strip()[:MESSAGE_CHARS]


# ---------------------------------------------------------------------------- matching


def _aggregate(found: list[JsCase]) -> TestOutcome:
    if len(found) == 1:
        return TestOutcome(found[0].status, found[0].message)  # type: ignore[arg-type]
    bad = [c for c in found if c.status != "passed"]
    if not bad:
        return TestOutcome("passed")
    worst = max(bad, key=lambda c: SEVERITY.get(c.status, 4))
    listed = "; ".join(f"{c.full}: {c.status}" for c in bad[:5])
    return TestOutcome(
        worst.status,  # type: ignore[arg-type]
        f"{len(bad)} of {len(found)} matching tests did not pass: {listed}"[:MESSAGE_CHARS],
    )


def match(expected: list[str], results: JsResults) -> dict[str, TestOutcome]:
    """An outcome for every expected id ("missing" when nothing that ran matches it)."""
    by_file: dict[str, list[JsCase]] = {}
    for case in results.cases:
        by_file.setdefault(case.file or "", []).append(case)
    files = set(results.files) | {f for f in by_file if f}
    out: dict[str, TestOutcome] = {}
    for test_id in expected:
        out[test_id] = _match_one(test_id, results, by_file, files)
    return out


def _match_one(
    test_id: str, results: JsResults, by_file: dict[str, list[JsCase]], files: set[str]
) -> TestOutcome:
    file = _file_of(test_id, files)
    if file is not None and test_id == file:
        # A whole file passes as its runner says PASS: skipped tests in it do not count.
        if file in results.file_errors:
            return TestOutcome("error", results.file_errors[file])
        failing = [c for c in by_file.get(file, []) if c.status in ("failed", "error")]
        if failing:
            return _aggregate(failing)
        if file in results.files or by_file.get(file):
            return TestOutcome("passed")
        return TestOutcome("missing", "the test file never ran")
    if file is not None:
        rest = test_id[len(file) :].lstrip(": >").strip()
        cases = by_file.get(file, [])
        for same in (_same, _same_cut):
            for attr in ("title", "full", "arrow"):
                found = [c for c in cases if same(getattr(c, attr), rest)]
                if found:
                    return _aggregate(found)
        if file in results.file_errors:
            return TestOutcome("error", results.file_errors[file])
        return TestOutcome("missing", "never ran")
    for same in (_same, _same_cut):
        for attr in ("full", "arrow", "title"):
            found = [c for c in results.cases if same(getattr(c, attr), test_id)]
            if found:
                return _aggregate(found)
    if results.file_errors:
        return TestOutcome(
            "missing", f"never ran; test files that failed to run: {', '.join(results.file_errors)}"
        )
    return TestOutcome("missing", "never ran")


def _same(name: str, test_id: str) -> bool:
    """Equal, or equal once runs of whitespace are one space: logs-based datasets strip
    titles (Express has `it('should contain app settings ', ...)`)."""
    return name == test_id or " ".join(name.split()) == " ".join(test_id.split())


_TRAILING_PARENS = re.compile(r"\s*\([^()]*\)$")


def _same_cut(name: str, test_id: str) -> bool:
    """Equal once a trailing `(...)` is cut from the title: log parsers take it for a duration
    (`✓ title (52ms)`) and drop it (axios's `... as a String (text)` is `... as a String`)."""
    cut = _TRAILING_PARENS.sub("", name)
    return cut != name and _same(cut, test_id)


def _file_of(test_id: str, files: set[str]) -> str | None:
    """The suite file an id starts with (`test/a.test.js:title`), if any ran or was named."""
    best = None
    for f in files:
        starts = test_id == f or (test_id.startswith(f) and test_id[len(f)] in ": >")
        if starts and (best is None or len(f) > len(best)):
            best = f
    if best is None:
        m = re.match(r"^([\w./@-]+\.(?:test|spec|tests)\.[cm]?[jt]sx?|[\w./@-]+\.[cm]?[jt]sx?)(?=$|:)",
                     test_id)  # fmt: skip
        return m[1] if m else None
    return best


# ---------------------------------------------------------------------------- outcomes


def outcomes_of(results: JsResults) -> dict[str, TestOutcome]:
    """Every test that ran, keyed `file::full title` (or the full title), plus one key per
    test file that failed to run (the file alone, as pytest keys a module that failed to
    import): the ids validation gives fresh tasks, and `match` reads back."""
    out: dict[str, TestOutcome] = {}
    for case in results.cases:
        key = f"{case.file}::{case.full}" if case.file else case.full
        prev = out.get(key)
        if prev is None or SEVERITY[case.status] > SEVERITY[prev.status]:
            out[key] = TestOutcome(case.status, case.message)  # type: ignore[arg-type]
    for file, why in results.file_errors.items():
        out.setdefault(file, TestOutcome("error", why))
    return out


def cross_check(runner: str, exit_code: int | None, results: JsResults | None) -> str | None:
    """Why the exit code and the results disagree, or say the run went wrong, else None."""
    if results is None:
        return f"no test results were written (exit code {exit_code})"
    if exit_code is None:
        return None
    bad = sum(1 for c in results.cases if c.status in ("failed", "error")) + len(
        results.file_errors
    )
    if exit_code < 0 or exit_code > 128:
        signal = -exit_code if exit_code < 0 else exit_code - 128
        return f"the test process was killed by signal {signal} (exit code {exit_code})"
    if exit_code == 0:
        if bad:
            return f"exit code 0 but the results report {bad} failures"
        if not results.cases and not results.files:
            return "exit code 0 but the results hold no test"
        return None
    if not bad:
        return f"{runner} exited {exit_code} but the results report no failure"
    return None


def write_junit(results: JsResults, path: Path) -> None:
    """The results as JUnit XML (one testsuite per file) for the logs and the report."""
    root = ET.Element("testsuites")
    suites: dict[str, ET.Element] = {}
    for case in results.cases:
        name = case.file or "(no file)"
        suite = suites.get(name)
        if suite is None:
            suite = suites[name] = ET.SubElement(root, "testsuite", name=name)
        el = ET.SubElement(suite, "testcase", classname=" ".join(case.ancestors),
                           name=case.title, file=case.file or "")  # fmt: skip
        if case.status in ("failed", "error"):
            ET.SubElement(el, "failure" if case.status == "failed" else "error",
                          message=case.message[:500]).text = case.message  # fmt: skip
        elif case.status == "skipped":
            ET.SubElement(el, "skipped")
    for file, why in results.file_errors.items():
        suite = suites.get(file) or ET.SubElement(root, "testsuite", name=file)
        el = ET.SubElement(suite, "testcase", classname="", name="(file)", file=file)
        ET.SubElement(el, "error", message=why[:500]).text = why
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
