"""How SWE-bench's ids of unittest-style tests are matched to what the unittest guard recorded.

The guard (pytest_guard/unittest_guard.py) keys each test by `module.Class.method`, built from
the test's class, and keeps its docstring's first line; class and module fixtures that failed
are keyed by unittest's description (`setUpClass (module.Class)`), modules that failed to
import by the name unittest's loader gives them (the last part of the dotted name it tried). Datasets name the same tests as the runner's verbose log printed
them:
- `test_x (module.Class)`, and since Python 3.11 `test_x (module.Class.test_x)`;
- `module.Class.test_x` (newer logs, and unittest's own `id()`);
- the docstring's first line, for a test that has one: unittest prints it on its own line
  before the result and SWE-bench's log parser took it for the name. Such an id stands for
  every test with that first line that ran: all of those must pass, and at least one must
  have run. A member that skipped is left out, as SWE-bench's parser left it out (the same
  test method of a mixin in one class per backend: django's cache tests skip in the classes
  of backends not configured, `PyLibMCCache backend not configured`, here as in SWE-bench's
  images, while the id is PASS_TO_PASS); a failure or an error of any member still counts.
  `left_out` names the members so left out: a submission could make members skip, so each
  must skip on the unpatched base too (leftout.py). None is guessed from a near match.
A test that never ran is an `error` when its module failed to import or its class or module
fixture failed, else `missing`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from swebounty.testing import MESSAGE_CHARS, SEVERITY, TestOutcome
from swebounty.verdicts import TestStatus

_PAREN = re.compile(r"^(?P<method>\w+) \((?P<dotted>[\w.]+)\)$")
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)+$")


def canonical(test_id: str) -> str | None:
    """`module.Class.method` for an id in either unittest format, None for anything else."""
    found = _PAREN.match(test_id)
    if found:
        method, dotted = found["method"], found["dotted"]
        if dotted.endswith("." + method) and dotted.count(".") >= 2:
            return dotted  # Python 3.11+: `test_x (module.Class.test_x)`
        return f"{dotted}.{method}"
    return test_id if _DOTTED.match(test_id) else None


def match_unittest(
    expected: Iterable[str], records: Mapping[str, Mapping[str, str | None]]
) -> dict[str, TestOutcome]:
    """An outcome for every expected id from the guard's records (`GuardResult.tests`)."""
    tests = {k: r for k, r in records.items() if r.get("kind", "test") == "test"}
    by_doc: dict[str, list[str]] = {}
    for name, record in tests.items():
        doc = record.get("doc")
        if doc:
            by_doc.setdefault(doc, []).append(name)
    broken = {k: r for k, r in records.items() if r.get("kind") in ("import", "fixture")}
    results: dict[str, TestOutcome] = {}
    for test_id in expected:
        key = canonical(test_id)
        if key is not None and key in tests:
            results[test_id] = _outcome(tests[key])
        elif test_id in by_doc:
            found = {k: _outcome(tests[k]) for k in by_doc[test_id]}
            results[test_id] = _aggregate(found)
        else:
            results[test_id] = _never_ran(test_id, key, broken)
    return results


def left_out(
    expected: Iterable[str], records: Mapping[str, Mapping[str, str | None]]
) -> dict[str, list[str]]:
    """For each expected docstring id that passes by leaving out members that skipped: those
    members' keys (`module.Class.method`)."""
    tests = {k: r for k, r in records.items() if r.get("kind", "test") == "test"}
    found: dict[str, list[str]] = {}
    for test_id in expected:
        key = canonical(test_id)
        if key is not None and key in tests:
            continue
        members = {k: _outcome(r) for k, r in tests.items() if r.get("doc") == test_id}
        if len(members) > 1 and _aggregate(members).status == "passed":
            skipped = sorted(k for k, o in members.items() if o.status == "skipped")
            if skipped:
                found[test_id] = skipped
    return found


def outcomes_of(records: Mapping[str, Mapping[str, str | None]]) -> dict[str, TestOutcome]:
    """Every record as an outcome, keyed as the guard keyed it (for logs and cross-checks)."""
    return {key: _outcome(record) for key, record in records.items()}


def _outcome(record: Mapping[str, str | None]) -> TestOutcome:
    return TestOutcome(_status(record.get("status")), (record.get("message") or "")[:MESSAGE_CHARS])


def _status(value: str | None) -> TestStatus:
    for status in ("passed", "failed", "error", "skipped"):
        if value == status:
            return status
    return "error"  # anything else the guard could not have written


def _aggregate(found: dict[str, TestOutcome]) -> TestOutcome:
    if len(found) == 1:
        return next(iter(found.values()))
    bad = {k: o for k, o in found.items() if o.status != "passed"}
    ran = len(found) - sum(o.status == "skipped" for o in found.values())
    if ran and all(o.status == "skipped" for o in bad.values()):
        said = f"; {len(bad)} skipped" if bad else ""
        return TestOutcome("passed", f"{len(found)} tests share this docstring: {ran} passed{said}")
    worst = max(bad.values(), key=lambda o: SEVERITY[o.status])
    listed = "; ".join(f"{k}: {o.status}" for k, o in list(bad.items())[:5])
    message = f"{len(bad)} of {len(found)} tests with this docstring did not pass: {listed}"
    return TestOutcome(worst.status, message[:MESSAGE_CHARS])


def _within(name: str, module: str) -> bool:
    """Whether a module unittest could not import, named as its loader names it (the dotted
    name's last part it failed on: `tests` for `foo.tests`), may be `module` or its package."""
    dotted = f".{module}."
    return f".{name}." in dotted or module.startswith(f"{name}.")


def _never_ran(
    test_id: str, key: str | None, broken: Mapping[str, Mapping[str, str | None]]
) -> TestOutcome:
    if key is not None:
        klass, module = key.rsplit(".", 1)[0], key.rsplit(".", 2)[0]
        for name, record in broken.items():
            fixture = _PAREN.match(name)
            owner = fixture["dotted"] if fixture else name
            if owner in (klass, module) or (
                record.get("kind") == "import" and _within(owner, module)
            ):
                status: TestStatus = "skipped" if record.get("status") == "skipped" else "error"
                why = record.get("message") or record.get("status") or ""
                return TestOutcome(status, f"never ran: {name}: {why}"[:MESSAGE_CHARS])
    if broken:
        names = ", ".join(list(broken)[:5])
        return TestOutcome("missing", f"never ran; failed to load or set up: {names}")
    return TestOutcome("missing", "never ran")
