"""The unsafe backend: the command runs as the harness's own user with the host's files.

For machines where bubblewrap cannot run (no user namespaces). It keeps what does not need
isolation: the wall-clock timeout that kills the whole tree, rlimits, capped output, a pids and a
memory cgroup when the harness is root. It does NOT hide the network, the host's files, other
workspaces, the dataset or the run's store: a submitted patch can read and change all of them.
Reports must say so (`isolated = False`); the CLI offers it only behind --unsafe.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from swebounty.sandbox._process import CHANNEL_ENV, Launch, open_channel, run_launch
from swebounty.sandbox.base import Mount, Policy, RunResult

log = logging.getLogger(__name__)

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


class UnsafeSandbox:
    """A plain subprocess with limits; no isolation at all."""

    name = "unsafe"
    isolated = False
    overlays_ephemeral = False  # the command writes the host's files themselves

    def __init__(self) -> None:
        log.warning(
            "UNSAFE SANDBOX: submitted code runs unisolated as uid %d, with network access and "
            "the host's files (other workspaces, the dataset, the run's store). Use it only on "
            "machines without user namespaces, for code you trust.",
            os.getuid(),
        )

    def prepare_workdir(self, path: Path) -> None:
        """Nothing to do: the command runs as the harness's own user."""

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
        if not argv:
            raise ValueError("empty command")
        # mounts need no binding: every host path is visible anyway, and ephemeral mounts are
        # written in place (nothing bounds or undoes the writes of an unsafe run).
        env = {"HOME": "/tmp", "PATH": DEFAULT_PATH, **policy.env}
        launch = Launch(argv=list(argv), env=env, cwd=str(workdir), stdin=stdin)
        channel_r = None
        if result_channel:
            channel_r, channel_w = open_channel()
            env[CHANNEL_ENV] = str(channel_w)
            launch.pass_fds.append(channel_w)
            launch.close_after_start.append(channel_w)
            launch.channel_fd = channel_r
        try:
            return run_launch(launch, policy)
        finally:
            if channel_r is not None:
                os.close(channel_r)
