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

from repo_helpers import base_clones
from swebounty.collect.batch import validate
from swebounty.collect.per_file import crashed, patch_for_file, split_patch
from swebounty.collect.validate import Rejected, validate_one
from swebounty.frameworks.pytest import Pytest
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


CRASH = Run(exit_code=139, error="no test result: the test process was killed by signal 11")


def run(**statuses: str) -> Run:
    return Run({f"tests/t.py::{k}": Outcome(v) for k, v in statuses.items()})


TEST_PATCH = (
    "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n"
    "@@ -1 +1,2 @@\n x = 1\n+def test_a(): pass\n"
)


def _task(iid: str, test_patch: str = TEST_PATCH) -> Task:
    return Task(
        instance_id=iid,
        repo="o/r",
        base_commit="abc",
        patch="diff",
        test_patch=test_patch,
        ecosystem="python",  # as collect sets it
    )


@dataclass
class Ctx:
    """What validate_one reads of a context besides the runner: where the framework registry
    reads the base commit (a made-up one, base_clones) and the overrides."""

    runs_dir: Path
    repos_dir: Path | None = None
    cache_dir: Path = Path("/nonexistent")
    envs: Any = field(default_factory=lambda: type("Envs", (), {"overrides": []})())

    def __post_init__(self) -> None:
        if self.repos_dir is None:
            self.repos_dir = base_clones(self.runs_dir / "repos", ["o/r"])


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
        # The test module does not import before, nor after: the environment is broken.
        (
            Run({"tests/t.py": Outcome("error")}),
            Run({"tests/t.py": Outcome("error")}),
            "collect",
            2,
        ),
        # A module outside the test patch does not import: not what the fix adds.
        (Run({"src/pkg/core.py": Outcome("error")}), run(a="passed"), "collect", 1),
        (Run(), run(a="passed"), "collect", 1),
        # A crash before the fix, but the after-run is broken too.
        (CRASH, Run(error="uv could not resolve"), "infra", 2),
        # A hang killed at the timeout is not rerun per module.
        (Run(exit_code=-9, error="tests timed out after 1800 s"), run(a="passed"), "infra", 1),
        (Run(exit_code=4, error="no test result: usage error"), run(a="passed"), "infra", 1),
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
    # A smaller candidates file: what it no longer holds leaves the outputs, for a file beside
    # each (a subset run must not throw away hours of validation).
    validate(candidates[2:], out, Ctx(tmp_path), runner=script)  # type: ignore[arg-type]
    assert [t.instance_id for t in load_tasks(out)[0]] == ["infra"]
    assert [t.instance_id for t in load_tasks(tmp_path / "tasks.dropped.jsonl")[0]] == ["good"]
    aside = (tmp_path / "tasks.rejects.dropped.jsonl").read_text().splitlines()
    assert [json.loads(line)["instance_id"] for line in aside] == ["nof2p"]


# ---------------------------------------------------------------------------- per-module reruns


def _module(path: str, body: str = "def test_a(): pass") -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+{body}\n\\ No newline at end of file\n"
    )


TWO_MODULES = (
    _module("tests/conftest.py", "import pytest")
    + _module("tests/test_t.py")
    + _module("tests/test_u.py", "from pkg import new_name")
)


def test_patch_for_file_keeps_support_files_and_drops_other_test_modules() -> None:
    files = ["tests/test_t.py", "tests/test_u.py"]
    alone = patch_for_file(TWO_MODULES, "tests/test_t.py", files)
    assert alone == _module("tests/conftest.py", "import pytest") + _module("tests/test_t.py")
    assert patch_for_file(TWO_MODULES, "tests/test_u.py", files) == (
        _module("tests/conftest.py", "import pytest")
        + _module("tests/test_u.py", "from pkg import new_name")
    )
    plain = "--- a/tests/test_t.py\n+++ b/tests/test_t.py\n@@ -1 +1,2 @@\n x\n+y\n"
    assert split_patch(plain) == [("tests/test_t.py", plain.replace("-1 ", "-1,1 "))]


@pytest.mark.parametrize(
    ("exit_code", "error", "expected"),
    [
        (-11, "no test result: killed by signal 11", True),
        (139, "no test result: killed by signal 11", True),
        (-9, "tests timed out after 1800 s", False),
        (1, "no test result: exit code 1", False),
        (None, "environment build failed", False),
        (139, None, False),
    ],
)
def test_crashed(exit_code: int | None, error: str | None, expected: bool) -> None:
    assert crashed(exit_code, error) is expected


class ByModules:
    """Answers run_tests calls by phase and the test modules the task's test patch runs."""

    def __init__(self, table: dict[tuple[str, tuple[str, ...]], Run]) -> None:
        self.table = table
        self.calls: list[tuple[str, tuple[str, ...], str]] = []

    def __call__(self, task: Task, patch: str, ctx: Any, log_dir: Path) -> Run:
        phase = "after" if patch else "before"
        modules = tuple(Pytest().test_files(task))
        self.calls.append((phase, modules, log_dir.name))
        return self.table[(phase, modules)]


mod_t, mod_u = "tests/test_t.py", "tests/test_u.py"


def test_a_module_that_imports_what_the_fix_adds_is_fail_to_pass(tmp_path: Path) -> None:
    script = ByModules(
        {
            # pytest stops at the collection error: test_t.py's results are unknown.
            ("before", (mod_t, mod_u)): Run({mod_u: Outcome("error")}, exit_code=2),
            ("before", (mod_t,)): Run(
                {f"{mod_t}::a": Outcome("passed"), f"{mod_t}::b": Outcome("failed")}
            ),
            ("before", (mod_u,)): Run({mod_u: Outcome("error")}, exit_code=2),
            ("after", (mod_t, mod_u)): Run(
                {f"{m}::{t}": Outcome("passed") for m in (mod_t, mod_u) for t in "ab"}
            ),
        }
    )
    task = validate_one(_task("t", TWO_MODULES), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert [f"{mod_t}::b", f"{mod_u}::a", f"{mod_u}::b"] == task.FAIL_TO_PASS
    assert [f"{mod_t}::a"] == task.PASS_TO_PASS
    assert (task.model_extra or {})["flaky_tests"] == []
    assert (task.model_extra or {})["validation"]["before_per_file"] == "import"
    whole, one, two = (mod_t, mod_u), (mod_t,), (mod_u,)
    assert [c[:2] for c in script.calls] == [
        ("before", whole), ("after", whole), ("before", one), ("before", two),
        ("before", one), ("before", two), ("after", whole),
        ("before", one), ("before", two), ("after", whole),
    ]  # fmt: skip
    assert script.calls[2][2] == "before-1-tests_test_t.py"


def test_a_single_module_that_does_not_import_before_is_not_rerun(tmp_path: Path) -> None:
    script = Script(
        {
            ("t", "before"): [Run({"tests/t.py": Outcome("error")}, exit_code=2)],
            ("t", "after"): [run(a="passed", b="passed")],
        }
    )
    task = validate_one(_task("t"), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert task.FAIL_TO_PASS == ["tests/t.py::a", "tests/t.py::b"]
    assert task.PASS_TO_PASS == []
    assert [c[1] for c in script.calls] == ["before", "after"] * 3


def test_a_crash_the_fix_removes_is_read_per_module(tmp_path: Path) -> None:
    script = ByModules(
        {
            ("before", (mod_t, mod_u)): CRASH,
            ("before", (mod_t,)): Run(
                {f"{mod_t}::a": Outcome("passed"), f"{mod_t}::b": Outcome("failed")}
            ),
            ("before", (mod_u,)): CRASH,
            ("after", (mod_t, mod_u)): Run(
                {f"{m}::{t}": Outcome("passed") for m in (mod_t, mod_u) for t in "ab"}
            ),
        }
    )
    task = validate_one(_task("t", TWO_MODULES), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert [f"{mod_t}::b", f"{mod_u}::a", f"{mod_u}::b"] == task.FAIL_TO_PASS
    assert [f"{mod_t}::a"] == task.PASS_TO_PASS
    assert (task.model_extra or {})["validation"]["before_per_file"] == "crash"
    assert len(script.calls) == 1 + 3 + 3 * 2  # the probe, the after-runs, two modules x 3


def test_a_module_that_fails_another_way_when_run_alone_is_an_infra_error(
    tmp_path: Path,
) -> None:
    script = ByModules(
        {
            ("before", (mod_t, mod_u)): CRASH,
            ("before", (mod_t,)): Run(exit_code=3, error="no test result: internal error"),
            ("before", (mod_u,)): CRASH,
            ("after", (mod_t, mod_u)): Run({f"{mod_t}::a": Outcome("passed")}),
        }
    )
    with pytest.raises(Rejected, match=r"before \(tests/test_t.py\)-run failed") as info:
        validate_one(_task("t", TWO_MODULES), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert info.value.stage == "infra"


SNIPPETS = _module("tests/snippets/a.txt", "1 2") + _module("tests/snippets/b.txt", "2 4")
snip_a, snip_b = "tests/snippets/a.txt", "tests/snippets/b.txt"


def test_data_files_a_conftest_collects_are_read_per_file_after_a_crash(tmp_path: Path) -> None:
    nameless = {f"{f}::": Outcome("passed") for f in (snip_a, snip_b)}  # their items' node ids
    script = ByModules(
        {
            ("before", (snip_a, snip_b)): CRASH,
            ("before", (snip_a,)): CRASH,
            ("before", (snip_b,)): Run({f"{snip_b}::": Outcome("passed")}),
            ("after", (snip_a, snip_b)): Run(nameless),
        }
    )
    task = validate_one(_task("t", SNIPPETS), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert [f"{snip_a}::"] == task.FAIL_TO_PASS
    assert [f"{snip_b}::"] == task.PASS_TO_PASS
    # Files that hold no test pytest collects (an expected output alone): not an infra error.
    script = ByModules({("before", (snip_a, snip_b)): Run(exit_code=5, error="no tests (5)")})
    with pytest.raises(Rejected, match="hold no test pytest collects") as info:
        validate_one(_task("t", SNIPPETS), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert info.value.stage == "collect"
