"""An interrupted `swebounty collect` with several workers stops at once: its main thread waits
for the repositories in slices (interruptible.py), so a Ctrl-C it could not take while blocked
still reaches it, and the repositories not yet started are dropped."""

from __future__ import annotations

import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from swebounty.collect import pipeline
from swebounty.collect.pipeline import CollectOptions, collect
from swebounty.collect.repolist import RepoSource
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
