"""Bounded, ephemeral writes that never reach the host; the result channel and stdin (with and
without a sandbox); the launcher's imports.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from sandbox.helpers import (
    PYTHON,
    World,
    _submit,
)
from swebounty.sandbox import (
    BwrapSandbox,
    Mount,
    Policy,
    UnsafeSandbox,
)

FLOOD_DISK = """
def many_files():
    n = 0
    try:
        while n < 100_000:
            open("f%d" % n, "w").close()
            n += 1
    except OSError as e:
        return [n, e.errno]
def big_file():
    try:
        with open("big", "wb") as f:
            for _ in range(1024):
                f.write(b"0" * (1 << 20))
    except OSError as e:
        return e.errno
attempt("files", many_files)
attempt("bytes", big_file)
attempt("channel", lambda: os.write(int(os.environ["SWEBOUNTY_RESULT_FD"]), sys.stdin.read().encode()))
report()
"""


@pytest.mark.sandbox
def test_ephemeral_writes_are_bounded_and_never_reach_the_host(
    world: World, bwrap: BwrapSandbox
) -> None:
    if os.geteuid() != 0:
        pytest.skip("the bounded scratch area is a tmpfs the launcher mounts as root")
    _submit(world, bwrap, "attack.py", FLOOD_DISK)
    before = sorted(p.name for p in world.ws.iterdir())
    mounts = [*world.mounts(), Mount(path=world.ws, ephemeral=True)]
    policy = Policy(timeout_s=60, disk_bytes=16 << 20, disk_inodes=500)
    result = bwrap.run([PYTHON, "attack.py", world.token], workdir=world.ws, mounts=mounts,
                       policy=policy, stdin=b"the key", result_channel=True)  # fmt: skip
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("RESULTS="))
    res = json.loads(line.removeprefix("RESULTS="))
    count, err = res["files"]["value"]
    assert err == errno.ENOSPC and count < 500
    assert res["bytes"]["value"] == errno.ENOSPC
    assert result.channel == b"the key"
    assert sorted(p.name for p in world.ws.iterdir()) == before, "the host tree was written"


def test_the_channel_and_stdin_work_without_a_sandbox_too(world: World) -> None:
    sb = UnsafeSandbox()
    code = "import os, sys; os.write(int(os.environ['SWEBOUNTY_RESULT_FD']), sys.stdin.read().encode())"
    result = sb.run([PYTHON, "-c", code], workdir=world.ws, mounts=[], policy=Policy(timeout_s=30),
                    stdin=b"hello", result_channel=True)  # fmt: skip
    assert result.returncode == 0 and result.channel == b"hello"
    plain = sb.run([PYTHON, "-c", "pass"], workdir=world.ws, mounts=[], policy=Policy(timeout_s=30))
    assert plain.channel is None


def test_the_launcher_imports_only_what_every_launch_needs() -> None:
    # Every sandboxed run starts the launcher: json (and the re it pulls in) and typing each
    # cost about as much CPU as the interpreter's own start.

    from swebounty.sandbox._process import LAUNCHER, launch_spec

    spec = {"argv": ["/bin/true"], "env": {}, "rlimits": {"CORE": 0}, "cgroups": []}
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", str(LAUNCHER), launch_spec(spec)],
        capture_output=True, text=True, env={}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
    assert "marshal" in imported or "resource" in imported  # the report is there
    assert not imported & {"json", "typing", "re", "ctypes"}
