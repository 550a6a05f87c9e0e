"""Per-run cgroup v1 groups (pids, memory): a process cap and a memory cap for the whole tree.

RLIMIT_NPROC counts every process of the sandbox uid on the machine, so it cannot tell two
concurrent runs apart; a pids cgroup bounds one run's tree. A memory cgroup OOM-kills the tree
where RLIMIT_AS only bounds each process. The groups are made inside the harness's own group of
each hierarchy, so any limit the machine puts on the harness still applies, and removed after
the run. Without root or without v1 hierarchies this is a no-op (rlimits remain).

A group's name carries its harness's pid (and pid namespace): a harness killed mid-run (a Ray
worker) cannot remove its groups, so the next harness to run a sandbox there kills what is
left in them and removes them (a bwrap sandbox already ends with its launcher, whose child is
the pid 1 of its pid namespace, see _launch.py; this catches what an unsafe run left behind).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import signal
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

_KILL_ROUNDS = 200
_PREFIX = "swebounty-"
_STALE_AGE_S = 600.0


def _mounts() -> dict[str, Path]:
    """controller -> mount point of its v1 hierarchy; "" -> the cgroup v2 mount."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        # "... mountpoint options - fstype source superoptions"
        before, _, after = line.partition(" - ")
        fields = after.split()
        if len(fields) < 3:
            continue
        mount_point = Path(before.split()[4])
        if fields[0] == "cgroup2":
            found.setdefault("", mount_point)
        elif fields[0] == "cgroup":
            for controller in fields[2].split(","):
                if controller in ("pids", "memory"):
                    found.setdefault(controller, mount_point)
    return found


def _own_paths() -> dict[str, str]:
    """controller ("" for v2) -> this process's group path in that hierarchy."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            paths[controller] = path
    return paths


def _settings(memory_bytes: int, max_procs: int) -> dict[str, list[tuple[str, str]]]:
    return {
        "pids": [("pids.max", str(max_procs))],
        # memsw must be set after (and not below) the plain limit; it is absent without swap
        # accounting.
        "memory": [
            ("memory.limit_in_bytes", str(memory_bytes)),
            ("memory.memsw.limit_in_bytes", str(memory_bytes)),
        ],
        # v2: limits only take if the parent delegates the controllers; tracking always works.
        "": [("pids.max", str(max_procs)), ("memory.max", str(memory_bytes))],
    }


def sweep_stale(parent: Path, pattern: str, min_age_s: float = _STALE_AGE_S) -> None:
    """Remove empty leftovers (from a harness killed mid-run) matching `pattern` in `parent`.

    Only old ones: a fresh group is empty for the few ms before its launcher joins it. rmdir
    refuses a group with processes or a directory with files, so a live run is never touched.
    """
    now = time.time()
    for path in parent.glob(pattern):
        try:
            if now - path.stat().st_mtime > min_age_s:
                path.rmdir()
                log.info("removed stale %s", path)
        except OSError:
            continue


@functools.cache
def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _harness_tag() -> str:
    return f"h{_pid_namespace()}.{os.getpid()}"


def harness_tag() -> str:
    """This harness process's tag (pid namespace and pid), put in the names of what it makes
    on the host so that another harness can tell whether its maker still runs."""
    return _harness_tag()


_TAG = re.compile(r"h(\d+)\.(\d+)-")


def maker_died(name_rest: str) -> bool | None:
    """Whether the harness whose tag starts `name_rest` has died: None when the name carries
    no tag (made by an older swebounty) or one of another pid namespace (not ours to judge)."""
    found = _TAG.match(name_rest)
    if found is None or int(found[1]) != _pid_namespace():
        return None
    return not _alive(int(found[2]))


_OWNED = re.compile(rf"{_PREFIX}h(\d+)\.(\d+)-[0-9a-f]{{12}}")


def sweep_orphans(parent: Path) -> None:
    """Kill what is left in, and remove, the groups in `parent` whose harness has died."""
    for path in parent.glob(f"{_PREFIX}h*"):
        found = _OWNED.fullmatch(path.name)
        if found is None or int(found[1]) != _pid_namespace() or _alive(int(found[2])):
            continue  # not ours to judge (another pid namespace), or its harness still runs
        orphan = RunCgroups.of([path])
        if orphan.pids():
            log.warning("killing a sandbox left running by dead harness %s", found[2])
        orphan.remove()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@functools.cache
def _swept(parent: Path) -> bool:
    sweep_orphans(parent)
    sweep_stale(parent, f"{_PREFIX}*")
    return True


class RunCgroups:
    """The groups of one run. Create, let the launcher join them, `kill_all`, `remove`.

    v1 pids/memory groups carry the limits; a v2 group (if a cgroup2 hierarchy is mounted)
    tracks the tree for `kill_all` and carries limits where the machine delegates them.
    """

    def __init__(self, *, max_procs: int, memory_bytes: int) -> None:
        self.dirs: list[Path] = []
        self.required: list[bool] = []
        if os.geteuid() != 0:
            return
        own = _own_paths()
        name = f"{_PREFIX}{_harness_tag()}-{uuid.uuid4().hex[:12]}"
        settings = _settings(memory_bytes, max_procs)
        for controller, mount_point in _mounts().items():
            parent = mount_point / own.get(controller, "/").lstrip("/")
            _swept(parent)
            group = parent / name
            try:
                group.mkdir()
            except OSError as e:
                log.debug("no %s cgroup for the sandbox (%s)", controller or "v2", e)
                continue
            self.dirs.append(group)
            self.required.append(controller != "")
            for filename, value in settings[controller]:
                if not (group / filename).exists():
                    continue
                try:
                    (group / filename).write_text(value)
                except OSError as e:
                    log.debug("cannot set %s/%s (%s)", group, filename, e)

    @classmethod
    def of(cls, dirs: list[Path]) -> RunCgroups:
        """The existing groups `dirs` (to empty and remove them)."""
        groups = cls.__new__(cls)
        groups.dirs, groups.required = list(dirs), [True] * len(dirs)
        return groups

    @property
    def join_spec(self) -> list[tuple[str, bool]]:
        """(cgroup.procs file, whether failing to join it must stop the run) for the launcher."""
        return [
            (str(d / "cgroup.procs"), req) for d, req in zip(self.dirs, self.required, strict=True)
        ]

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
        return found

    def signal_all(self) -> bool:
        """One pass of SIGKILL over the groups' processes. True when there were none."""
        for d in self.dirs:
            # v2 (5.14+): the kernel kills the whole group at once, no fork can race it.
            with contextlib.suppress(OSError):
                (d / "cgroup.kill").write_text("1")
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return not pids

    def kill_all(self) -> bool:
        """SIGKILL every process in the groups until they are empty. True when empty.

        Call it after the harness reaped its own child: processes forked between two passes
        are caught by the next one.
        """
        for _ in range(_KILL_ROUNDS):
            if self.signal_all():
                return True
            # Killed processes leave the group only once reaped; give the kernel a moment.
            time.sleep(0.005)
        return not self.pids()

    def cpu_seconds(self) -> float | None:
        """CPU seconds every process of the run used, however it ended and whoever reaped it
        (v2 cpu.stat, else a v1 cpuacct group); None when no group measures it."""
        for d in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                for line in (d / "cpu.stat").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
            with contextlib.suppress(OSError, ValueError):
                return int((d / "cpuacct.usage").read_text()) / 1e9
        return None

    def remove(self) -> float | None:
        """Kill what is left, then remove the groups; returns `cpu_seconds` as they end."""
        if self.dirs and not self.kill_all():
            log.warning("processes left in %s after the run; cgroups not removed", self.dirs)
            return self.cpu_seconds()
        cpu = self.cpu_seconds()
        for d in self.dirs:
            # rmdir can fail briefly with EBUSY while the last task is being released.
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.005)
            else:
                log.warning("cannot remove cgroup %s", d)
        self.dirs = []
        self.required = []
        return cpu
