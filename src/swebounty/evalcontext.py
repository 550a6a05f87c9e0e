"""EvalContext: everything an evaluation needs besides the task and the patch.

The cache (environments, mirrors), the runs directory, this process's work directory
(workdirs.py), the Policy every sandboxed step runs under, and one sandbox per worker slot,
leased to one attempt at a time: each slot has its own host uid and limits, so two attempts
never share a process budget. A run that is interrupted sets `cancelled`, and no new sandbox
starts after it.
"""

from __future__ import annotations

import os
import queue
import shutil
import socket
import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from swebounty.baseline import BaseRun
from swebounty.envs import EnvManager
from swebounty.remover import Remover
from swebounty.sandbox import Sandbox, SandboxError, get_sandbox
from swebounty.sandbox.base import Mount, Policy, RunResult
from swebounty.testlimit import DEFAULT_TEST_LIMIT_S
from swebounty.verdicts import BaseFailures
from swebounty.workdirs import make_memory_work_dir, make_work_dir, sweep_dead_work_dirs

__all__ = ["EvalContext", "RunCancelled", "memory_share"]


@dataclass
class EvalContext:
    """Everything an evaluation needs besides the task and the patch."""

    cache_dir: Path
    runs_dir: Path
    repos_dir: Path | None
    sandbox: Sandbox  # names the backend; attempts run in one leased from `_pool`
    envs: EnvManager
    policy: Policy
    work_dir: Path
    # This process's work directory on a tmpfs, for the workspaces the sandbox overlays, or
    # None: all workspaces go to `work_dir` (workdirs.make_memory_work_dir).
    memory_dir: Path | None = None
    keep_test_infra: bool = False  # --keep-test-infra: grade with the submission's conftest etc.
    # --base-failures: which PASS_TO_PASS tests failing on the unpatched base are excused
    base_failures: BaseFailures = "network"
    base_runs: dict[str, BaseRun] = field(default_factory=dict, repr=False)
    # Set when the run is interrupted: no new sandbox starts, and nothing is saved after it.
    cancelled: threading.Event = field(default_factory=threading.Event, repr=False)
    # What each verdict records as its producer: this process's pool on this host, or a Ray
    # worker on a cluster node (executors/worker.py sets both).
    executor: str = "local"
    node: str = field(default_factory=socket.gethostname)
    # Removes each evaluation's workspace after it, off the critical path (remover.py).
    remover: Remover = field(default_factory=Remover, repr=False)
    # Last in, first out: a worker that leases again gets the slot it just gave back, whose
    # uid owns the kept checkouts of the trees it ran (pristine.py): first in, first out, one
    # worker of two slots alternated between their uids and kept every tree twice.
    _pool: queue.LifoQueue[Sandbox] = field(default_factory=queue.LifoQueue, repr=False)

    @contextmanager
    def lease(self) -> Iterator[Sandbox]:
        """A sandbox no other worker uses meanwhile (each has its own host uid and limits)."""
        if self.cancelled.is_set():
            raise RunCancelled("the run was interrupted")
        sandbox = self._pool.get()
        try:
            yield sandbox
        finally:
            self._pool.put(sandbox)

    def close(self) -> None:
        """Remove this process's work directories (also done when the context is collected,
        or at exit, if never called), once the workspaces handed to the remover are gone."""
        _remove_work_dirs(self.remover, self.work_dir, self.memory_dir)

    def __enter__(self) -> EvalContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def create(
        cls,
        *,
        cache_dir: Path,
        runs_dir: Path,
        repos_dir: Path | None = None,
        sandbox: str = "bwrap",  # or "unsafe"; "none" for contexts that only build envs
        workers: int = 1,
        timeout_s: float = 1800.0,
        test_limit_s: float | None = DEFAULT_TEST_LIMIT_S,
        python_dirs: Iterable[Path] = (),
        offline: bool = False,
        keep_test_infra: bool = False,
        base_failures: BaseFailures = "network",
        memory_bytes: int | None = None,
        work_kind: str = "run",
        sources_dir: Path | None = None,
    ) -> EvalContext:
        """`memory_bytes` per worker defaults to a share of the machine (memory_share);
        `work_kind` names the work directories (workdirs.make_work_dir, make_memory_work_dir);
        `sources_dir` holds sources the projects' builds would download (envs/sources.py;
        default CACHE/sources); leftovers of this user's dead harnesses on this host are
        removed first."""
        cache_dir = cache_dir.expanduser().resolve()
        cache_dir.mkdir(parents=True, exist_ok=True)
        sweep_dead_work_dirs(cache_dir)
        sandboxes: list[Sandbox] = (
            [_NoSandbox()]
            if sandbox == "none"
            else [get_sandbox(sandbox, slot) for slot in range(max(1, workers))]
        )
        overlaid = all(sb.overlays_ephemeral for sb in sandboxes)
        memory_dir = make_memory_work_dir(work_kind, overlaid)
        work_dir = make_work_dir(cache_dir, work_kind)
        ctx = cls(
            cache_dir=cache_dir,
            runs_dir=runs_dir.expanduser().resolve(),
            repos_dir=repos_dir.expanduser().resolve() if repos_dir else None,
            sandbox=sandboxes[0],
            envs=EnvManager(
                cache_dir / "envs",
                python_dirs=list(python_dirs),
                offline=offline,
                sources_dir=sources_dir or cache_dir / "sources",
            ),
            policy=Policy(
                timeout_s=timeout_s,
                test_limit_s=test_limit_s,
                memory_bytes=memory_bytes or memory_share(max(1, workers)),
            ),
            work_dir=work_dir,
            memory_dir=memory_dir,
            keep_test_infra=keep_test_infra,
            base_failures=base_failures,
        )
        for sb in sandboxes:
            ctx._pool.put(sb)
        # Not bound to `ctx` (that would keep it alive): its remover may still be removing a
        # workspace in these directories when it is collected, and must finish first.
        weakref.finalize(ctx, _remove_work_dirs, ctx.remover, work_dir, memory_dir)
        return ctx


def _remove_work_dirs(remover: Remover, work_dir: Path, memory_dir: Path | None) -> None:
    """Wait for the remover's workspaces (it removes them safely, and would otherwise race
    this removal of their parents), then remove the work directories."""
    remover.close()
    shutil.rmtree(work_dir, ignore_errors=True)
    if memory_dir is not None:
        shutil.rmtree(memory_dir, ignore_errors=True)


class _NoSandbox:
    """For contexts that only build environments (`envs build`): running code is refused."""

    name = "none"
    isolated = True
    overlays_ephemeral = False

    def prepare_workdir(self, path: Path) -> None:
        raise SandboxError("this context builds environments only; it runs no tests")

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
        raise SandboxError("this context builds environments only; it runs no tests")


class RunCancelled(SandboxError):
    """The run was interrupted before this attempt could start its sandbox (an infrastructure
    stop, so the test-running path reports it without a traceback; nothing of it is saved)."""


def memory_share(workers: int, fraction: float = 0.75) -> int:
    """Memory per worker: `fraction` of the machine's RAM split between the workers (at least
    512 MiB, at most 16 GiB): a fixed 8 GiB each would let four workers overcommit a 16 GiB
    machine, and starve a 64 GiB one's big builds."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return 8 << 30
    return max(512 << 20, min(16 << 30, int(total * fraction / workers)))
