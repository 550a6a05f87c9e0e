"""An interrupted `swebounty collect` with several workers stops at once: its main thread waits
for the repositories in slices (interruptible.py), so a Ctrl-C it could not take while blocked
still reaches it, the repositories not yet started are dropped, and those being mined stop at
their next fix (recorded as stopped: the next run mines them again)."""

from __future__ import annotations

import json
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from collect_helpers import build_widget_repo
from swebounty.collect import pipeline
from swebounty.collect.pipeline import CollectOptions, collect
from swebounty.collect.repolist import RepoSource, load_repo_log
from test_interruptible import interrupt_the_waiting_main_thread, python_takes_ctrl_c


def _main_thread_stops_the_pool(timeout_s: float = 10) -> bool:
    """Whether the main thread reaches the pool's shutdown within `timeout_s`."""
    main = threading.main_thread()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(main.ident or 0)
        while frame is not None:
            if frame.f_code.co_name == "shutdown":
                return True
            frame = frame.f_back
        time.sleep(0.01)
    return False


def test_a_ctrl_c_the_main_thread_could_not_take_while_it_waited_stops_collect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mined: list[str] = []
    lock = threading.Lock()

    def mine(source: RepoSource, repo: str, *_: Any) -> None:
        with lock:
            mined.append(repo)
            first = len(mined) == 1
        if first:
            interrupt_the_waiting_main_thread()
        _main_thread_stops_the_pool()  # mining a repository takes until the run stops

    monkeypatch.setattr(pipeline, "_mine_one", mine)
    sources = [RepoSource(path=tmp_path / n, repo=f"o/{n}") for n in "abcd"]
    options = CollectOptions(since=datetime(2026, 1, 1, tzinfo=timezone.utc))
    with python_takes_ctrl_c(), pytest.raises(KeyboardInterrupt):
        collect(sources, options, tmp_path / "out.jsonl", workers=2)
    # b may or may not have started (two workers); c and d were still queued.
    assert "o/a" in mined and set(mined) <= {"o/a", "o/b"}, f"mined after the stop: {mined}"


def test_a_repository_being_mined_stops_at_its_next_fix_and_a_rerun_mines_it_again(
    tmp_path: Path,
) -> None:
    # The main thread used to take the Ctrl-C and then wait in the pool's shutdown while each
    # repository begun was mined to its end: minutes on a big history.
    widget = build_widget_repo(tmp_path / "widget")  # 13 fixes
    sources = [RepoSource(path=widget.path, repo=f"acme/{n}") for n in ("one", "two")]
    options = CollectOptions(since=datetime(2024, 3, 1, tzinfo=timezone.utc))
    out = tmp_path / "run" / "c.jsonl"
    out.parent.mkdir()
    decided: list[str] = []
    lock = threading.Lock()

    def on_fix(iid: str, outcome: str) -> None:
        with lock:
            decided.append(iid)
            first = len(decided) == 1
        if first:
            interrupt_the_waiting_main_thread()
        _main_thread_stops_the_pool()  # each fix takes until the run stops

    with python_takes_ctrl_c(), pytest.raises(KeyboardInterrupt):
        collect(sources, options, out, on_fix=on_fix, workers=2)
    assert len(decided) <= 2, f"mined after the stop: {decided}"  # one fix per worker at most
    log = load_repo_log(out.with_name("c.repos.json"))
    assert log and {r.status for r in log.values()} == {"stopped"}, log  # neither done nor failed

    again = collect(sources, options, out, workers=2)
    assert (again.fixes, again.resumed) == (26, len(decided))
    log = load_repo_log(out.with_name("c.repos.json"))
    assert {r: x.status for r, x in log.items()} == {"acme/one": "done", "acme/two": "done"}
    # Each fix once, as an uninterrupted run decides them (test_collect_pipeline.py: the
    # widget's 13 fixes are 8 candidates and 5 rejects).
    for name, n in (("c.jsonl", 16), ("c.rejects.jsonl", 10)):
        ids = [json.loads(x)["instance_id"] for x in (out.parent / name).read_text().splitlines()]
        assert len(ids) == len(set(ids)) == n, name
