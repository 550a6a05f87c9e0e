"""A fix that removes a deadlock (issue 28, tqdm PR 1751): the test that hangs before the fix
fails alone at the per-test time limit, so validation finds it FAIL_TO_PASS in seconds and the
empty patch is `unresolved`, not an `error` after the run's timeout. On a small repo this file
builds, through the real validation and evaluation paths and sandbox (`network`: the
environment comes from the package index)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from repo_helpers import BUGGY_PROJECT, diff_of, git, git_repo
from swebounty.sandbox import bwrap_available

BWRAP_OK, BWRAP_WHY = bwrap_available()
WHEN = "2024-03-01T12:00:00+00:00"
LIMIT_S = 3.0
TIMEOUT_S = 240.0  # the run's: a hang the limit missed would cost this, once per run

# `double` takes a lock `_twice` takes again: a non-reentrant lock, so it deadlocks.
DEADLOCKING = """\
import threading

_lock = threading.Lock()


def double(x):
    with _lock:
        return _twice(x)


def _twice(x):
    with _lock:
        return x * 2


def name():
    return "proj"
"""
FIXED = DEADLOCKING.replace("threading.Lock()", "threading.RLock()")

TESTS = """\
import atexit
import threading

from proj.a import double, name


def test_double():
    assert double(2) == 4


def test_name():
    assert name() == "proj"


def test_after_the_hang():
    assert name().upper() == "PROJ"


def test_leaves_a_thread_the_exit_would_wait_for():
    stuck = threading.Thread(target=threading.Event().wait)
    stuck.start()
    atexit.register(stuck.join)  # tqdm's monitor before PR 1751: a hang after the summary
"""


@pytest.mark.sandbox
@pytest.mark.network
@pytest.mark.slow
@pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
def test_a_deadlock_the_fix_removes_is_fail_to_pass_and_the_empty_patch_unresolved(
    tmp_path: Path,
) -> None:
    from swebounty.collect.validate import validate_one
    from swebounty.evalcontext import EvalContext
    from swebounty.evaluation import evaluate
    from swebounty.tasks import Task

    files = {**BUGGY_PROJECT, "proj/a.py": DEADLOCKING}
    repo = git_repo(tmp_path / "repos" / "small__proj", files, when=WHEN)
    candidate = Task(
        instance_id="small__proj-1",
        repo="small/proj",
        base_commit=git(repo, "rev-parse", "HEAD").strip(),
        problem_statement="double() never returns",
        patch=diff_of(repo, {"proj/a.py": FIXED}),
        test_patch=diff_of(repo, {"tests/test_a.py": TESTS}),
        created_at="2024-03-01T12:00:00Z",
    )
    kw = {"repos_dir": tmp_path / "repos", "cache_dir": tmp_path / "cache"}
    ctx = EvalContext.create(
        runs_dir=tmp_path / "runs", timeout_s=TIMEOUT_S, test_limit_s=LIMIT_S, **kw
    )
    task = validate_one(candidate, ctx, tmp_path / "validate", runs=2)
    assert task.FAIL_TO_PASS == ["tests/test_a.py::test_double"]
    assert task.PASS_TO_PASS == [
        "tests/test_a.py::test_after_the_hang",
        "tests/test_a.py::test_leaves_a_thread_the_exit_would_wait_for",
        "tests/test_a.py::test_name",
    ]
    validation = (task.model_extra or {})["validation"]
    assert validation["time_limited"] == {"before": ["tests/test_a.py::test_double"]}
    assert validation["test_limit_s"] == LIMIT_S
    junit = (tmp_path / "validate" / "before-2" / "junit.xml").read_text()
    assert "swebounty: this test ran longer than 3 s" in junit

    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    runs = tmp_path / "runs"
    gold = evaluate(dataset, "gold", run_id="gold", runs_dir=runs, test_limit_s=LIMIT_S, **kw)
    assert [v.status for v in gold] == ["resolved"], gold[0].reason
    start = time.monotonic()
    empty = evaluate(dataset, "empty", run_id="empty", runs_dir=runs, test_limit_s=LIMIT_S, **kw)
    assert [v.status for v in empty] == ["unresolved"], empty[0].reason
    assert empty[0].hack_flags == [] and empty[0].seconds < TIMEOUT_S / 2
    failed = {t.test_id: (t.status, t.message) for t in empty[0].tests if t.status != "passed"}
    assert list(failed) == ["tests/test_a.py::test_double"]
    status, message = failed["tests/test_a.py::test_double"]
    assert status == "failed" and "swebounty: this test ran longer than 3 s" in message
    assert time.monotonic() - start < TIMEOUT_S / 2  # seconds, not the run's timeout


def test_the_limit_s_default_and_the_cli_s_option() -> None:
    import typer

    from swebounty.cli._common import _test_limit
    from swebounty.sandbox import Policy
    from swebounty.testlimit import DEFAULT_TEST_LIMIT_S

    assert Policy().test_limit_s == DEFAULT_TEST_LIMIT_S == 600.0
    assert Policy().timeout_s > 2 * DEFAULT_TEST_LIMIT_S  # the run goes on after one hang
    assert _test_limit(None) == DEFAULT_TEST_LIMIT_S
    assert _test_limit(0) is None  # no limit but the run's timeout
    assert _test_limit(45) == 45
    with pytest.raises(typer.BadParameter):
        _test_limit(-1)


def test_a_ray_worker_gets_the_driver_s_limit(tmp_path: Path) -> None:
    from swebounty.evalcontext import EvalContext
    from swebounty.executors.worker import WorkerSpec

    with EvalContext.create(
        cache_dir=tmp_path / "cache", runs_dir=tmp_path / "runs", sandbox="none", test_limit_s=7
    ) as ctx:
        assert ctx.policy.test_limit_s == 7
        assert WorkerSpec.from_context(ctx, memory_bytes=1 << 30).test_limit_s == 7
