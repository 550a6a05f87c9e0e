"""Work directories: named for their process, swept when that process died; workspaces in
memory when the sandbox overlays them and they fit."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_helpers import context, demo_in
from swebounty import safefs, testrun, workdirs
from swebounty.evalcontext import EvalContext
from swebounty.frameworks import python as python_steps
from swebounty.pristine import PRISTINE_DIR
from swebounty.repos import git, isolated_git_env, make_workspace
from swebounty.sandbox import BwrapSandbox, Mount, Policy, UnsafeSandbox, bwrap_available
from swebounty.sandbox.bwrap import find_bwrap
from swebounty.workdirs import (
    WORKSPACES_ENV,
    host_tag,
    make_memory_work_dir,
    make_work_dir,
    memory_place,
    sweep_dead_work_dirs,
    work_root,
)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: its pid names no process (until the kernel reuses it)
    return proc.pid


def _leftover(cache: Path, pid: int, host: str | None = None, kind: str = "run") -> Path:
    path = work_root(cache) / f"swebounty-{os.getuid()}-{kind}{pid}.{host or host_tag()}-x1"
    (path / "ws" / "deep").mkdir(parents=True)
    (path / "ws" / "deep" / "f.py").write_text("x = 1\n")
    return path


def test_a_work_dir_names_its_user_process_and_host(tmp_path: Path) -> None:
    wd = make_work_dir(tmp_path, "ray")
    assert wd.parent == work_root(tmp_path)
    assert wd.name.startswith(f"swebounty-{os.getuid()}-ray{os.getpid()}.{host_tag()}-")
    assert wd.stat().st_mode & 0o777 == 0o711
    with pytest.raises(ValueError, match="lowercase letters"):
        make_work_dir(tmp_path, "r-1")  # would make the name ambiguous to the sweep


def test_only_the_leftovers_of_dead_processes_of_this_user_and_host_are_swept(
    tmp_path: Path,
) -> None:
    dead = _dead_pid()
    stale = _leftover(tmp_path, dead)
    stale_worker = _leftover(tmp_path, dead, kind="ray")
    live = _leftover(tmp_path, os.getpid())
    other_host = _leftover(tmp_path, dead, host="0" * 8 if host_tag() != "0" * 8 else "1" * 8)
    target = tmp_path / "target"
    (target / "keep").mkdir(parents=True)
    link = work_root(tmp_path) / f"swebounty-{os.getuid()}-run{dead}.{host_tag()}-link"
    link.symlink_to(target)
    unnamed = work_root(tmp_path) / f"swebounty-{os.getuid()}-abcdef"  # an older name: unknown
    unnamed.mkdir()

    assert sweep_dead_work_dirs(tmp_path) == 2
    assert not stale.exists() and not stale_worker.exists()
    assert live.exists() and other_host.exists() and unnamed.exists()
    assert link.is_symlink() and (target / "keep").is_dir()  # never followed


def test_a_new_run_sweeps_what_a_killed_one_left(tmp_path: Path) -> None:
    stale = _leftover(tmp_path, _dead_pid())
    ctx = EvalContext.create(cache_dir=tmp_path, runs_dir=tmp_path / "runs", sandbox="none")
    try:
        assert not stale.exists()
        assert ctx.work_dir.exists() and f"-run{os.getpid()}." in ctx.work_dir.name
    finally:
        ctx.close()


# A harness in a pid namespace of its own (a container sharing the cache or /dev/shm, and the
# host's name): it makes a leftover of a dead harness of its namespace, then sweeps `parent`.
OTHER_NAMESPACE = """
import os, subprocess, sys
from pathlib import Path
from swebounty.workdirs import host_tag, sweep_dead_dirs
parent = Path(sys.argv[1])
proc = subprocess.Popen([sys.executable, "-c", "pass"])
proc.wait()
own = parent / f"swebounty-{os.getuid()}-run{proc.pid}.{host_tag()}-x2"
own.mkdir()
print(os.getpid(), sweep_dead_dirs(parent), own.exists())
"""


@pytest.mark.sandbox
def test_a_harness_in_another_pid_namespace_never_sweeps_a_live_harness_here(
    tmp_path: Path,
) -> None:
    """Seen from another pid namespace, this process's pid is nobody (or somebody else): its
    live work directory must not look like a dead harness's there."""
    ok, why = bwrap_available()
    bwrap = find_bwrap()
    if not ok or bwrap is None:
        pytest.skip(why)
    live = make_work_dir(tmp_path, "run")
    (live / "workspace").mkdir()
    ns = [str(bwrap), "--unshare-user", "--unshare-pid", "--bind", "/", "/", "--proc", "/proc"]
    ns += ["--dev-bind", "/dev", "/dev", "--die-with-parent"]
    run = subprocess.run(
        [*ns, sys.executable, "-c", OTHER_NAMESPACE, str(live.parent)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    pid, swept, own_left = run.stdout.split()
    assert int(pid) != os.getpid()  # it did run in another namespace
    assert (live / "workspace").is_dir(), "a live harness's work directory was swept"
    assert (swept, own_left) == ("1", "False")  # its own namespace's dead leftover: swept


# --- workspaces in memory ---------------------------------------------------------------------


@pytest.fixture
def memory_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A sticky, world-writable directory the placement takes for a tmpfs like /dev/shm."""
    root = tmp_path / "shm"
    root.mkdir()
    root.chmod(0o1777)
    monkeypatch.setattr(workdirs, "MEMORY_DIRS", (str(root),))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv(WORKSPACES_ENV, raising=False)
    real = workdirs.fs_type
    monkeypatch.setattr(workdirs, "fs_type", lambda p: "tmpfs" if p == root else real(p))
    return root


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A directory of this user's whose top-level directory is not /tmp (/var/tmp)."""
    if not os.access("/var/tmp", os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    path = Path(tempfile.mkdtemp(prefix="swebounty-test-", dir="/var/tmp"))
    try:
        yield path
    finally:
        safefs.remove_tree(path)


def test_the_mount_table_names_a_path_s_filesystem() -> None:
    assert workdirs.fs_type(Path("/proc/self")) == "proc"
    assert workdirs.fs_type(Path("/")) is not None


def test_workspaces_go_to_memory_only_when_the_sandbox_overlays_them(memory_root: Path) -> None:
    assert make_memory_work_dir("run", overlaid=False) is None  # an ordinary user's bwrap
    wd = make_memory_work_dir("run", overlaid=True)
    assert wd is not None and wd.parent == memory_root
    assert wd.name.startswith(f"swebounty-{os.getuid()}-run{os.getpid()}.{host_tag()}-")
    info = wd.stat()
    assert info.st_mode & 0o777 == 0o711 and info.st_uid == os.getuid()


def test_a_tree_goes_to_memory_only_when_it_fits_with_a_margin(
    memory_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gib = 1 << 30
    free = {"bytes": 20 * gib, "inodes": 0}
    monkeypatch.setattr(
        workdirs, "_free", lambda p: (free["bytes"], 24 * gib, free["inodes"], 0)
    )  # a tmpfs of 24 GiB without an inode limit (it reports 0 inodes)
    wd = make_memory_work_dir("run", overlaid=True)
    assert wd is not None
    assert workdirs.fits(wd, 50 << 20, 3_000)
    place = memory_place(wd, "task-1", 50 << 20, 3_000)
    assert place == wd / "task-1" and place.stat().st_mode & 0o777 == 0o711
    # A quarter of the filesystem (6 GiB) stays free: 7 GiB free takes a 0.5 GiB tree only.
    free["bytes"] = 7 * gib
    assert workdirs.fits(wd, gib // 4, 1_000)
    assert not workdirs.fits(wd, gib // 2, 1_000)
    assert memory_place(wd, "task-2", gib // 2, 1_000) is None
    assert not (wd / "task-2").exists()
    assert memory_place(None, "task-3", 1, 1) is None  # no memory work directory: disk
    # Inodes count too, where the filesystem has a limit.
    monkeypatch.setattr(workdirs, "_free", lambda p: (20 * gib, 24 * gib, 4_000, 10_000))
    assert workdirs.fits(wd, 1 << 20, 500)
    assert not workdirs.fits(wd, 1 << 20, 1_000)


def test_the_setting_turns_memory_off_or_forces_a_directory(
    memory_root: Path, outside_tmp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    monkeypatch.setenv(WORKSPACES_ENV, "disk")
    assert workdirs.memory_roots() == []
    assert make_memory_work_dir("run", overlaid=True) is None
    monkeypatch.setenv(WORKSPACES_ENV, str(outside_tmp))
    assert workdirs.memory_roots() == [outside_tmp]  # a disk too: the user chose it
    wd = make_memory_work_dir("run", overlaid=True)
    assert wd is not None and wd.parent == outside_tmp
    # An ordinary user's sandbox writes the workspace in place: never outside the cache.
    assert make_memory_work_dir("run", overlaid=False) is None
    assert "ignored" in caplog.text
    unsafe = outside_tmp / "open"
    unsafe.mkdir()
    unsafe.chmod(0o777)  # anyone could rename our directory away: refused
    for bad, why in [
        (str(tmp_path), "temp"),
        ("relative/dir", "absolute"),
        (str(outside_tmp / "missing"), "existing"),
        (str(unsafe), "others cannot"),
    ]:
        monkeypatch.setenv(WORKSPACES_ENV, bad)
        with pytest.raises(ValueError, match=why):
            make_memory_work_dir("run", overlaid=True)


def test_the_sweep_covers_the_memory_work_dirs(memory_root: Path, tmp_path: Path) -> None:
    dead = _dead_pid()

    def leftover(pid: int, host: str | None = None) -> Path:
        path = memory_root / f"swebounty-{os.getuid()}-run{pid}.{host or host_tag()}-m1"
        (path / "task" / "workspace").mkdir(parents=True)
        (path / "task" / "workspace" / "f.py").write_text("x = 1\n")
        return path

    stale, live = leftover(dead), leftover(os.getpid())
    other_host = leftover(dead, host="0" * 8 if host_tag() != "0" * 8 else "1" * 8)
    target = tmp_path / "target"
    (target / "keep").mkdir(parents=True)
    link = memory_root / f"swebounty-{os.getuid()}-run{dead}.{host_tag()}-link"
    link.symlink_to(target)
    others = None
    if os.geteuid() == 0:  # a directory of another user's, named as ours
        others = memory_root / f"swebounty-0-run{dead}.{host_tag()}-theirs"
        others.mkdir()
        os.chown(others, 12345, 12345)
    assert sweep_dead_work_dirs(tmp_path / "cache") == 1
    assert not stale.exists()
    assert live.exists() and other_host.exists()
    assert link.is_symlink() and (target / "keep").is_dir()  # never followed
    assert others is None or others.is_dir()


def test_only_an_overlaying_sandbox_gets_memory_workspaces() -> None:
    assert UnsafeSandbox().overlays_ephemeral is False
    ok, why = bwrap_available()
    if not ok:
        pytest.skip(why)
    sandbox = BwrapSandbox()
    assert sandbox.overlays_ephemeral is (os.geteuid() == 0 and sandbox._has_overlays())
    sandbox.as_root = False  # as an ordinary user, ephemeral mounts are writable binds
    assert sandbox.overlays_ephemeral is False


def _shm_work_dir() -> Path:
    ok, why = bwrap_available()
    if not ok:
        pytest.skip(why)
    shm = Path("/dev/shm")
    if workdirs.fs_type(shm) != "tmpfs" or not os.access(shm, os.W_OK):
        pytest.skip("no writable tmpfs at /dev/shm")
    return workdirs.make_process_dir(shm, "test")


@pytest.mark.sandbox
def test_a_workspace_in_dev_shm_mounts_at_its_path_inside_the_sandbox(tmp_path: Path) -> None:
    """The sandbox makes its own /dev and /dev/shm: the workspace must still be there, writable
    (into the overlay as root), and the host copy must stay as it was."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text("VALUE = 42\n")
    env = isolated_git_env()
    git(repo, "init", "-q", env=env)
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-qm", "base", env=env)
    work = _shm_work_dir()
    try:
        ws = make_workspace(repo, "HEAD", work / "task" / "workspace")
        sandbox = BwrapSandbox()
        sandbox.prepare_workdir(ws)
        code = (
            "import os, pkg.mod; open('pkg/mod.py', 'w').write('VALUE = 0\\n');"
            "open('new.txt', 'w').write('x'); os.mkdir('/dev/shm/scratch');"
            "print(os.getcwd(), pkg.mod.VALUE, sorted(os.listdir('.')))"
        )
        prefixes = sorted({Path(sys.prefix), Path(sys.base_prefix)})
        run = sandbox.run(
            [sys.executable, "-c", code],
            workdir=ws,
            mounts=[*(Mount(path=p) for p in prefixes), Mount(path=ws, ephemeral=True)],
            policy=Policy(timeout_s=60),
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.split()[:2] == [str(ws), "42"]
        assert "'new.txt'" in run.stdout
        assert not (work / "scratch").exists() and not Path("/dev/shm/scratch").exists()
        if sandbox.overlays_ephemeral:
            assert (ws / "pkg" / "mod.py").read_text() == "VALUE = 42\n"
            assert not (ws / "new.txt").exists()
    finally:
        safefs.remove_tree(work)


@pytest.mark.sandbox
@pytest.mark.network
def test_an_evaluation_puts_its_workspace_in_memory_only_when_safe_and_cleans_it_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _shm_work_dir().rmdir()  # skips without bwrap or a tmpfs at /dev/shm
    monkeypatch.delenv(WORKSPACES_ENV, raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    demo = demo_in(tmp_path / "cache")
    made: list[Path] = []
    real = python_steps.make_workspace
    monkeypatch.setattr(
        python_steps,
        "make_workspace",
        lambda m, c, dest, **kw: made.append(dest) or real(m, c, dest, **kw),
    )
    linked = python_steps.linked_workspace  # in memory: links to a kept checkout (pristine.py)
    monkeypatch.setattr(
        python_steps,
        "linked_workspace",
        lambda m, c, dest, **kw: made.append(dest) or linked(m, c, dest, **kw),
    )

    def evaluate(n: int) -> EvalContext:
        task = demo.task(1)
        with context(demo, tmp_path / f"runs{n}") as (ctx, _):
            result = testrun.run_tests(task, task.patch, ctx, tmp_path / f"logs{n}")
            assert result.error is None and result.cleanup_error is None, result
            assert all(o.status == "passed" for o in result.outcomes.values()), result.outcomes
            assert ctx.remover.drain(timeout=60)  # removed off the critical path (remover.py)
            if ctx.memory_dir is not None:
                left = [p.name for p in ctx.memory_dir.iterdir()]
                # the workspace is gone; the pack and the checkout of its tree are kept
                assert set(left) <= {workdirs.PACK_CACHE, PRISTINE_DIR}
            assert [p.name for p in ctx.work_dir.iterdir()] == []
        return ctx

    ctx = evaluate(1)
    if os.geteuid() == 0 and ctx.sandbox.overlays_ephemeral:
        assert ctx.memory_dir is not None and made[-1].parent.parent == ctx.memory_dir
        assert workdirs.fs_type(made[-1].parent) == "tmpfs"
    else:  # an ordinary user: the sandbox binds the workspace writable, so it stays on disk
        assert ctx.memory_dir is None and made[-1].parent.parent == ctx.work_dir
    monkeypatch.setattr(workdirs, "fits", lambda *a: False)  # a tree too large for the tmpfs
    ctx = evaluate(2)
    assert made[-1].parent.parent == ctx.work_dir
    monkeypatch.setenv(WORKSPACES_ENV, "disk")
    ctx = evaluate(3)
    assert ctx.memory_dir is None and made[-1].parent.parent == ctx.work_dir
