"""Start one command through the launcher and supervise it: output caps, timeout, tree kill.

Shared by every backend. The command runs in its own session (so the harness can kill its
process group) and, as root, in per-run cgroups (so a child that called setsid is still found).
Output is read incrementally from both pipes with a selector and kept within
`policy.output_limit_bytes` each: the head and the tail survive, the middle is dropped.
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swebounty.sandbox._cgroups import RunCgroups
from swebounty.sandbox.base import Policy, RunResult

log = logging.getLogger(__name__)

LAUNCHER = Path(__file__).with_name("_launch.py")
# After the command exits (or is killed), how long stragglers may keep the pipes open.
_DRAIN_S = 2.0
_CHUNK = 65536


class SandboxError(RuntimeError):
    """The sandbox itself failed (setup, launch): an infrastructure error, not the command's."""


@dataclass
class Launch:
    """What the launcher should do before exec'ing `argv` (see _launch.py)."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    uid: int | None = None
    gid: int | None = None
    stage: dict[str, Any] | None = None
    low_ports: bool = False  # a network namespace of the launcher's whose ports all bind
    pid_namespace: bool = False  # the command runs as pid 1 of a pid namespace (_launch.py)
    pass_fds: list[int] = field(default_factory=list)
    stdin: bytes = b""
    channel_fd: int | None = None  # read end of the result channel (see open_channel)
    close_after_start: list[int] = field(default_factory=list)  # the child's copies suffice


class CappedBuffer:
    """Keeps at most `limit` bytes of a stream: its first half and its last half."""

    def __init__(self, limit: int) -> None:
        self.head_max = limit - limit // 2
        self.tail_max = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_max:
            self.tail += chunk
            # Trim lazily so a stream of small chunks costs amortised O(1) per byte.
            if len(self.tail) > 2 * self.tail_max:
                del self.tail[: -self.tail_max]

    @property
    def truncated(self) -> bool:
        return self.total > self.head_max + self.tail_max

    def text(self) -> str:
        tail = self.tail[-self.tail_max :] if self.tail_max else bytearray()
        if not self.truncated:
            return (self.head + tail).decode("utf-8", errors="replace")
        omitted = self.total - len(self.head) - len(tail)
        return (
            self.head.decode("utf-8", errors="replace")
            + f"\n[... swebounty: {omitted} bytes of output omitted ...]\n"
            + tail.decode("utf-8", errors="replace")
        )


class HeadBuffer:
    """Keeps the first `limit` bytes of a stream (a result must be whole or is not one)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def truncated(self) -> bool:
        return self.total > self.limit


CHANNEL_ENV = "SWEBOUNTY_RESULT_FD"
_STDIN_MAX = 60 << 10  # fits a pipe's buffer: written whole before the command starts


def open_channel() -> tuple[int, int]:
    """(read end, write end) of a result channel; the write end goes to the command."""
    read, write = os.pipe2(os.O_CLOEXEC)
    return read, write


def stdin_pipe(data: bytes) -> int:
    """A pipe holding `data` then EOF, as the command's stdin (read end returned)."""
    if len(data) > _STDIN_MAX:
        raise ValueError(f"stdin for a sandboxed command is limited to {_STDIN_MAX} bytes")
    read, write = os.pipe2(os.O_CLOEXEC)
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read


def rlimits(policy: Policy) -> dict[str, int]:
    """The launcher's setrlimit calls. NPROC counts every process of the real uid on the
    machine, and root ignores it: it only bites once the launcher has dropped to the sandbox
    uid; the per-run pids cgroup bounds each run on its own."""
    return {
        "CPU": policy.cpu_s if policy.cpu_s is not None else int(policy.timeout_s) + 60,
        "AS": policy.memory_bytes if policy.limit_address_space else resource.RLIM_INFINITY,
        "FSIZE": policy.file_size_bytes,
        "NPROC": policy.max_procs,
        "CORE": 0,
    }


def launch_spec(spec: dict[str, Any]) -> str:
    """The launcher's argument: `spec` marshalled (read by the same interpreter) in hex."""
    return marshal.dumps(spec).hex()


def _kill_tree(proc: subprocess.Popen[bytes], cgroups: RunCgroups) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    cgroups.signal_all()


# Every command this process is running, for kill_running. An entry leaves before its process
# is reaped (under the lock), so a pid killed from here is never a reused one.
_running: dict[int, tuple[subprocess.Popen[bytes], RunCgroups]] = {}
_running_lock = threading.Lock()


class _Unseen(threading.local):
    seconds = 0.0
    unmeasured = 0


_unseen = _Unseen()
_unseen_total = [0.0, 0]  # seconds, unmeasured runs (under _running_lock)


def unseen_cpu(*, whole_process: bool = False) -> tuple[float, int]:
    """CPU seconds of sandboxed commands that getrusage(RUSAGE_CHILDREN) never sees, and how
    many runs could not be measured, so far in this thread (or, `whole_process`, in every
    thread). bwrap's monitor exits as soon as the command does, without reaping the sandbox's
    pid 1, which the end of its pid namespace reaps with no one's usage counting it: the tests'
    CPU time never reaches the harness's children's usage. The run's cgroup counts it all (as root); without one, the
    run is counted as unmeasured."""
    if whole_process:
        with _running_lock:
            return _unseen_total[0], int(_unseen_total[1])
    return _unseen.seconds, _unseen.unmeasured


def _count_unseen(group_cpu: float | None, reaped: resource.struct_rusage | None) -> None:
    seen = reaped.ru_utime + reaped.ru_stime if reaped is not None else 0.0
    missing = 0.0 if group_cpu is None else max(0.0, group_cpu - seen)
    unmeasured = int(group_cpu is None)
    _unseen.seconds += missing
    _unseen.unmeasured += unmeasured
    with _running_lock:
        _unseen_total[0] += missing
        _unseen_total[1] += unmeasured


def _reap(proc: subprocess.Popen[bytes]) -> resource.struct_rusage | None:
    """Wait for `proc` like `proc.wait()`, and return the resources it and the descendants it
    reaped used."""
    if proc.returncode is not None:
        return None
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage


def kill_running() -> int:
    """Kill every sandboxed command this process is running now (an interrupted run: the
    commands live in their own sessions, so the terminal's Ctrl-C does not reach them).
    Returns how many were killed; each one's `run` returns as if it had died."""
    with _running_lock:
        for proc, cgroups in _running.values():
            _kill_tree(proc, cgroups)
        return len(_running)


def kill_until_returned(jobs: Iterable[Future[Any]], warn_after_s: float = 10.0) -> None:
    """An interrupted run's last step: end this process's sandboxes until every job in `jobs`
    has returned. Until then, not for a grace period only: the interpreter waits for a pool's
    threads at exit anyway, and a job slow to see the stop (a loaded machine) that starts a
    sandbox after a grace would hold the run for that sandbox's whole command."""
    running = [f for f in jobs if not f.done()]
    deadline, warned = time.monotonic() + warn_after_s, False
    while running:
        kill_running()  # again each round: a job may have started a sandbox meanwhile
        running = list(wait(running, timeout=0.2).not_done)
        if running and not warned and time.monotonic() > deadline:
            log.warning("%d job(s) still finishing after the interruption", len(running))
            warned = True


def run_launch(launch: Launch, policy: Policy) -> RunResult:
    """Run `launch` under `policy`; raises SandboxError if the launcher could not exec."""
    cgroups = RunCgroups(max_procs=policy.max_procs, memory_bytes=policy.memory_bytes)
    status_r, status_w = os.pipe()
    spec = {
        "argv": launch.argv,
        "env": launch.env,
        "cwd": launch.cwd,
        "uid": launch.uid,
        "gid": launch.gid,
        "stage": launch.stage,
        "low_ports": launch.low_ports,
        "pid_namespace": launch.pid_namespace,
        "cgroups": cgroups.join_spec,
        "rlimits": rlimits(policy),
        "status_fd": status_w,
        "harness_pid": os.getpid(),  # the launcher dies with it (PR_SET_PDEATHSIG)
    }
    start = time.monotonic()
    stdin_fd = stdin_pipe(launch.stdin) if launch.stdin else None
    reaped: resource.struct_rusage | None = None
    cpu: float | None = None
    try:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(LAUNCHER), launch_spec(spec)],
                stdin=subprocess.DEVNULL if stdin_fd is None else stdin_fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={},
                pass_fds=[*launch.pass_fds, status_w],
                start_new_session=True,
            )
        finally:
            os.close(status_w)
            if stdin_fd is not None:
                os.close(stdin_fd)
            # The channel's write end must live in the command alone, or it never reads EOF.
            for fd in launch.close_after_start:
                os.close(fd)
        assert proc.stdout is not None and proc.stderr is not None
        with _running_lock:
            _running[proc.pid] = (proc, cgroups)
        out = CappedBuffer(policy.output_limit_bytes)
        err = CappedBuffer(policy.output_limit_bytes)
        channel = HeadBuffer(policy.channel_limit_bytes)
        try:
            with proc.stdout, proc.stderr:
                streams: dict[int, CappedBuffer | HeadBuffer] = {
                    proc.stdout.fileno(): out,
                    proc.stderr.fileno(): err,
                }
                if launch.channel_fd is not None:
                    streams[launch.channel_fd] = channel
                timed_out = _supervise(proc, policy, cgroups, start, streams)
        finally:
            # The process is not reaped yet, so its pid (our process group id) cannot have
            # been reused: killing the group cannot hit anyone else. Normally a no-op; also
            # reached when the harness is interrupted mid-run.
            with _running_lock:
                _running.pop(proc.pid, None)
                _kill_tree(proc, cgroups)
            reaped = _reap(proc)
    finally:
        cpu = cgroups.remove()
        _count_unseen(cpu, reaped)
        with os.fdopen(status_r, "rb") as f:
            status = f.read().decode("utf-8", errors="replace")
    if status:
        raise SandboxError(f"{status.strip()} (stderr: {err.text().strip()[-500:]!r})")
    return RunResult(
        returncode=proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
        seconds=time.monotonic() - start,
        cpu_seconds=None if cpu is None else round(cpu, 3),
        channel=bytes(channel.data) if launch.channel_fd is not None else None,
        channel_truncated=channel.truncated,
    )


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the process ended, without reaping it (see run_launch)."""
    info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return info is not None


def _supervise(
    proc: subprocess.Popen[bytes],
    policy: Policy,
    cgroups: RunCgroups,
    start: float,
    buffers: dict[int, CappedBuffer | HeadBuffer],
) -> bool:
    """Collect output until the command is gone; kill it at the deadline. True if it timed out."""
    sel = selectors.DefaultSelector()
    for fd in buffers:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    pidfd = -1
    try:
        pidfd = os.pidfd_open(proc.pid)
        sel.register(pidfd, selectors.EVENT_READ)
    except (AttributeError, OSError):
        pass  # old kernel: poll the process below instead
    deadline = start + policy.timeout_s
    timed_out = exited = False
    stop_at: float | None = None  # set once the command is gone: last call for its output
    open_pipes = set(buffers)
    try:
        while True:
            now = time.monotonic()
            if not exited and now >= deadline and not timed_out:
                timed_out = True
                log.info("sandboxed command timed out after %.1f s; killing it", policy.timeout_s)
                _kill_tree(proc, cgroups)
            if not exited and _exited(proc):
                exited = True
                # Whatever the command left behind (a setsid daemon) goes with it.
                _kill_tree(proc, cgroups)
            if exited and not open_pipes:
                break
            if exited or timed_out:
                stop_at = stop_at if stop_at is not None else now + _DRAIN_S
                if now >= stop_at:
                    log.warning("output pipes still open %.0f s after the end; closing", _DRAIN_S)
                    break
            wait = max(0.0, (stop_at if stop_at is not None else deadline) - now)
            if pidfd < 0 and not exited:
                wait = min(wait, 0.05)
            for key, _ in sel.select(timeout=wait):
                fd = int(key.fd)
                if fd == pidfd:
                    sel.unregister(pidfd)
                    continue
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if chunk:
                    buffers[fd].feed(chunk)
                else:
                    sel.unregister(fd)
                    open_pipes.discard(fd)
    finally:
        sel.close()
        if pidfd >= 0:
            os.close(pidfd)
    return timed_out
