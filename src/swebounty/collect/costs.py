"""What validating candidates costs: wall time and CPU time, environments built and reused, disk.

CPU time is what the harness and the programs it waited for (git, uv, the sandboxed tests)
used. The sandboxed tests' time reaches getrusage() only in part (bwrap's monitor does not reap
the sandbox's pid 1: sandbox/_process.unseen_cpu), so each run's cgroup measures it and the
part getrusage misses is added, per thread. Per candidate it is measured around its
validation: exact with one worker; with several, a child of another thread (git, uv) reaped
while two candidates run is counted in both windows, so per-candidate figures are an upper
bound there, and the run's total (`RunMeter`, process-wide) is the exact one. Where a
sandboxed run could not be measured (no cgroup: not root), `cpu_unmeasured_runs` says how many.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from swebounty.sandbox._process import unseen_cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Meter:
    """Wall and CPU seconds of one candidate's validation, from the calling thread."""

    def __init__(self) -> None:
        self.wall = time.monotonic()
        self.thread = time.thread_time()
        self.children = _children_cpu()
        self.unseen = unseen_cpu()

    def read(self) -> dict[str, Any]:
        unseen, unmeasured = unseen_cpu()
        cpu = (
            (time.thread_time() - self.thread)
            + (_children_cpu() - self.children)
            + (unseen - self.unseen[0])
        )
        out: dict[str, Any] = {
            "wall_seconds": round(time.monotonic() - self.wall, 2),
            "cpu_seconds": round(cpu, 2),
            # False: some sandboxed runs' time is missing (the funnel counts such candidates;
            # records written before this was measured have no such key and count too).
            "cpu_complete": unmeasured == self.unseen[1],
        }
        if unmeasured > self.unseen[1]:
            out["cpu_unmeasured_runs"] = unmeasured - self.unseen[1]
        return out


class RunMeter:
    """Wall and CPU seconds of a whole run, this process and all it waited for."""

    def __init__(self) -> None:
        self.wall = time.monotonic()
        self.cpu = self._cpu()
        self.unmeasured = unseen_cpu(whole_process=True)[1]

    @staticmethod
    def _cpu() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        return me.ru_utime + me.ru_stime + _children_cpu() + unseen_cpu(whole_process=True)[0]

    def read(self) -> dict[str, float]:
        out = {
            "wall_seconds": round(time.monotonic() - self.wall, 1),
            "cpu_seconds": round(self._cpu() - self.cpu, 1),
        }
        unmeasured = unseen_cpu(whole_process=True)[1] - self.unmeasured
        if unmeasured:
            out["cpu_unmeasured_runs"] = unmeasured
        return out


def env_root(cache_dir: Path) -> Path:
    """Where a run's environments are: EvalContext's EnvManager(cache_dir / "envs") keeps each
    in its CacheLayout's envs/<key>."""
    return cache_dir / "envs" / "envs"


def ready_envs(cache_dir: Path) -> set[str]:
    """Keys of the complete environments in a cache."""
    root = env_root(cache_dir)
    if not root.is_dir():
        return set()
    return {d.name for d in root.iterdir() if (d / "ready.json").exists()}


def tree_bytes(path: Path) -> int:
    """Bytes of the regular files under `path`, links not followed, hard links once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


def env_usage(used: Iterable[str | None], before: set[str], cache_dir: Path) -> dict[str, Any]:
    """Environments the candidates used: how many were built by this run, how many reused from
    the cache, and the environments' size on disk."""
    keys = {k for k in used if k}
    built = keys - before
    disk = sum(tree_bytes(env_root(cache_dir) / k) for k in keys)
    return {
        "used": len(keys),
        "built": len(built),
        "reused": len(keys) - len(built),
        "disk_bytes": disk,
    }
