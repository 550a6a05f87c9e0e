"""Environments prefetched while the workers run tests (collect/prefetch.py): in order, never
too far ahead, never for a candidate a worker has begun, a failure left to the candidate's own
runs, and the same validation results as without; closed, in slices, and interrupted, the
builds ended rather than waited for. `test_collect_e2e.py` runs it with real environments (the
CLI prefetches by default)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from swebounty.collect.batch import validate
from swebounty.collect.prefetch import Prefetch
from swebounty.sandbox._process import kill_running
from swebounty.sandbox.base import Policy, RunResult
from swebounty.sandbox.unsafe import UnsafeSandbox
from swebounty.tasks import Task, load_tasks
from test_collect_validate import Ctx, Script, _task, run
from test_interruptible import interrupt_the_waiting_main_thread, python_takes_ctrl_c


def _wait_for(cond: threading.Condition, check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    with cond:
        while not check():  # type: ignore[operator]
            left = deadline - time.monotonic()
            assert left > 0, "timed out"
            cond.wait(left)


def test_prefetch_stays_within_its_window_and_skips_begun_candidates() -> None:
    todo = [_task(f"c{i}") for i in range(10)]
    seen: list[str] = []
    cond = threading.Condition()

    def warm(task: Task) -> None:
        with cond:
            seen.append(task.instance_id)
            cond.notify_all()

    ahead = Prefetch(todo, warm, threads=1, ahead=3)
    try:
        _wait_for(cond, lambda: len(seen) == 3)
        time.sleep(0.2)  # it must wait here: three candidates ahead of none begun
        assert seen == ["c0", "c1", "c2"]
        for t in todo[:6]:  # the workers overtake it: c3..c5 are theirs to build
            ahead.started(t)
        _wait_for(cond, lambda: len(seen) == 6)
        time.sleep(0.2)
        assert seen == ["c0", "c1", "c2", "c6", "c7", "c8"]
    finally:
        ahead.close()
    assert not any(t.is_alive() for t in ahead.threads)


def test_a_failing_build_does_not_stop_the_next_ones() -> None:
    todo = [_task(f"c{i}") for i in range(3)]
    done: list[str] = []

    def warm(task: Task) -> None:
        if task.instance_id == "c0":
            raise RuntimeError("the index is down")
        done.append(task.instance_id)

    ahead = Prefetch(todo, warm, threads=2, ahead=5)
    ahead.close()  # waits for the builds under way, takes no new one
    # close() may come before the threads take all three; what they took ran, in order.
    assert done == [i for i in ahead.warmed if i != "c0"]
    again = Prefetch(todo, warm, threads=2, ahead=5)
    deadline = time.monotonic() + 10
    while len(again.warmed) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    again.close()
    assert sorted(again.warmed) == ["c0", "c1", "c2"]


def test_cancelled_run_prefetches_nothing() -> None:
    cancelled = threading.Event()
    cancelled.set()
    ahead = Prefetch([_task("c0")], lambda t: None, cancelled=cancelled)
    ahead.close()
    assert ahead.warmed == []


def test_validate_prefetches_ahead_of_the_runs_with_the_same_results(tmp_path: Path) -> None:
    ids = [f"c{i}" for i in range(6)]

    def table() -> dict[tuple[str, str], list[object]]:
        t: dict[tuple[str, str], list[object]] = {}
        for i in ids:
            t[(i, "before")] = [run(a="failed", b="passed")]
            t[(i, "after")] = [run(a="passed", b="passed")]
        t[("c3", "before")] = [run(a="passed")]  # no FAIL_TO_PASS
        t[("c3", "after")] = [run(a="passed")]
        return t

    warmed_at: dict[str, float] = {}
    first_run: dict[str, float] = {}
    lock = threading.Lock()

    def warm(task: Task) -> None:
        with lock:
            warmed_at[task.instance_id] = time.monotonic()

    class Slow(Script):
        def __call__(self, task: Task, patch: str, ctx: object, log_dir: Path) -> object:
            with lock:
                first_run.setdefault(task.instance_id, time.monotonic())
            time.sleep(0.1)  # a test run, while the next environment is built
            return super().__call__(task, patch, ctx, log_dir)

    out_a, out_b = tmp_path / "a" / "tasks.jsonl", tmp_path / "b" / "tasks.jsonl"
    for out in (out_a, out_b):
        out.parent.mkdir()
    plain = validate([_task(i) for i in ids], out_a, Ctx(tmp_path / "a"),  # type: ignore[arg-type]
                     runner=Script(table()), workers=1)  # type: ignore[arg-type]  # fmt: skip
    fetched = validate([_task(i) for i in ids], out_b, Ctx(tmp_path / "b"),  # type: ignore[arg-type]
                       runner=Slow(table()), workers=1, prefetch=1, warm=warm)  # type: ignore[arg-type]  # fmt: skip
    assert (plain.valid, plain.rejected) == (fetched.valid, fetched.rejected) == (5, {"no_f2p": 1})
    a = {t.instance_id: (t.FAIL_TO_PASS, t.PASS_TO_PASS) for t in load_tasks(out_a)[0]}
    b = {t.instance_id: (t.FAIL_TO_PASS, t.PASS_TO_PASS) for t in load_tasks(out_b)[0]}
    assert a == b
    # The first candidate starts at once; the later ones found their environment built.
    later = [i for i in ids[1:] if i in warmed_at]
    assert len(later) >= 3
    assert all(warmed_at[i] <= first_run[i] for i in later)


def test_an_interrupted_validate_stops_at_once_and_records_nothing_more(tmp_path: Path) -> None:
    # Ctrl-C used to wait for every queued candidate: the pool's shutdown ran them all.
    ids = [f"c{i}" for i in range(40)]
    table: dict[tuple[str, str], list[object]] = {}
    for i in ids:
        table[(i, "before")] = [run(a="failed")]
        table[(i, "after")] = [run(a="passed")]

    class Slow(Script):
        def __call__(self, task: Task, patch: str, ctx: object, log_dir: Path) -> object:
            time.sleep(0.05)
            return super().__call__(task, patch, ctx, log_dir)

    script = Slow(table)
    ctx = Ctx(tmp_path)
    ctx.cancelled = threading.Event()  # type: ignore[attr-defined]

    def on_done(iid: str, outcome: str) -> None:
        raise KeyboardInterrupt

    out = tmp_path / "tasks.jsonl"
    began = time.monotonic()
    try:
        validate([_task(i) for i in ids], out, ctx, runner=script, workers=2, prefetch=1,  # type: ignore[arg-type]
                 warm=lambda t: None, on_done=on_done)  # fmt: skip
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interruption was swallowed")
    assert time.monotonic() - began < 10
    assert ctx.cancelled.is_set()  # type: ignore[attr-defined]
    started = {c[0] for c in script.calls}
    assert len(started) <= 4, started  # the first one, the other worker's, nothing queued
    # Only what was recorded before the interruption is in the outputs; the rest is redone.
    assert len(out.with_name("tasks.jsonl.partial").read_text().splitlines()) == 1


def test_a_ctrl_c_during_close_ends_the_builds_and_leaves_no_process(tmp_path: Path) -> None:
    # close() joined its threads with no timeout: a Ctrl-C the main thread could not take while
    # it waited came only when the build ended, and a build step in the sandbox (a session of
    # its own, which the terminal's Ctrl-C does not reach) ran to its end meanwhile.
    begun = threading.Event()
    results: list[RunResult] = []
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]

    def warm(task: Task) -> None:
        begun.set()
        results.append(UnsafeSandbox().run(sleeper, workdir=tmp_path, mounts=[],
                                           policy=Policy(timeout_s=120)))  # fmt: skip

    ahead = Prefetch([_task("c0")], warm, threads=1, ahead=1)
    assert begun.wait(30)
    interrupter = threading.Thread(target=interrupt_the_waiting_main_thread)
    with python_takes_ctrl_c(), pytest.raises(KeyboardInterrupt):
        interrupter.start()
        ahead.close()
    interrupter.join()
    assert not ahead.threads[0].is_alive()  # returned before close did: no step left behind
    assert results and results[0].returncode != 0, results  # killed, not run to its end
    assert ahead.cancelled.is_set() and kill_running() == 0


def test_a_build_whose_git_died_of_ctrl_c_stops_the_prefetch_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A terminal's Ctrl-C reaches the git a build runs, which raises KeyboardInterrupt in the
    # prefetch thread (headtree.raise_if_interrupted): it used to die with a traceback.
    uncaught: list[object] = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)

    def warm(task: Task) -> None:
        raise KeyboardInterrupt("git was interrupted")

    ahead = Prefetch([_task("c0"), _task("c1")], warm, threads=1, ahead=5)
    ahead.close()
    assert uncaught == [] and ahead.warmed == ["c0"]
