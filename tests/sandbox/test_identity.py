"""The sandboxed code runs as an unprivileged host uid, without capabilities, with no-new-privs
and seccomp; bwrap's command line holds no host path a test could learn from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.helpers import (
    World,
    _attack,
)
from swebounty.sandbox import (
    BwrapSandbox,
)

IDENTITY = """
status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines()
              if ":\\t" in line)
attempt("uid", os.getuid)
attempt("status", lambda: {k: status[k].strip() for k in
                           ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")})
attempt("home", lambda: os.environ["HOME"])
attempt("write_ws", lambda: open("made-inside.txt", "w").write("x"))
attempt("pid1", lambda: open("/proc/1/cmdline").read().split("\\0"))
report()
"""


@pytest.mark.sandbox
def test_runs_as_an_unprivileged_host_uid_without_capabilities(
    world: World, bwrap: BwrapSandbox
) -> None:
    res = _attack(world, bwrap, IDENTITY)
    status = res["status"]["value"]
    assert status["CapEff"] == status["CapPrm"] == status["CapBnd"] == "0000000000000000"
    assert status["CapAmb"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"
    assert status["Seccomp"] == "2"
    assert res["home"]["value"] == "/tmp"
    # The host sees what the sandbox wrote as owned by a non-root uid.
    owner = (world.ws / "made-inside.txt").stat().st_uid
    assert owner == bwrap.uid
    assert owner != 0
    # Host paths in bwrap's command line are visible inside; the staging dir holds no secret
    # and is gone once the run is over.
    stage = [Path(a) for a in res["pid1"]["value"] if "swebounty-stage-" in a]
    assert all(not p.exists() for p in stage)
    assert str(world.ws) not in res["pid1"]["value"], "mount paths go through --args, not argv"
