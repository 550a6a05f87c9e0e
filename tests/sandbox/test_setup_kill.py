"""A sandbox being set up dies with its harness, and with the harness's kill, at any step.

bwrap's own chain of parent-death signals has a gap: its child leaves the process group
(setsid()) before it forks the sandbox's pid 1, and only that pid 1 asks for PR_SET_PDEATHSIG,
after the fork. A monitor killed in between leaves pid 1 and the command running with no
parent to die with (CI: a Ray worker killed mid-task left its sandbox running). A stand-in for
bwrap held in that gap makes it certain here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sandbox.helpers import _require_bwrap, _survivors
from swebounty.sandbox import BwrapSandbox, Policy
from swebounty.sandbox._process import kill_until_returned

# bwrap held in its gap: its child has left the session and has not asked to die with its
# parent; the command never runs.
STAND_IN = """#!/bin/sh
[ "$1" = --version ] && { echo "bubblewrap 0.11.0"; exit 0; }
setsid SLEEPER 600 &
wait
"""

HARNESS = """
import sys
from pathlib import Path
from swebounty.sandbox import BwrapSandbox, Policy
sandbox = BwrapSandbox(bwrap=Path(sys.argv[1]))
sandbox.prepare_workdir(Path(sys.argv[2]))
sandbox.run(["true"], workdir=Path(sys.argv[2]), mounts=[], policy=Policy(timeout_s=300))
"""


@pytest.fixture
def stand_in() -> Iterator[tuple[Path, str]]:
    """A stand-in bwrap, and the token on the command line of the process it leaves behind."""
    _require_bwrap()  # what the launcher does around it needs what bwrap needs
    token = f"swebounty-setup-{uuid.uuid4().hex[:10]}"
    # Under /tmp itself: as root the launcher runs it as the sandbox uid, which cannot reach
    # pytest's own (private) temporary directories.
    where = Path(tempfile.mkdtemp(prefix="swebounty-test-"))
    try:
        where.chmod(0o755)
        sleep = shutil.which("sleep")
        assert sleep is not None
        (where / token).symlink_to(sleep)  # the token is its argv[0]
        script = where / "bwrap"
        script.write_text(STAND_IN.replace("SLEEPER", str(where / token)))
        script.chmod(0o755)
        yield script, token
    finally:
        for pid in _survivors(token):  # only what this test started carries its token
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(where)


def _until(check: Callable[[], bool], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.sandbox
def test_a_killed_harness_leaves_nothing_of_a_sandbox_being_set_up(
    stand_in: tuple[Path, str], tmp_path: Path
) -> None:
    script, token = stand_in
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(script), str(tmp_path)])
    try:
        assert _until(lambda: bool(_survivors(token)), 120), "the stand-in never started"
    finally:
        harness.kill()  # a Ray worker killed mid-task
        harness.wait()
    assert _until(lambda: not _survivors(token), 10), "the sandbox outlived its harness"


@pytest.mark.sandbox
def test_the_kill_of_a_run_ends_a_sandbox_being_set_up(
    stand_in: tuple[Path, str], tmp_path: Path
) -> None:
    # As root the run's cgroups catch what left the process group; an ordinary user has none.
    script, token = stand_in
    sandbox = BwrapSandbox(bwrap=script)
    sandbox.prepare_workdir(tmp_path)
    with ThreadPoolExecutor(max_workers=1) as pool:
        run = pool.submit(
            sandbox.run, ["true"], workdir=tmp_path, mounts=[], policy=Policy(timeout_s=300)
        )
        assert _until(lambda: bool(_survivors(token)), 120), "the stand-in never started"
        kill_until_returned([run])  # what an interrupted run does
        assert run.result().returncode != 0
    assert _until(lambda: not _survivors(token), 10), "the sandbox outlived the kill"
