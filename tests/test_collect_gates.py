"""The quality gates: duplicates collapsed, network tests dropped, an oversized FAIL_TO_PASS
rejected, docs/packaging-only fixes not candidates; each counted with its class."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from collect_helpers import GitRepo
from repo_helpers import base_clones
from swebounty.collect.batch import validate
from swebounty.collect.gates import Gates, change_id, network_failures
from swebounty.collect.pipeline import CollectOptions, collect
from swebounty.collect.repolist import parse_repo_arg
from swebounty.collect.validate import Rejected, validate_one
from swebounty.tasks import Task, load_tasks

SINCE = datetime(2025, 1, 1, tzinfo=timezone.utc)
LIB = "def half(x):\n    return x / 2\n"
TESTS = "from lib import half\n\n\ndef test_half():\n    assert half(4) == 2\n"


def _fix(r: GitRepo, n: int, date: str) -> str:
    """PR n: half() floors, with its test."""
    return r.commit(
        f"Make half() floor its result for odd numbers of items (#{n})",
        {
            "lib.py": LIB.replace("x / 2", "x // 2"),
            "tests/test_lib.py": TESTS + "\n\ndef test_odd():\n    assert half(5) == 2\n",
        },
        date,
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    r = GitRepo(tmp_path_factory.mktemp("dup") / "lib")
    r.git("remote", "add", "origin", "https://github.com/acme/lib.git")
    r.commit("Initial commit", {"lib.py": LIB, "tests/test_lib.py": TESTS}, "2024-12-01T10:00:00Z")
    _fix(r, 1, "2025-01-05T10:00:00Z")
    # Reverted, then landed again as it was: one change, not two tasks.
    r.commit(
        "Revert the floor in half() (#2)",
        {"lib.py": LIB, "tests/test_lib.py": TESTS},
        "2025-01-06T10:00:00Z",
    )
    _fix(r, 3, "2025-01-07T10:00:00Z")
    # A fix whose only non-test change is packaging and docs.
    r.commit(
        "Fix the version shown in the docs (#4)",
        {
            "setup.py": "VERSION = '1.1'\n",
            "docs/conf.py": "release = '1.1'\n",
            "tests/test_version.py": "def test_version():\n    assert True\n",
        },
        "2025-01-08T10:00:00Z",
    )
    return r


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_duplicates_and_docs_only_fixes_are_no_candidates(repo: GitRepo, tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    summary = collect([parse_repo_arg(str(repo.path))], CollectOptions(since=SINCE), out)
    assert [t.instance_id for t in load_tasks(out)[0]] == ["acme__lib-1"]
    rejects = {r["instance_id"]: r for r in _lines(out.with_suffix(".rejects.jsonl"))}
    assert rejects["acme__lib-3"]["stage"] == "duplicate"
    assert "acme__lib-1" in rejects["acme__lib-3"]["reason"]
    assert rejects["acme__lib-4"]["reason"] == "no code change (only tests, docs or packaging)"
    assert summary.rejected["duplicate"] == 1
    # Resumed with a fresh memory: the duplicate is still known as one (from the file).
    out.with_suffix(".rejects.jsonl").unlink()
    collect([parse_repo_arg(str(repo.path))], CollectOptions(since=SINCE), out)
    again = _lines(out.with_suffix(".rejects.jsonl"))
    assert {r["instance_id"]: r["stage"] for r in again}["acme__lib-3"] == "duplicate"


def test_change_id_ignores_where_the_change_landed() -> None:
    a = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n ctx\n-old\n+new\n"
    moved = "--- a/x.py\n+++ b/x.py\n@@ -40,2 +40,2 @@\n other ctx\n-old\n+new\n"
    assert change_id(a, "") == change_id(moved, "")
    assert change_id(a, "") != change_id(a.replace("+new", "+newer"), "")
    assert change_id(a, "") != change_id("", a)


# ---------------------------------------------------------------- gates judged at validation


@dataclass
class Outcome:
    status: str
    message: str = ""


@dataclass
class Run:
    outcomes: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = 0
    error: str | None = None
    patch_error: str | None = None
    env_key: str | None = "env-1"


def _runner(before: Run, after: Run) -> Any:
    def run(task: Task, patch: str, ctx: Any, log_dir: Path) -> Run:
        return after if patch else before

    return run


TEST_PATCH = (
    "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n"
    "@@ -1 +1,2 @@\n x = 1\n+def test_a(): pass\n"
)
OFFLINE = "socket.gaierror: [Errno -3] Temporary failure in name resolution"


def _task(iid: str = "t") -> Task:
    return Task(
        instance_id=iid,
        repo="o/r",
        base_commit="abc",
        patch="d",
        test_patch=TEST_PATCH,
        ecosystem="python",  # as collect sets it
    )


@dataclass
class Ctx:
    """What validate_one reads of a context besides the runner (see test_collect_validate)."""

    runs_dir: Path
    repos_dir: Path | None = None
    cache_dir: Path = Path("/nonexistent")
    envs: Any = field(default_factory=lambda: type("Envs", (), {"overrides": []})())

    def __post_init__(self) -> None:
        if self.repos_dir is None:
            self.repos_dir = base_clones(self.runs_dir / "repos", ["o/r"])


def test_network_failures_read_the_failure_text() -> None:
    outcomes = {
        "t::net": Outcome("failed", OFFLINE),
        "t::local": Outcome("failed", "ConnectionRefusedError: connect to localhost:8000"),
        "t::ok": Outcome("passed", OFFLINE),
    }
    assert list(network_failures(outcomes)) == ["t::net"]


def test_a_candidate_whose_tests_need_the_network_is_rejected_as_network(tmp_path: Path) -> None:
    before = Run({"tests/t.py::test_a": Outcome("failed", OFFLINE)})
    after = Run({"tests/t.py::test_a": Outcome("failed", OFFLINE)})
    with pytest.raises(Rejected) as info:
        validate_one(_task(), Ctx(tmp_path), tmp_path, runner=_runner(before, after))  # type: ignore[arg-type]
    assert info.value.stage == "network" and "name resolution" in info.value.reason


def test_network_tests_beside_a_real_fix_are_recorded_and_never_graded(tmp_path: Path) -> None:
    before = Run({"tests/t.py::fix": Outcome("failed"), "tests/t.py::net": Outcome("failed")})
    after = Run(
        {"tests/t.py::fix": Outcome("passed"), "tests/t.py::net": Outcome("failed", OFFLINE)}
    )
    task = validate_one(_task(), Ctx(tmp_path), tmp_path, runner=_runner(before, after))  # type: ignore[arg-type]
    assert task.FAIL_TO_PASS == ["tests/t.py::fix"] and task.PASS_TO_PASS == []
    assert (task.model_extra or {})["validation"]["network_tests"] == ["tests/t.py::net"]


def test_too_many_fail_to_pass_is_rejected_with_its_class_and_costs(tmp_path: Path) -> None:
    many = {f"tests/t.py::test_{i}": Outcome("failed") for i in range(5)}
    fixed = {tid: Outcome("passed") for tid in many}
    out = tmp_path / "tasks.jsonl"
    summary = validate(
        [_task("big")],
        out,
        Ctx(tmp_path),  # type: ignore[arg-type]
        runner=_runner(Run(many), Run(fixed)),
        gates=Gates(max_fail_to_pass=4),
    )
    assert summary.valid == 0 and summary.rejected == {"too_many_f2p": 1}
    (reject,) = _lines(tmp_path / "tasks.rejects.jsonl")
    assert reject["class"] == "too many FAIL_TO_PASS"
    assert "5 FAIL_TO_PASS tests in tests/t.py, more than 4" in reject["reason"]
    assert reject["env_key"] == "env-1" and reject["wall_seconds"] >= 0
    assert reject["cpu_seconds"] >= 0
    # Under the cap it is a task, and its validation says what it cost.
    summary = validate(
        [_task("big")],
        out,
        Ctx(tmp_path),  # type: ignore[arg-type]
        runner=_runner(Run(many), Run(fixed)),
        gates=Gates(max_fail_to_pass=5),
        fresh=True,
    )
    (task,) = load_tasks(out)[0]
    validation = (task.model_extra or {})["validation"]
    assert validation["env_key"] == "env-1" and "cpu_seconds" in validation


def test_a_rejection_keeps_its_costs_across_a_pickle() -> None:
    import pickle

    rej = pickle.loads(pickle.dumps(Rejected("network", "offline", {"cpu_seconds": 1.5})))
    assert (rej.stage, rej.reason, rej.facts) == ("network", "offline", {"cpu_seconds": 1.5})


@dataclass
class Judged(Run):
    failure: str | None = None


def test_a_run_whose_reporting_was_judged_tampered_with_is_unusable(tmp_path: Path) -> None:
    tampered = Judged({}, exit_code=1, failure="the tests' reporting was tampered with: x")
    with pytest.raises(Rejected) as info:
        validate_one(_task(), Ctx(tmp_path), tmp_path, runner=_runner(tampered, tampered))  # type: ignore[arg-type]
    assert info.value.stage == "infra" and "tampered" in info.value.reason
