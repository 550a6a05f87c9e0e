"""Concurrent workers get sandboxes with different host uids, so they cannot starve each other."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from swebounty.sandbox import Mount, Policy, RunResult, bwrap_available, get_sandbox

OK, WHY = bwrap_available()
pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(not OK, reason=f"no bwrap sandbox: {WHY}")]

PREFIXES = sorted({Path(sys.prefix), Path(sys.base_prefix)})  # a venv and its interpreter
BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
SPAWN = "import subprocess, sys\nsys.exit(subprocess.run(['/bin/true']).returncode)\n"


def _workdir(tmp_path: Path, name: str, code: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "main.py").write_text(code)
    return d


def test_slots_have_distinct_uids() -> None:
    uids = {getattr(get_sandbox("bwrap", slot), "uid", None) for slot in range(3)}
    assert len(uids) == 3 and 0 not in uids


def test_a_fork_bomb_starves_its_own_uid_but_not_the_next_slot(tmp_path: Path) -> None:
    bomber, same, other = get_sandbox("bwrap", 0), get_sandbox("bwrap", 0), get_sandbox("bwrap", 1)
    policy = Policy(timeout_s=12, max_procs=64)
    bomb_dir = _workdir(tmp_path, "bomb", BOMB)
    bomber.prepare_workdir(bomb_dir)
    done: list[RunResult] = []

    def bomb() -> None:
        done.append(
            bomber.run(
                [sys.executable, "main.py"],
                workdir=bomb_dir,
                mounts=[Mount(path=p) for p in PREFIXES],
                policy=policy,
            )
        )

    thread = threading.Thread(target=bomb)
    thread.start()
    time.sleep(3)  # the bomb fills its uid's process budget within milliseconds
    results = {}
    for name, sandbox in (("same", same), ("other", other)):
        d = _workdir(tmp_path, name, SPAWN)
        sandbox.prepare_workdir(d)
        try:
            res = sandbox.run(
                [sys.executable, "main.py"],
                workdir=d,
                mounts=[Mount(path=p) for p in PREFIXES],
                policy=Policy(timeout_s=3, max_procs=64),
            )
            results[name] = res.returncode
        except Exception:  # a launch that cannot even fork is a failure too
            results[name] = -1
    thread.join()
    assert done and done[0].timed_out
    assert results["other"] == 0, "a worker with its own uid must not be starved"
    assert results["same"] != 0, "control: the same uid is starved (else this test proves nothing)"
