"""What the harness's own reporters send (`mocha_launcher.js`, `jasmine_launcher.js`,
`node_test_reporter.mjs`): every test that ended, as one JSON object signed on the result
channel (channel.js), read defensively."""

from __future__ import annotations

import re
from typing import Any

from swebounty.node.results import JsCase, JsResults, _clean, _rel
from swebounty.testing import JUnitError

_STATUSES = {"passed", "failed", "skipped", "error"}
_HOOK = re.compile(r'^"(before|after) (all|each)" hook')


def cases_of(doc: dict[str, Any], base: Any) -> JsResults:
    """`{"cases": [...], "errors": [...]}`, each case `{file, ancestors, title, status,
    message}`; errors outside any test become error cases, and a failed hook (Mocha names
    it `"before all" hook for "x"`) says its file did not run as it should."""
    if not isinstance(doc.get("cases"), list):
        raise JUnitError("the reporter's message holds no list of test results")
    results = JsResults()
    for raw in doc["cases"]:
        if not isinstance(raw, dict) or not isinstance(raw.get("title"), str):
            raise JUnitError("the reporter's message holds a test result without a title")
        ancestors = [a for a in raw.get("ancestors") or [] if isinstance(a, str)]
        status = raw.get("status") if raw.get("status") in _STATUSES else "error"
        file = raw.get("file") if isinstance(raw.get("file"), str) else None
        rel = _rel(file.removeprefix("file://"), base) if file else None
        message = _clean(str(raw.get("message") or ""))
        results.cases.append(JsCase(rel, ancestors, raw["title"], str(status), message))
        if rel and status == "error" and _HOOK.match(raw["title"]):
            results.file_errors[rel] = _clean(f"{raw['title']}: {message}")
        elif rel:
            failed = status in ("failed", "error") or results.files.get(rel) == "failed"
            results.files[rel] = "failed" if failed else "passed"
    for i, error in enumerate(doc.get("errors") or []):
        # A spec file that failed to load, an error thrown outside any spec.
        results.cases.append(JsCase(None, [], f"(error outside the tests {i + 1})", "error",
                                    _clean(str(error))))  # fmt: skip
    return results


def tampered(doc: dict[str, Any]) -> list[str]:
    """What the reporter saw replaced of the runner's machinery while the tests ran."""
    found = doc.get("tampered")
    return [str(t)[:300] for t in found[:20]] if isinstance(found, list) else []
