"""Every verdict that is not `resolved`, grouped by why: the part of a run's summary a person
reads after a whole-dataset run (for `--gold`, each one is the harness's or the dataset's to
explain, not a model's).

Classes come from the verdict's structured fields first (status, per-test results, task
defect, hack flags), then from the first words of its reason for errors, whose causes are
only said in words: an environment that was not built names its failure class
(envs/failures.py) in its first line, `(... (sdist).`.
"""

from __future__ import annotations

import re
from typing import Any

from swebounty.verdicts import Verdict

_ENV_KIND = re.compile(r"^environment not built: .*\((\w+)\)\.?$", re.M)
_REASON_CLASSES = [
    ("the task's test patch does not apply", "test patch does not apply"),
    ("touches no test file", "test patch names no test to run"),
    ("harness error", "harness error"),
    ("test modules failed to import", "test collection failed"),
    ("timed out", "timeout"),
    ("time limit", "timeout"),
]
_TEST_WORDS = {"failed": "failed", "error": "erred", "skipped": "skipped", "missing": "never ran"}


def miss_class(verdict: Verdict) -> str:
    """Why `verdict` is not resolved, as a short class name."""
    reason = verdict.reason or ""
    if verdict.task_defect:
        return "task defect"
    if verdict.harness_limitation:
        return "harness limitation"
    if verdict.status == "patch_failed":
        return "patch does not apply"
    if verdict.status == "agent_error":
        return "agent error"
    env = _ENV_KIND.search(reason.split("\n", 1)[0])
    if env or reason.startswith("environment not built"):
        return f"environment not built ({env.group(1) if env else 'other'})"
    for words, name in _REASON_CLASSES:
        if words in reason:
            return name
    if "crashes_tests" in verdict.hack_flags:
        return "tests crashed"
    if "hangs_tests" in verdict.hack_flags:
        return "tests hung"
    for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        bad = [t.status for t in verdict.tests if t.expected == kind and t.status != "passed"]
        if bad:
            worst = max(set(bad), key=bad.count)
            return f"{kind} {_TEST_WORDS.get(worst, worst)}"
    if verdict.status == "error":
        head = reason.split("\n", 1)[0].split(":", 1)[0].strip()
        return f"error: {head[:60]}" if head else "error"
    return verdict.status


def by_class(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """The misses of a run, one entry per class: its name, count and instances (largest
    class first)."""
    groups: dict[str, list[str]] = {}
    for verdict in verdicts:
        if verdict.status != "resolved":
            groups.setdefault(miss_class(verdict), []).append(verdict.instance_id)
    return [
        {"class": name, "count": len(ids), "instances": sorted(set(ids))}
        for name, ids in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    ]
