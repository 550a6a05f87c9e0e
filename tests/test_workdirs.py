"""Work directories: named for their process, and swept when that process died."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swebounty.evalcontext import EvalContext
from swebounty.workdirs import host_tag, make_work_dir, sweep_dead_work_dirs, work_root


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: its pid names no process (until the kernel reuses it)
    return proc.pid


def _leftover(cache: Path, pid: int, host: str | None = None, kind: str = "run") -> Path:
    path = work_root(cache) / f"swebounty-{os.getuid()}-{kind}{pid}.{host or host_tag()}-x1"
    (path / "ws" / "deep").mkdir(parents=True)
    (path / "ws" / "deep" / "f.py").write_text("x = 1\n")
    return path


def test_a_work_dir_names_its_user_process_and_host(tmp_path: Path) -> None:
    wd = make_work_dir(tmp_path, "ray")
    assert wd.parent == work_root(tmp_path)
    assert wd.name.startswith(f"swebounty-{os.getuid()}-ray{os.getpid()}.{host_tag()}-")
    assert wd.stat().st_mode & 0o777 == 0o711
    with pytest.raises(ValueError, match="lowercase letters"):
        make_work_dir(tmp_path, "r-1")  # would make the name ambiguous to the sweep


def test_only_the_leftovers_of_dead_processes_of_this_user_and_host_are_swept(
    tmp_path: Path,
) -> None:
    dead = _dead_pid()
    stale = _leftover(tmp_path, dead)
    stale_worker = _leftover(tmp_path, dead, kind="ray")
    live = _leftover(tmp_path, os.getpid())
    other_host = _leftover(tmp_path, dead, host="0" * 8 if host_tag() != "0" * 8 else "1" * 8)
    target = tmp_path / "target"
    (target / "keep").mkdir(parents=True)
    link = work_root(tmp_path) / f"swebounty-{os.getuid()}-run{dead}.{host_tag()}-link"
    link.symlink_to(target)
    unnamed = work_root(tmp_path) / f"swebounty-{os.getuid()}-abcdef"  # an older name: unknown
    unnamed.mkdir()

    assert sweep_dead_work_dirs(tmp_path) == 2
    assert not stale.exists() and not stale_worker.exists()
    assert live.exists() and other_host.exists() and unnamed.exists()
    assert link.is_symlink() and (target / "keep").is_dir()  # never followed


def test_a_new_run_sweeps_what_a_killed_one_left(tmp_path: Path) -> None:
    stale = _leftover(tmp_path, _dead_pid())
    ctx = EvalContext.create(cache_dir=tmp_path, runs_dir=tmp_path / "runs", sandbox="none")
    try:
        assert not stale.exists()
        assert ctx.work_dir.exists() and f"-run{os.getpid()}." in ctx.work_dir.name
    finally:
        ctx.close()
