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

from swebounty.sandbox._process import Launch, run_launch
from swebounty.sandbox.base import Mount, Policy, RunResult

log = logging.getLogger(__name__)

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


class UnsafeSandbox:
    """A plain subprocess with limits; no isolation at all."""

    name = "unsafe"
    isolated = False

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
        self, argv: list[str], *, workdir: Path, mounts: list[Mount], policy: Policy
    ) -> RunResult:
        if not argv:
            raise ValueError("empty command")
        # mounts need no binding: every host path is visible anyway.
        env = {"HOME": "/tmp", "PATH": DEFAULT_PATH, **policy.env}
        launch = Launch(argv=list(argv), env=env, cwd=str(workdir))
        return run_launch(launch, policy)
