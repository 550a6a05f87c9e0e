"""Validation: F2P/P2P/flaky from repeated runs, rejects with reasons, resume, parallel workers.

The logic is tested with a scripted runner; `test_collect_e2e.py` runs the real harness.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from swebounty.collect.validate import Rejected, classify, validate, validate_one
from swebounty.tasks import Task, load_tasks


@dataclass
class Outcome:
    status: str


@dataclass
class Run:
    outcomes: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = 0
    error: str | None = None
    patch_error: str | None = None


class Script:
    """Answers run_tests calls from a table: (instance_id, "before"|"after") -> list of runs."""

    def __init__(self, table: dict[tuple[str, str], list[Run]]) -> None:
        self.table = table
        self.calls: list[tuple[str, str, Path]] = []
        self.lock = threading.Lock()

    def __call__(self, task: Task, patch: str, ctx: Any, log_dir: Path) -> Run:
        phase = "after" if patch else "before"
        with self.lock:
            self.calls.append((task.instance_id, phase, log_dir))
            runs = self.table[(task.instance_id, phase)]
            return runs.pop(0) if len(runs) > 1 else runs[0]


def run(**statuses: str) -> Run:
    return Run({f"tests/t.py::{k}": Outcome(v) for k, v in statuses.items()})


TEST_PATCH = (
    "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n"
    "@@ -1 +1,2 @@\n x = 1\n+def test_a(): pass\n"
)


def _task(iid: str, test_patch: str = TEST_PATCH) -> Task:
    return Task(instance_id=iid, repo="o/r", base_commit="abc", patch="diff", test_patch=test_patch)


@dataclass
class Ctx:
    runs_dir: Path


def test_classify() -> None:
    before = [
        {"a": "failed", "b": "passed", "c": "passed", "d": "error", "e": "skipped"},
        {"a": "failed", "b": "passed", "c": "failed", "d": "error", "e": "skipped"},
    ]
    after = [
        {"a": "passed", "b": "passed", "c": "passed", "d": "passed", "e": "passed", "f": "passed"},
        {"a": "passed", "b": "passed", "c": "passed", "d": "failed", "e": "passed", "f": "passed"},
    ]
    result = classify(before, after)
    assert result.fail_to_pass == ["a", "f"]  # f: missing before (its module did not import)
    assert result.pass_to_pass == ["b"]
    assert result.flaky == ["c", "d"]


def test_validate_one_sets_the_hidden_tests(tmp_path: Path) -> None:
    script = Script(
        {
            ("t", "before"): [run(fix="failed", ok="passed", flip="passed")],
            ("t", "after"): [
                run(fix="passed", ok="passed", flip="failed"),
                run(fix="passed", ok="passed", flip="passed"),
            ],
        }
    )
    task = validate_one(_task("t"), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert task.FAIL_TO_PASS == ["tests/t.py::fix"]
    assert task.PASS_TO_PASS == ["tests/t.py::ok"]
    assert (task.model_extra or {})["flaky_tests"] == ["tests/t.py::flip"]
    assert [c[1] for c in script.calls] == ["before", "after"] * 3
    assert [c[2].name for c in script.calls] == [
        "before-1", "after-1", "before-2", "after-2", "before-3", "after-3",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("before", "after", "stage", "calls"),
    [
        (Run({"tests/t.py": Outcome("error")}), run(a="passed"), "collect", 1),
        (Run(), run(a="passed"), "collect", 1),
        (run(a="passed"), run(a="passed"), "no_f2p", 2),
        (run(a="failed"), run(a="failed"), "no_f2p", 2),
        (run(a="failed"), Run(patch_error="does not apply"), "patch", 2),
        (Run(error="environment build failed"), run(a="passed"), "infra", 1),
    ],
)
def test_rejections(tmp_path: Path, before: Run, after: Run, stage: str, calls: int) -> None:
    script = Script({("t", "before"): [before], ("t", "after"): [after]})
    with pytest.raises(Rejected) as info:
        validate_one(_task("t"), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert info.value.stage == stage
    assert len(script.calls) == calls  # hopeless candidates stop early


def test_a_test_patch_without_a_runnable_module_is_rejected_without_running(
    tmp_path: Path,
) -> None:
    docs_only = TEST_PATCH.replace("tests/t.py", "tests/data/sample.txt")
    script = Script({})
    with pytest.raises(Rejected) as info:
        validate_one(_task("t", docs_only), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert info.value.stage == "tests" and script.calls == []


def test_a_test_that_only_looked_fixed_once_is_flaky(tmp_path: Path) -> None:
    script = Script(
        {
            ("t", "before"): [run(a="failed")],
            ("t", "after"): [run(a="passed"), run(a="failed")],
        }
    )
    with pytest.raises(Rejected, match="flaky"):
        validate_one(_task("t"), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]


def test_validate_writes_tasks_and_rejects_and_resumes(tmp_path: Path) -> None:
    table = {
        ("good", "before"): [run(a="failed", b="passed")],
        ("good", "after"): [run(a="passed", b="passed")],
        ("nof2p", "before"): [run(a="passed")],
        ("nof2p", "after"): [run(a="passed")],
        ("infra", "before"): [Run(error="uv could not resolve")],
        ("infra", "after"): [run(a="passed")],
        ("boom", "before"): [run(a="failed")],
    }
    script = Script(table)
    out = tmp_path / "tasks.jsonl"
    candidates = [_task(i) for i in ("good", "nof2p", "infra", "boom")]
    done: list[str] = []
    summary = validate(
        candidates,
        out,
        Ctx(tmp_path),  # type: ignore[arg-type]
        runner=script,
        workers=2,
        on_done=lambda iid, outcome: done.append(iid),
    )
    assert sorted(done) == ["boom", "good", "infra", "nof2p"]
    assert summary.valid == 1
    assert summary.rejected == {"no_f2p": 1, "infra": 2}
    tasks, _ = load_tasks(out)
    assert [t.FAIL_TO_PASS for t in tasks] == [["tests/t.py::a"]]
    rejects = {
        r["instance_id"]: r
        for r in map(json.loads, (tmp_path / "tasks.rejects.jsonl").read_text().splitlines())
    }
    assert rejects["boom"]["reason"].startswith("harness error: KeyError")
    assert rejects["infra"]["reason"] == "before-run failed: uv could not resolve"
    assert rejects["nof2p"]["log_dir"] == str(tmp_path / "validate" / "nof2p")

    # A re-run decides nothing twice; --retry-errors tries the infrastructure failures again.
    calls = len(script.calls)
    again = validate(candidates, out, Ctx(tmp_path), runner=script)  # type: ignore[arg-type]
    assert again.resumed == 4 and len(script.calls) == calls
    table[("infra", "before")] = [run(a="failed")]
    retried = validate(candidates, out, Ctx(tmp_path), runner=script, retry_errors=True)  # type: ignore[arg-type]
    assert retried.resumed == 2 and retried.valid == 1
    assert {c[0] for c in script.calls[calls:]} == {"infra", "boom"}
    assert sorted(t.instance_id for t in load_tasks(out)[0]) == ["good", "infra"]
    assert len((tmp_path / "tasks.rejects.jsonl").read_text().splitlines()) == 2
    # A smaller candidates file: what it no longer holds leaves the outputs.
    validate(candidates[1:], out, Ctx(tmp_path), runner=script)  # type: ignore[arg-type]
    assert [t.instance_id for t in load_tasks(out)[0]] == ["infra"]
