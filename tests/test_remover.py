"""remover.py: workspaces are removed after the evaluation, off its critical path, bounded, never
through a link, and a run (finished or interrupted) waits for every removal it handed over."""

from __future__ import annotations

import gc
import logging
import os
import threading
from pathlib import Path
from typing import Any, cast

import pytest

from run_helpers import one_attempt, verdict_of
from swebounty import remover as remover_mod
from swebounty import runs, safefs
from swebounty.evalcontext import EvalContext
from swebounty.remover import Remover
from swebounty.store import Store
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict


def _tree(path: Path, files: int = 3) -> Path:
    (path / "a" / "b").mkdir(parents=True)
    for i in range(files):
        (path / "a" / "b" / f"f{i}.py").write_text("x = 1\n")
    return path


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """remove_tree, as the remover calls it, waits for this event (the test opens it)."""
    opened = threading.Event()
    real = safefs.remove_tree

    def gated(path: Path) -> str | None:
        if threading.current_thread().name == "swebounty-remover":
            assert opened.wait(30)
        return real(path)

    monkeypatch.setattr(remover_mod.safefs, "remove_tree", gated)
    return opened


def test_trees_go_in_the_background_and_drain_waits_for_them(
    tmp_path: Path, gate: threading.Event
) -> None:
    r = Remover()
    trees = [_tree(tmp_path / "one"), _tree(tmp_path / "two")]
    assert r.remove(trees, "task-1") is None  # returns at once: nothing removed yet
    assert all(t.exists() for t in trees)
    assert not r.drain(timeout=0.2)
    gate.set()
    assert r.drain(timeout=30)
    assert not any(t.exists() for t in trees)
    # Its thread ends when idle (a process makes many contexts) and starts again when needed.
    deadline = threading.Event()
    while r._thread is not None and not deadline.wait(0.01):
        pass
    again = _tree(tmp_path / "three")
    assert r.remove([again]) is None and r.drain(timeout=30) and not again.exists()


def test_beyond_the_bound_the_caller_removes_its_own(tmp_path: Path, gate: threading.Event) -> None:
    r = Remover(max_pending=2)
    queued = [_tree(tmp_path / "one"), _tree(tmp_path / "two")]
    assert r.remove(queued) is None
    late = _tree(tmp_path / "three")
    assert r.remove([late]) is None  # removed now, by this thread: the backlog is full
    assert not late.exists() and all(t.exists() for t in queued)
    gate.set()
    assert r.drain(timeout=30) and not any(t.exists() for t in queued)


def test_after_close_removal_is_the_callers_and_close_drains(
    tmp_path: Path, gate: threading.Event
) -> None:
    r = Remover()
    first = _tree(tmp_path / "one")
    r.remove([first])
    threading.Timer(0.2, gate.set).start()
    r.close()  # waits for `first`
    assert not first.exists()
    second = _tree(tmp_path / "two")
    assert r.remove([second]) is None and not second.exists()


def test_a_tree_is_removed_without_following_its_links(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "outside")
    victim = outside / "a" / "b" / "f0.py"
    tree = _tree(tmp_path / "ws")
    os.symlink(outside, tree / "link-to-dir")
    os.symlink(victim, tree / "a" / "link-to-file")
    os.link(victim, tree / "a" / "hardlink")
    r = Remover()
    r.remove([tree])
    assert r.drain(timeout=30)
    assert not tree.exists()
    assert victim.read_text() == "x = 1\n" and len(list((outside / "a" / "b").iterdir())) == 3


def test_a_missing_tree_is_no_problem(tmp_path: Path) -> None:
    r = Remover()
    assert r.remove([tmp_path / "never-made"]) is None and r.drain(timeout=30)


@pytest.mark.parametrize("interrupted", [False, True])
def test_a_run_waits_for_the_removals_it_handed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: threading.Event, interrupted: bool
) -> None:
    task, sub, ctx = one_attempt(tmp_path / "runs", remover=Remover())
    tree = _tree(tmp_path / "ws")

    def evaluated(task: Task, sub: Submission, ctx: Any, log_dir: Path) -> Verdict:
        ctx.remover.remove([tree], task.instance_id)
        threading.Timer(0.3, gate.set).start()
        if interrupted:
            raise KeyboardInterrupt
        return verdict_of(task, sub, "resolved", "ok", empty_patch=False)

    monkeypatch.setattr(runs, "evaluate_safely", evaluated)
    with Store.open(tmp_path / "runs.sqlite") as store:
        if interrupted:
            with pytest.raises(KeyboardInterrupt):
                runs.evaluate_run("r", [(task, sub)], cast(Any, ctx), store)
        else:
            assert len(runs.evaluate_run("r", [(task, sub)], cast(Any, ctx), store)) == 1
    assert not tree.exists(), "the run returned before its workspace was removed"


def test_a_context_collected_unclosed_lets_its_remover_finish_first(
    tmp_path: Path, gate: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    """Its work directories go when it is collected (or at exit): not from under a workspace
    its remover is still removing (the removal then failed on the vanished parent, logged
    as `cleanup: cannot open ...`)."""
    ctx = EvalContext.create(cache_dir=tmp_path / "cache", runs_dir=tmp_path / "runs",
                             sandbox="none")  # fmt: skip
    work_dir, remover = ctx.work_dir, ctx.remover
    tree = _tree(work_dir / "task-1-abc")
    assert remover.remove([tree], "task-1") is None  # waits at the gate
    threading.Timer(0.3, gate.set).start()
    with caplog.at_level(logging.WARNING, logger="swebounty.remover"):
        del ctx
        gc.collect()
        assert remover.drain(timeout=30)
    assert not work_dir.exists()
    assert [r.getMessage() for r in caplog.records] == []
