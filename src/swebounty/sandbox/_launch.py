"""Last step before the sandboxed command: runs as its own process, then execs the command.

The harness starts this file with `python -I -S _launch.py SPEC` instead of using a
`preexec_fn`, which is unsafe in a threaded harness (the child can deadlock between fork and
exec). Standard library only: with -S the swebounty package is not importable here. Every
sandboxed run starts here, so it imports nothing it can do without: the spec is the harness's
own `marshal` of it in hex (same interpreter; json's import alone, with the `re` it pulls in,
and typing's each cost about as much CPU as the interpreter's start: 21 -> 9 ms per launch).

In order, and each step only when the spec asks for it:
1. join the run's cgroups, before anything is forked, so every descendant is counted;
2. (root only) make a private mount namespace and bind every host path the sandbox needs into
   a fresh tmpfs "stage" directory: the unprivileged sandbox uid cannot traverse /root (mode
   700) where pyenv interpreters, environments and the bwrap wheel live, but it can reach the
   stage, and nothing of this is visible on the host; and mount the bounded tmpfs that holds
   the writes of ephemeral mounts (bwrap overlays them on the host paths);
3. make the namespaces the launcher owns. (stand-in hosts only) The sandbox's network
   namespace, made here rather than in bwrap: bring its loopback up and let every uid in it
   bind ports below 1024 (the net.ipv4.ip_unprivileged_port_start sysctl is per network
   namespace: the host keeps its own); bwrap then runs with --share-net: the sandbox gets this
   namespace, with nothing but its loopback, and has no capability over it. (bwrap only) A
   pid namespace for the launcher's child. Root makes them before dropping privileges; an
   ordinary user first makes a user namespace that maps only its own uid and gid, which gives
   it the capabilities it needs over these namespaces alone;
4. (pid namespace) fork the namespace's pid 1, which mounts the namespace's own /proc (bwrap
   reads /proc/PID for the pid its namespace gives its child), goes on with the steps below
   and execs bwrap. The launcher stays outside as the harness's child: it drops privileges,
   asks to die with the harness (step 7), and waits for pid 1, then exits the way pid 1 did.
   Killing pid 1 of a pid namespace kills everything in it at once, whatever it is doing, and
   nothing in it can leave it; so the harness's kill of the launcher's process group, and the
   launcher's own death, end the whole sandbox at any step of its setup. bwrap's chain of
   --die-with-parent signals cannot: its child leaves the process group (setsid) before it
   forks the sandbox's pid 1, which asks for PR_SET_PDEATHSIG only after that fork, so a
   monitor killed in between left pid 1 and the command running with nothing to die with (a
   Ray worker killed mid-task; an ordinary user's Ctrl-C, which no cgroup backs up);
5. set the rlimits (NPROC is only enforced once the real uid is not 0);
6. drop to the sandbox uid/gid with no supplementary groups;
7. ask for SIGKILL when the parent dies (PR_SET_PDEATHSIG; after step 6, which clears it):
   pid 1 of the namespace on the launcher's death, the launcher on the harness's: a killed
   harness (a Ray worker killed mid-task, a SIGKILLed CLI) takes the sandbox with it, instead
   of leaving a tree that no timeout bounds any more and that keeps its uid busy;
8. exec the command (bwrap, or the command itself for the unsafe backend).
"""

from __future__ import annotations

import marshal
import os
import resource
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
PR_SET_PDEATHSIG = 1
SIGKILL = 9

RLIMITS = {
    "CPU": resource.RLIMIT_CPU,
    "AS": resource.RLIMIT_AS,
    "FSIZE": resource.RLIMIT_FSIZE,
    "NPROC": resource.RLIMIT_NPROC,
    "CORE": resource.RLIMIT_CORE,
    "NOFILE": resource.RLIMIT_NOFILE,
}


_status_fd = -1


def _fail(step: str, err: BaseException) -> None:
    # The status pipe is close-on-exec: only the launcher can write to it, never the command,
    # so a message there is an infrastructure failure that the command cannot fake.
    message = f"swebounty launcher: {step} failed: {err}\n"
    sys.stderr.write(message)
    sys.stderr.flush()
    if _status_fd >= 0:
        os.write(_status_fd, message.encode())
    os._exit(125)


def _libc_call(libc: object, name: str, *args: object) -> None:
    import ctypes

    if getattr(libc, name)(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}{args!r}: {os.strerror(errno)}")


def _stage(stage_dir: str, binds: list[list[str]], overlay: dict[str, object] | None) -> None:
    import ctypes  # only here: it costs a few ms of every launch

    libc = ctypes.CDLL(None, use_errno=True)
    _libc_call(libc, "unshare", CLONE_NEWNS)
    # Without this, mounts would propagate back to the host's (shared) mount namespace.
    _libc_call(libc, "mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
    _libc_call(
        libc, "mount", b"tmpfs", stage_dir.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755"
    )
    for src, name in binds:
        dest = os.path.join(stage_dir, name)
        os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
        if os.path.isdir(src):
            os.mkdir(dest, 0o755)
        else:
            os.close(os.open(dest, os.O_CREAT | os.O_WRONLY, 0o644))
        _libc_call(libc, "mount", src.encode(), dest.encode(), None, MS_BIND | MS_REC, None)
    if overlay:
        # One tmpfs, bounded in bytes and files, holds the upper (written) layer of every
        # ephemeral mount; its pages are charged to the run's memory cgroup, joined above.
        area = os.path.join(stage_dir, "ov")
        os.mkdir(area, 0o755)
        options = f"mode=0755,size={overlay['size']},nr_inodes={overlay['inodes']}"
        _libc_call(
            libc, "mount", b"tmpfs", area.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode()
        )
        uid, gid = overlay["uid"], overlay["gid"]
        assert isinstance(uid, int) and isinstance(gid, int) and isinstance(overlay["dirs"], list)
        for name in overlay["dirs"]:
            for sub in ("", "/upper", "/work"):
                path = os.path.join(area, name) + sub
                os.mkdir(path, 0o755)
                os.chown(path, uid, gid)


def _namespaces(net: bool, pid: bool, private_mounts: bool) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    flags = (CLONE_NEWNET if net else 0) | (CLONE_NEWPID if pid else 0)
    # pid 1 mounts the namespace's /proc: in a mount namespace of the launcher's, never the host's.
    own_mounts = pid and not private_mounts
    flags |= CLONE_NEWNS if own_mounts else 0
    if os.geteuid() == 0:
        _libc_call(libc, "unshare", flags)
    else:
        uid, gid = os.getuid(), os.getgid()
        _libc_call(libc, "unshare", flags | CLONE_NEWUSER)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    if own_mounts:
        _libc_call(libc, "mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
    if net:
        _loopback_for_every_port()


def _loopback_for_every_port() -> None:
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))
    # /proc/sys/net is the calling process's own network namespace: the host's is untouched.
    with open("/proc/sys/net/ipv4/ip_unprivileged_port_start", "w") as f:
        f.write("0")


def _fork_pid_1(spec: dict[str, object]) -> int:
    """Step 4. Returns in pid 1 only: the read end of a pipe that reads EOF once the launcher
    is gone. The launcher waits for pid 1 and exits as it did."""
    alive_r, alive_w = os.pipe()
    pid_1 = os.fork()
    if pid_1 == 0:
        os.close(alive_w)
        return alive_r
    os.close(alive_r)
    _drop_privileges(spec)  # the launcher needs none of them any more
    harness_pid = spec.get("harness_pid")
    if isinstance(harness_pid, int):
        try:
            _die_with_harness(harness_pid)
        except OSError as e:
            _fail("asking to die with the harness", e)
    _, status = os.waitpid(pid_1, 0)
    if os.WIFSIGNALED(status):
        os.kill(os.getpid(), os.WTERMSIG(status))  # the harness sees pid 1's end as ours
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status))


def _mount_proc() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    _libc_call(libc, "mount", b"proc", b"/proc", b"proc", flags, None)


def _die_with_launcher(alive: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    _libc_call(libc, "prctl", PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
    # getppid() is 0 in the new namespace whoever the parent is: the pipe tells instead.
    os.set_blocking(alive, False)
    try:
        if os.read(alive, 1) == b"":
            os._exit(125)  # the launcher died before the signal was asked for
    except BlockingIOError:
        pass
    os.close(alive)


def _drop_privileges(spec: dict[str, object]) -> None:
    uid, gid = spec.get("uid"), spec.get("gid")
    if not isinstance(uid, int) or not isinstance(gid, int):
        return
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as e:
        _fail("dropping privileges", e)


def _die_with_harness(harness_pid: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    _libc_call(libc, "prctl", PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
    if os.getppid() != harness_pid:  # it died before the signal was asked for
        os._exit(125)


def main() -> None:
    global _status_fd
    spec = marshal.loads(bytes.fromhex(sys.argv[1]))
    if spec.get("status_fd") is not None:
        _status_fd = spec["status_fd"]
        os.set_inheritable(_status_fd, False)
    for procs_file, required in spec.get("cgroups", []):
        try:
            with open(procs_file, "w") as f:
                f.write(str(os.getpid()))
        except OSError as e:
            if required:
                _fail(f"joining cgroup {procs_file}", e)
    stage = spec.get("stage")
    if stage:
        try:
            _stage(stage["dir"], stage["binds"], stage.get("overlay"))
        except OSError as e:
            _fail("staging mounts", e)
    pid_namespace = bool(spec.get("pid_namespace"))
    if spec.get("low_ports") or pid_namespace:
        try:
            _namespaces(bool(spec.get("low_ports")), pid_namespace, private_mounts=bool(stage))
        except OSError as e:
            _fail("making the namespaces", e)
    launcher_alive = -1
    if pid_namespace:
        try:
            launcher_alive = _fork_pid_1(spec)
        except OSError as e:
            _fail("forking the pid namespace's pid 1", e)
        try:
            _mount_proc()
        except OSError as e:
            _fail("mounting the pid namespace's /proc", e)
    try:
        for name, value in spec.get("rlimits", {}).items():
            resource.setrlimit(RLIMITS[name], (value, value))
    except (OSError, ValueError) as e:
        _fail("setting rlimits", e)
    _drop_privileges(spec)
    try:
        if launcher_alive >= 0:
            _die_with_launcher(launcher_alive)
        elif spec.get("harness_pid"):
            _die_with_harness(spec["harness_pid"])
    except OSError as e:
        _fail("asking to die with the parent", e)
    cwd = spec.get("cwd")
    try:
        if cwd:
            os.chdir(cwd)
        # execvpe: the unsafe backend may get a bare name, looked up on the sandbox PATH.
        os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
    except OSError as e:
        _fail(f"exec {spec['argv'][0]}", e)


if __name__ == "__main__":
    main()
