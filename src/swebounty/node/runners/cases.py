"""The results file of the harness's own reporters (`jasmine_launcher.js`,
`node_test_reporter.mjs`): every test that ended, as JSON, read defensively."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swebounty.node.results import JsCase, JsResults, _clean, _rel, read_untrusted
from swebounty.testing import JUnitError

_STATUSES = {"passed", "failed", "skipped", "error"}


def parse_cases(path: Path, base: Path, *, json_lines: bool) -> JsResults:
    """`{"cases": [...], "errors": [...]}` (`json_lines`: one case per line instead), each case
    `{file, ancestors, title, status, message}`; errors outside any test become error cases."""
    data = read_untrusted(path).decode("utf-8", errors="replace")
    try:
        if json_lines:
            doc: dict[str, Any] = {"cases": [json.loads(ln) for ln in data.splitlines() if ln]}
        else:
            doc = json.loads(data)
    except ValueError as exc:
        raise JUnitError(f"{path} is not valid JSON ({exc}); was the run cut short?") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise JUnitError(f"{path} holds no list of test results")
    results = JsResults()
    for raw in doc["cases"]:
        if not isinstance(raw, dict) or not isinstance(raw.get("title"), str):
            raise JUnitError(f"{path} holds a test result without a title")
        ancestors = [a for a in raw.get("ancestors") or [] if isinstance(a, str)]
        status = raw.get("status") if raw.get("status") in _STATUSES else "error"
        file = raw.get("file") if isinstance(raw.get("file"), str) else None
        rel = _rel(file.removeprefix("file://"), base) if file else None
        message = _clean(str(raw.get("message") or ""))
        results.cases.append(JsCase(rel, ancestors, raw["title"], str(status), message))
        if rel:
            failed = status in ("failed", "error") or results.files.get(rel) == "failed"
            results.files[rel] = "failed" if failed else "passed"
    for i, error in enumerate(doc.get("errors") or []):
        # A spec file that failed to load, an error thrown outside any spec.
        results.cases.append(JsCase(None, [], f"(error outside the tests {i + 1})", "error",
                                    _clean(str(error))))  # fmt: skip
    return results
