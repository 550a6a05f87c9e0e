"""Multi-SWE-bench records load as Tasks, unchanged SWE-bench records load as before."""

from __future__ import annotations

import json
from pathlib import Path

from swebounty.tasks import load_tasks

RECORD = {
    "org": "iamkun", "repo": "dayjs", "number": 2532, "state": "closed",
    "title": "Fix zero offset", "body": "fix #2248",
    "base": {"label": "iamkun:dev", "ref": "dev", "sha": "f4cb2cfd77246116cb4151c74ca2f600a17cd951"},
    "resolved_issues": [{"number": 2248, "title": "Zero offset with locale", "body": "details"}],
    "fix_patch": "diff --git a/src/index.js b/src/index.js\n--- a/src/index.js\n+++ b/src/index.js\n",
    "test_patch": "diff --git a/test/timezone.test.js b/test/timezone.test.js\n",
    "f2p_tests": {"test/timezone.test.js:TZ with Locale": {"run": "NONE", "test": "FAIL", "fix": "PASS"}},
    "s2p_tests": {}, "n2p_tests": {"test/plugin.test.js": {}},
    "p2p_tests": {"test/timezone.test.js:Diff (DST)": {}},
    "instance_id": "iamkun__dayjs-2532",
}  # fmt: skip


def test_multi_swe_bench_records(tmp_path: Path) -> None:
    path = tmp_path / "ds.jsonl"
    plain = {"instance_id": "a__b-1", "repo": "a/b", "base_commit": "c" * 40}
    path.write_text(json.dumps(RECORD) + "\n" + json.dumps(plain) + "\n")
    (task, python), errors = load_tasks(path)
    assert not errors
    assert task.instance_id == "iamkun__dayjs-2532" and task.repo == "iamkun/dayjs"
    assert task.base_commit.startswith("f4cb2cfd") and task.ecosystem == "node"
    assert task.FAIL_TO_PASS == ["test/timezone.test.js:TZ with Locale", "test/plugin.test.js"]
    assert task.PASS_TO_PASS == ["test/timezone.test.js:Diff (DST)"]
    assert task.problem_statement.startswith("Zero offset with locale")
    assert task.patch == RECORD["fix_patch"] and task.test_kind == "unit"
    # A SWE-bench record is untouched: unit tests, of the ecosystem its repository is of
    # (ecosystems.resolve decides that when it is evaluated).
    assert (python.ecosystem, python.test_kind) == (None, "unit")
