"""The Sandbox protocol: run one command in a workspace under a Policy.

Every backend takes the same inputs and returns the same `RunResult`, so the harness never
knows which one it is using (like httpx transports). Paths inside the sandbox are the same as on
the host: a mount makes a host path visible (read-only unless `writable`), nothing else of the
harness's files is.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

from swebounty.testlimit import DEFAULT_TEST_LIMIT_S

# A DNS name: labels of letters, digits and inner hyphens (nothing a hosts file could misread).
HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")  # fmt: skip


class Mount(BaseModel):
    """A host path made visible inside the sandbox at the same path (or, with `source`, another
    host file shown at `path`: a test service's CA bundle over the environment's)."""

    path: Path
    source: Path | None = Field(
        None, description="bind this host file at `path` instead of `path` itself (read-only)"
    )
    writable: bool = False
    ephemeral: bool = Field(
        False,
        description="writable, but writes go to a scratch area bounded by the Policy's disk "
        "limits and gone after the run: the host path itself is never written",
    )


class Policy(BaseModel):
    """Limits for one sandboxed command. Defaults suit a test suite run."""

    timeout_s: float = Field(1800.0, description="wall clock; the whole process tree is killed")
    test_limit_s: float | None = Field(
        DEFAULT_TEST_LIMIT_S,
        gt=0,
        description="seconds one pytest test (setup, call and teardown) may run before the "
        "harness's guard stops it and fails it alone, the run going on "
        "(pytest_guard/timelimit.py); None: no limit but the run's timeout",
    )
    cpu_s: int | None = Field(None, description="RLIMIT_CPU per process (default: timeout + 60)")
    memory_bytes: int = Field(8 << 30, description="RLIMIT_AS per process")
    limit_address_space: bool = Field(
        True,
        description="RLIMIT_AS = memory_bytes. Off for programs that reserve far more address "
        "space than they use (Chromium's V8 and Oilpan cages reserve terabytes and abort under "
        "any RLIMIT_AS); the per-run memory cgroup, where there is one, still caps real use",
    )
    file_size_bytes: int = Field(1 << 30, description="RLIMIT_FSIZE: largest file written")
    max_procs: int = Field(512, description="processes of the sandbox user (RLIMIT_NPROC)")
    output_limit_bytes: int = Field(4 << 20, description="stdout/stderr kept, each")
    disk_bytes: int = Field(
        2 << 30, description="bytes the ephemeral mounts, /tmp and /dev/shm may hold, each area"
    )
    disk_inodes: int = Field(200_000, description="files the ephemeral mounts may hold")
    channel_limit_bytes: int = Field(
        128 << 20, description="bytes kept from the result channel (RunResult.channel)"
    )
    network: bool = Field(False, description="allow network access (never for grading)")
    env: dict[str, str] = Field(default_factory=dict, description="the whole environment")
    hosts: list[str] = Field(
        default_factory=list,
        description="host names that resolve to 127.0.0.1 inside (the hosts test services "
        "stand in for, services/); isolated backends only",
    )
    low_ports: bool = Field(
        False,
        description="any process inside may listen on ports below 1024 of the sandbox's own "
        "loopback (a stand-in for http://host/ listens on 80); isolated backends only, never "
        "with `network`",
    )

    @field_validator("hosts")
    @classmethod
    def _host_names(cls, value: list[str]) -> list[str]:
        bad = [h for h in value if not HOST_NAME.match(h)]
        if bad:
            raise ValueError(f"not host names: {bad}")
        return value


class RunResult(BaseModel):
    """What a sandboxed command did."""

    returncode: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    truncated: bool = False
    seconds: float = 0.0
    cpu_seconds: float | None = Field(
        None, description="CPU time of every process of the run (its cgroup's); None unmeasured"
    )
    channel: bytes | None = Field(
        None, description="what the command wrote to $SWEBOUNTY_RESULT_FD (result_channel)"
    )
    channel_truncated: bool = False


@runtime_checkable
class Sandbox(Protocol):
    """Runs argv with `workdir` writable and `mounts` visible; nothing else of the host's files."""

    name: str
    isolated: bool  # False only for the --unsafe backend: reports say so

    def run(
        self,
        argv: list[str],
        *,
        workdir: Path,
        mounts: list[Mount],
        policy: Policy,
        stdin: bytes = b"",
        result_channel: bool = False,
    ) -> RunResult:
        """`stdin` is the command's whole standard input (then EOF). With `result_channel`,
        the command inherits a pipe whose fd number is in $SWEBOUNTY_RESULT_FD: what it writes
        there comes back in `RunResult.channel`, never through a file the sandbox could
        replace."""
        ...

    @property
    def overlays_ephemeral(self) -> bool:
        """Whether an ephemeral Mount is an overlay whose writes land in a bounded area of the
        run, so that the sandbox never writes the host path (workdirs.py then keeps such
        workspaces in memory)."""
        ...

    def prepare_workdir(self, path: Path) -> None:
        """Make `path` (a workspace or output dir, or a socket to connect to) the sandbox
        user's."""
        ...
