"""Executors: the same run on a Ray cluster gives the local executor's verdicts and loses nothing
when a worker dies mid-task (a missing or misused Ray: test_executors_checks.py).

The `ray` tests share one local cluster of two worker processes, started once for this module the
way `--executor ray` starts one; they skip with the reason when the ray extra is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from typer.testing import CliRunner

from swebounty.demo import build_demo
from swebounty.evalinputs import EvalInputError
from swebounty.evaluation import evaluate
from swebounty.executors import ExecutorConfig, ExecutorError
from swebounty.executors.worker import WorkerSpec
from swebounty.sandbox import bwrap_available
from swebounty.sandbox._lease import LEASE_BASE
from swebounty.store import Store
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict

try:
    import ray  # noqa: F401

    RAY_WHY = ""
except ImportError:
    RAY_WHY = "the ray extra is not installed (pip install -e '.[ray]')"
BWRAP_OK, BWRAP_WHY = bwrap_available()
ON_RAY = (
    pytest.mark.ray,
    pytest.mark.network,  # the demo's environment comes from the package index once
    pytest.mark.skipif(bool(RAY_WHY), reason=RAY_WHY),
    pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}"),
)
TASK_MEMORY_GB = 1.5  # per task: two fit in any CI machine; the demo's tests need far less
runner = CliRunner()
F = TypeVar("F", bound=Callable[..., None])


def on_ray(test: F) -> F:
    """A test that runs on the session's Ray cluster."""
    for mark in ON_RAY:
        test = mark(test)
    return test


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local cluster of two worker processes, started as `--executor ray` starts one.
    Only this module's tests use it: stopped after them, not left running (its daemons take
    CPU and memory) while the rest of the session runs."""
    if RAY_WHY:
        pytest.skip(RAY_WHY)
    from swebounty.executors.ray_cluster import RayCluster

    spec = WorkerSpec(cache_dir=str(tmp_path_factory.mktemp("probe-cache")))
    cluster = RayCluster.connect(
        ExecutorConfig(kind="ray", task_memory_gb=TASK_MEMORY_GB),
        spec,
        workers=2,
        local_memory=int(TASK_MEMORY_GB * (1 << 30)),
    )
    assert cluster.started and cluster.slots == 2
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")  # the demo's environment is built once


def _submissions(cache: Path) -> list[Submission]:
    """One of each outcome: resolved, unresolved (empty), patch_failed, resolved."""
    _, tasks = build_demo(cache / "demo")
    broken = "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n"
    patches = [tasks[0].patch, "", broken, tasks[3].patch]
    return [
        Submission(instance_id=t.instance_id, model_name_or_path="m", model_patch=p)
        for t, p in zip(tasks, patches, strict=True)
    ]


def _ray(**extra: Any) -> ExecutorConfig:
    return ExecutorConfig(**{"kind": "ray", "task_memory_gb": TASK_MEMORY_GB, **extra})


def _comparable(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """What must not depend on where a verdict was produced."""
    fields = {"instance_id", "attempt", "status", "empty_patch", "reason", "hack_flags"}
    fields |= {"tests", "patch_method", "exit_code", "env_key", "test_infra_reverted"}
    rows = [v.model_dump(include=fields) for v in verdicts]
    return sorted(rows, key=lambda r: (r["instance_id"], r["attempt"]))


@pytest.fixture(scope="module")
def local_verdicts(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Verdict]:
    if RAY_WHY or not BWRAP_OK:
        pytest.skip(RAY_WHY or BWRAP_WHY)
    runs = tmp_path_factory.mktemp("local-runs")
    verdicts = evaluate("demo", _submissions(cache_dir), run_id="local", workers=2,
                        cache_dir=cache_dir, runs_dir=runs)  # fmt: skip
    assert [v.status for v in sorted(verdicts, key=lambda v: v.instance_id)] == [
        "resolved",
        "unresolved",
        "patch_failed",
        "resolved",
    ]
    assert {(v.executor, v.node) for v in verdicts} == {("local", os.uname().nodename)}
    return verdicts


def _rows(runs: Path, run_id: str, table: str) -> list[tuple[str, int]]:
    with sqlite3.connect(runs / "runs.sqlite") as db:
        sql = f"SELECT instance_id, attempt FROM {table} WHERE run_id = ?"
        return sorted(db.execute(sql, (run_id,)).fetchall())


# --------------------------------------------------------------------------- on a cluster


@on_ray
@pytest.mark.usefixtures("ray_cluster")
def test_ray_verdicts_equal_the_local_ones_and_resume(
    cache_dir: Path, tmp_path: Path, local_verdicts: list[Verdict]
) -> None:
    runs = tmp_path / "runs"
    subs = _submissions(cache_dir)
    first = evaluate("demo", subs, run_id="r", instance_ids=[subs[0].instance_id,
                     subs[2].instance_id], executor=_ray(), cache_dir=cache_dir, runs_dir=runs)  # fmt: skip
    assert len(first) == 2
    # Resumed: only the two attempts without a verdict are evaluated.
    verdicts = evaluate("demo", subs, run_id="r", executor=_ray(), cache_dir=cache_dir,
                        runs_dir=runs)  # fmt: skip
    assert _comparable(verdicts) == _comparable(local_verdicts)
    assert {v.executor for v in verdicts} == {"ray"}
    assert all(v.node and v.node.startswith(os.uname().nodename + "/") for v in verdicts)
    assert _rows(runs, "r", "verdicts") == [(s.instance_id, 1) for s in subs]
    report = json.loads((runs / "r" / "report.json").read_text())
    assert report["resolved_instances"] == 2 and list(report["executors"]) == ["ray"]
    # The driver wrote the logs under its runs dir, and the verdict says where.
    one = next(v for v in verdicts if v.status == "resolved")
    log_dir = runs / "r" / one.instance_id
    assert one.log_dir == str(log_dir)
    assert {"patch.diff", "test_output.txt", "junit.xml", "verdict.json"} <= {
        p.name for p in log_dir.iterdir()
    }
    assert json.loads((log_dir / "verdict.json").read_text())["log_dir"] == str(log_dir)


def _processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, real uid, command line) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            status = (entry / "status").read_text()
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found[int(entry.name)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]), cmd)
    return found


def _descendants(pid: int, table: dict[int, tuple[int, int, str]]) -> set[int]:
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, (ppid, _, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


def _kill_a_worker_in_its_sandbox(stop: threading.Event, killed: dict[str, Any]) -> None:
    """SIGKILL the first Ray worker caught evaluating a task while its sandbox runs."""
    while not stop.is_set():
        table = _processes()
        for pid, (_, _, cmd) in table.items():
            if not cmd.startswith("ray::evaluate "):
                continue
            below = _descendants(pid, table)
            if any("bwrap" in table[p][2] for p in below if p in table):
                os.kill(pid, signal.SIGKILL)
                killed.update(pid=pid, task=cmd.split()[1], below=below)
                killed["uids"] = {table[p][1] for p in below if table[p][1] >= LEASE_BASE}
                return
        time.sleep(0.01)


@on_ray
@pytest.mark.usefixtures("ray_cluster")
def test_a_worker_killed_mid_task_is_retried_without_a_duplicate(
    cache_dir: Path, tmp_path: Path, local_verdicts: list[Verdict]
) -> None:
    runs = tmp_path / "runs"
    stop, killed = threading.Event(), dict[str, Any]()
    killer = threading.Thread(target=_kill_a_worker_in_its_sandbox, args=(stop, killed))
    killer.start()
    try:
        verdicts = evaluate("demo", _submissions(cache_dir), run_id="k", executor=_ray(),
                            cache_dir=cache_dir, runs_dir=runs)  # fmt: skip
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was caught running a sandbox: nothing was tested"
    # Complete and identical: the killed task was retried by another worker.
    assert _comparable(verdicts) == _comparable(local_verdicts)
    with Store.open(runs) as store:
        assert store.history("k", killed["task"]) == []  # no verdict replaced another
    assert _rows(runs, "k", "verdicts") == sorted((v.instance_id, 1) for v in local_verdicts)
    # The sandbox died with its worker: no process of it is left, so its uid is free again.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        table = _processes()
        left = [p for p in killed["below"] if p in table]
        left += [p for p, (_, uid, _) in table.items() if uid in killed["uids"]]
        if not left:
            break
        time.sleep(0.1)
    assert not left, f"processes of the killed worker's sandbox still run: {left}"


@on_ray
@pytest.mark.usefixtures("ray_cluster")
def test_agent_attempts_on_ray_equal_the_local_ones(cache_dir: Path, tmp_path: Path) -> None:
    from swebounty.agents import create_agent
    from swebounty.attempts import run_agent
    from swebounty.evalcontext import EvalContext
    from swebounty.executors import open_executor

    mirror, tasks = build_demo(cache_dir / "demo")
    results = {}
    for kind in ("local", "ray"):
        runs = tmp_path / kind
        runs.mkdir()
        ctx = EvalContext.create(cache_dir=cache_dir, runs_dir=runs, repos_dir=mirror.parent,
                                 workers=2, timeout_s=300)  # fmt: skip
        remote = open_executor(_ray() if kind == "ray" else ExecutorConfig(), ctx, workers=2)
        assert (remote is None) == (kind == "local")
        with ctx, Store.open(runs) as store:
            store.ensure_run("a", "demo", {}, sandbox=ctx.sandbox.name, unsafe=False)
            agent = create_agent("gold", {}, tasks[:2])
            done = run_agent("a", tasks[:2], agent, ctx, store, attempts=2, workers=2,
                             executor=remote)  # fmt: skip
            assert len(done) == 4 and len(store.attempts("a")) == 4
            results[kind] = [v for _, v in done]
            assert (runs / "a" / tasks[0].instance_id / "attempt.json").is_file()
            assert (runs / "a" / f"{tasks[0].instance_id}.attempt-2" / "junit.xml").is_file()
    assert _comparable(results["ray"]) == _comparable(results["local"])
    assert all(v.resolved and v.executor == "ray" for v in results["ray"])


@on_ray
@pytest.mark.usefixtures("ray_cluster")
def test_validation_on_ray_equals_the_local_one(cache_dir: Path, tmp_path: Path) -> None:
    from swebounty.collect.batch import validate
    from swebounty.evalcontext import EvalContext
    from swebounty.executors import open_executor
    from swebounty.tasks import load_tasks

    mirror, tasks = build_demo(cache_dir / "demo")
    candidates = [t.model_copy(update={"FAIL_TO_PASS": [], "PASS_TO_PASS": []}) for t in tasks[:2]]
    found = {}
    for kind in ("local", "ray"):
        ctx = EvalContext.create(cache_dir=cache_dir, runs_dir=tmp_path / kind,
                                 repos_dir=mirror.parent, workers=2, timeout_s=300)  # fmt: skip
        remote = open_executor(_ray() if kind == "ray" else ExecutorConfig(), ctx, workers=2)
        out = tmp_path / kind / "tasks.jsonl"
        with ctx:
            summary = validate(candidates, out, ctx, runs=1, workers=2, executor=remote)
        assert summary.valid == 2, summary
        found[kind] = {t.instance_id: _tests(t) for t in load_tasks(out)[0]}
        assert (tmp_path / kind / "validate" / tasks[0].instance_id / "after-1").is_dir()
    assert found["ray"] == found["local"]
    assert found["ray"][tasks[0].instance_id] == _tests(tasks[0])


def _tests(task: Task) -> tuple[list[str], list[str]]:
    return sorted(task.FAIL_TO_PASS), sorted(task.PASS_TO_PASS)


@on_ray
def test_the_cli_joins_an_existing_cluster_by_address(
    ray_cluster: Any, cache_dir: Path, tmp_path: Path, local_verdicts: list[Verdict]
) -> None:
    import ray

    address = ray.get_runtime_context().gcs_address
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "swebounty", "eval", "--demo", "--gold", "--run-id", "cli",
           "--executor", "ray", "--address", address, "--task-memory", str(TASK_MEMORY_GB),
           "--cache-dir", str(cache_dir), "--runs-dir", str(runs)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resolved 4/4" in proc.stdout
    assert f"the Ray cluster at {address}" in proc.stderr
    with Store.open(runs) as store:
        nodes = {v.node for v in store.verdicts("cli")}
        assert store.run("cli")["config"]["executor"] == {  # type: ignore[index]
            "kind": "ray",
            "address": address,
            "task_memory_gb": TASK_MEMORY_GB,
        }
    assert nodes == {str(n["node"]) for n in ray_cluster.nodes}


@on_ray
@pytest.mark.usefixtures("ray_cluster")
def test_a_node_unfit_for_the_run_stops_it_first(cache_dir: Path, tmp_path: Path) -> None:
    import ray

    from swebounty.executors import worker
    from swebounty.executors.ray_cluster import _probe_nodes

    spec = WorkerSpec(cache_dir=str(cache_dir), repos_dir="/nonexistent/clones")
    with pytest.raises(ExecutorError, match=r"not ready for this run: .*has no /nonexistent"):
        _probe_nodes(ray.remote(worker.probe_job), spec)
    with pytest.raises(EvalInputError, match=r"no Ray node can hold a task of 1 CPU.*lower"):
        evaluate("demo", "gold", run_id="x", executor=_ray(task_memory_gb=100000),
                 cache_dir=cache_dir, runs_dir=tmp_path)  # fmt: skip
    assert not (tmp_path / "x").exists()  # nothing ran
