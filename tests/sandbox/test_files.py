"""Files: the sandboxed code writes only its workspace, reads no other workspace, dataset or
store, and cannot mount, remount or write /proc/sys.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from sandbox.helpers import (
    World,
    _attack,
    _blocked,
)
from swebounty.sandbox import (
    BwrapSandbox,
    Sandbox,
    UnsafeSandbox,
)
from swebounty.sandbox import bwrap as bwrap_module

WRITE_OUTSIDE = """
def write(path):
    with open(path, "w") as f:
        return f.write("pwned")
token = sys.argv[1]
attempt("outside", lambda: write(sys.argv[2]))
attempt("env", lambda: write(sys.argv[3]))
attempt("prefix", lambda: write(os.path.join(sys.base_prefix, token)))
attempt("usr", lambda: write("/usr/" + token))
attempt("etc_hosts", lambda: write("/etc/hosts"))
attempt("tmp", lambda: write("/tmp/" + token))
attempt("workspace", lambda: write("inside.txt"))
attempt("out_dir", lambda: write(sys.argv[4]))
report()
"""


@pytest.mark.sandbox
def test_cannot_write_outside_its_workspace(world: World, bwrap: BwrapSandbox) -> None:
    outside, env_file = world.outside / "pwned.txt", world.env_dir / "pwned.txt"
    out_file = world.out_dir / "results.txt"
    hosts_before = Path("/etc/hosts").read_bytes()
    try:
        res = _attack(world, bwrap, WRITE_OUTSIDE, str(outside), str(env_file), str(out_file))
        # The environment is world-writable on the host: only the read-only mount stops it.
        assert _blocked(res["env"], errno.EROFS)
        assert _blocked(res["prefix"], errno.EROFS, errno.EACCES)
        assert _blocked(res["usr"], errno.EROFS, errno.EACCES)
        assert _blocked(res["etc_hosts"], errno.EROFS, errno.EACCES)
        for path in (outside, env_file, Path(sys.base_prefix) / world.token,
                     Path("/usr") / world.token, Path("/tmp") / world.token):  # fmt: skip
            assert not path.exists(), path
        assert Path("/etc/hosts").read_bytes() == hosts_before
        # What it may write, it writes, and the harness reads it.
        assert res["workspace"]["ok"] and res["tmp"]["ok"] and res["out_dir"]["ok"]
        assert (world.ws / "inside.txt").read_text() == "pwned"
        assert out_file.read_text() == "pwned"
    finally:
        for path in (Path(sys.base_prefix) / world.token, Path("/usr") / world.token):
            path.unlink(missing_ok=True)


READ_SECRETS = """
paths = dict(zip(["other_ws", "dataset", "store"], sys.argv[2:5]))
for name, path in paths.items():
    attempt(name, lambda path=path: open(path).read())
for directory in json.loads(sys.argv[5]):
    attempt("ls " + directory, lambda d=directory: sorted(os.listdir(d)))
report()
"""

# What bwrap itself puts at the sandbox's root besides the mounts (see bwrap.py): host system
# dirs bound whole, fresh /proc and /dev, and a private, empty /tmp.
HOST_DIRS = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev"}
SANDBOX_ROOT = {*HOST_DIRS, "tmp"}


def _ancestors(paths: list[Path]) -> dict[str, set[str]]:
    """Every proper ancestor of `paths`, with the entries it must hold: the next component on
    the way to a mounted path, nothing else (the root also holds the system dirs)."""
    holds: dict[str, set[str]] = {"/": set()}
    for path in paths:
        parts = path.parts
        for i in range(1, len(parts)):
            holds.setdefault(str(Path(*parts[:i])), set()).add(parts[i])
    mounted = {str(p) for p in paths}
    # A mounted path's own listing is its host content, and so is a system dir's (a venv
    # under /usr/local): not the sandbox's to explain.
    return {
        d: entries
        for d, entries in holds.items()
        if d not in mounted and (d == "/" or Path(d).parts[1] not in HOST_DIRS)
    }


def _mounted(world: World) -> list[Path]:
    """What the sandbox shows of the host: the task's mounts and the system data dirs."""
    data = [Path(d) for d in bwrap_module.SYSTEM_DATA_DIRS if Path(d).is_dir()]
    return [world.ws, *(m.path for m in world.mounts()), *data]


def _read_secrets(world: World, sb: Sandbox) -> dict[str, Any]:
    paths = [world.other_ws / "secret.txt", world.dataset, world.store]
    mounted = _mounted(world)
    return _attack(world, sb, READ_SECRETS, *map(str, paths), json.dumps(list(_ancestors(mounted))))


@pytest.mark.sandbox
def test_cannot_read_other_workspaces_the_dataset_or_the_store(
    world: World, bwrap: BwrapSandbox
) -> None:
    res = _read_secrets(world, bwrap)
    for name in ("other_ws", "dataset", "store"):
        assert _blocked(res[name], errno.ENOENT), name  # not denied: not there at all
    # Nothing exists but the mounted paths and their ancestors, and an ancestor holds nothing
    # but the way to a mounted path: wherever the clone, the venv or the workspaces live.
    mounted = _mounted(world)
    expected = _ancestors(mounted)
    expected["/"] |= SANDBOX_ROOT
    assert str(world.ws.parent) in expected  # the test would prove nothing otherwise
    for directory, entries in expected.items():
        listing = res[f"ls {directory}"]
        assert listing["ok"], (directory, listing)
        if directory == "/":
            assert set(listing["value"]) <= entries, sorted(set(listing["value"]) - entries)
            assert {p.parts[1] for p in mounted} <= set(listing["value"])
        else:
            assert set(listing["value"]) == entries, directory


def test_read_attack_control_succeeds_without_sandbox(world: World) -> None:
    res = _read_secrets(world, UnsafeSandbox())
    assert res["other_ws"]["ok"] and res["dataset"]["ok"] and res["store"]["ok"]


SYSTEM_DATA = """
data = sys.argv[2]
attempt("read", lambda: open(os.path.join(data, "latex.fmt")).read())
attempt("write", lambda: open(os.path.join(data, "pwned"), "w").write("x"))
attempt("ls parent", lambda: sorted(os.listdir(os.path.dirname(data))))
report()
"""


@pytest.mark.sandbox
def test_system_data_dirs_are_readable_and_read_only(
    world: World,
    bwrap: BwrapSandbox,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    # TeX's format files live in /var/lib/texmf: without them every usetex test skips in the
    # sandbox (matplotlib-23964's PASS_TO_PASS). A stand-in, since CI has no TeX; outside /tmp
    # (the sandbox's own) and where the sandbox's user can reach it, as /var/lib is.
    if not os.access("/var/tmp", os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    parent = Path(tempfile.mkdtemp(prefix="swebounty-test-", dir="/var/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(parent))
    parent.chmod(0o755)
    data = parent / "texmf"
    data.mkdir(mode=0o755)
    (data / "latex.fmt").write_text("format")
    (data / "latex.fmt").chmod(0o644)
    (parent / "secret.txt").write_text("secret")
    monkeypatch.setattr(bwrap_module, "SYSTEM_DATA_DIRS", (str(data), "/nonexistent/data"))
    res = _attack(world, bwrap, SYSTEM_DATA, str(data))
    assert res["read"] == {"ok": True, "value": "format"}, res["read"]
    assert _blocked(res["write"], errno.EROFS)
    assert res["ls parent"]["value"] == ["texmf"]  # its siblings stay out of view
    assert not (data / "pwned").exists()


MOUNTS = """
MS_RDONLY, MS_REMOUNT, MS_BIND = 0x1, 0x20, 0x1000
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
def mount(src, target, fstype, flags):
    return checked(LIBC.mount(src, target.encode(), fstype, ctypes.c_ulong(flags), None))
env = sys.argv[2]
attempt("tmpfs", lambda: mount(b"tmpfs", env, b"tmpfs", 0))
attempt("remount_env_rw", lambda: mount(None, env, None, MS_REMOUNT | MS_BIND))
attempt("remount_usr_rw", lambda: mount(None, "/usr", None, MS_REMOUNT | MS_BIND))
attempt("remount_root", lambda: mount(None, "/", None, MS_REMOUNT))
attempt("bind_env", lambda: mount(env.encode(), "/tmp", None, MS_BIND))
attempt("unshare_mount", lambda: checked(LIBC.unshare(CLONE_NEWNS)))
attempt("unshare_user", lambda: checked(LIBC.unshare(CLONE_NEWUSER)))
attempt("write_env_after", lambda: open(os.path.join(env, "pwned"), "w").write("x"))
def sysctl():
    path = "/proc/sys/vm/overcommit_ratio"
    value = open(path).read()
    with open(path, "w") as f:  # the same value: harmless even if it got through
        return f.write(value)
attempt("proc_sys", sysctl)
report()
"""


@pytest.mark.sandbox
def test_cannot_mount_remount_or_write_proc_sys(world: World, bwrap: BwrapSandbox) -> None:
    res = _attack(world, bwrap, MOUNTS, str(world.env_dir))
    for name in ("tmpfs", "remount_env_rw", "remount_usr_rw", "remount_root", "bind_env",
                 "unshare_mount"):  # fmt: skip
        assert _blocked(res[name], errno.EPERM), (name, res[name])
    assert _blocked(res["unshare_user"])
    assert _blocked(res["write_env_after"], errno.EROFS)
    assert _blocked(res["proc_sys"], errno.EACCES, errno.EROFS, errno.EPERM)
    assert not (world.env_dir / "pwned").exists()
