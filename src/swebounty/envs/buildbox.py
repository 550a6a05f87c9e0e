"""The build sandbox: the task repository's own code, run while its environment is built.

A dataset names a repository and a commit, and both are hostile (DESIGN.md, principle 9).
Building the environment runs that repository's code: its setup.py or build backend when the
era's pip installs it over the environment (`tasklayer.install_and_capture`: the spec's project
install, and the compiled extensions of each tree, natives.py), its conftest.py when the
base commit's tests are collected (probe.py), and a Node project's install scripts and its
dependencies' (node_install.run_scripts). Run on the host, that code could read ~/.ssh,
write anywhere the harness can (the cache: every other task's environment), or leave a
process behind. Here it runs in the project's bubblewrap sandbox (sandbox/), as the tests do:

- the build's own folder (the build copy, the throw-away layer) is the only writable place;
- the interpreter and the environment it builds over are visible read-only; nothing else of
  the host is (no home, no cache, no other build), and /tmp is the sandbox's own;
- no network: these steps install with --no-index from what the environment holds;
- every process dies with the step (a pid namespace; the run's cgroup where there is one).

What the step leaves in its folder is the repository's, and is read back as regular files only
(buildoutput.py). Where bubblewrap cannot run (no user namespaces), the step runs on the host
as before, after a warning that says so once per process, as the --unsafe test sandbox does.

The project's metadata, which uv's resolution of `./project` needs, is prepared here too
(projectmeta.py, `run_for_result`): the build copy a throw-away layer, the result read from
the channel the harness owns.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from swebounty.envs.failures import StepFailed, classify, killed
from swebounty.envs.steps import run_logged
from swebounty.sandbox import BwrapSandbox, Mount, Policy, SandboxError, bwrap_available
from swebounty.sandbox.bwrap import chown_tree

log = logging.getLogger(__name__)

# Build sandboxes lease host uids of their own (one per building thread), apart from the
# evaluation's slots 0..workers-1: a build's processes never count against a test run's.
BUILD_SLOT_BASE = 1000

_guard = threading.Lock()
_local = threading.local()
_slots = 0
_warned = False


def sandbox() -> BwrapSandbox | None:
    """This thread's build sandbox; None where bubblewrap cannot run here (warned once)."""
    global _slots
    found: BwrapSandbox | None = getattr(_local, "box", None)
    if found is not None:
        return found
    ok, why = bwrap_available()
    if not ok:
        _warn(why)
        return None
    with _guard:
        slot = BUILD_SLOT_BASE + _slots
        _slots += 1
    try:
        _local.box = BwrapSandbox(slot=slot)
    except SandboxError as exc:
        _warn(str(exc))
        return None
    return _local.box  # type: ignore[no-any-return]


def _warn(why: str) -> None:
    global _warned
    with _guard:
        if _warned:
            return
        _warned = True
    log.warning(
        "UNSANDBOXED ENVIRONMENT BUILDS (%s): each task repository's setup.py, build backend, "
        "conftest.py and Node install scripts run on this host as uid %d, with its files and network: a hostile "
        "dataset can read your secrets, change the cache and other tasks' environments, and "
        "leave processes behind. Build only datasets you trust here.",
        why,
        os.getuid(),
    )


def reclaim(workdir: Path) -> None:
    """Give a step's folder back to the harness's uid (run_step gave it to the sandbox's):
    what stays of it (a Node environment's node_modules) is then the harness's, as files it
    copied would be. Links are changed, never followed (chown_tree)."""
    box: BwrapSandbox | None = getattr(_local, "box", None)
    if box is not None and box.workdir_owner is not None and workdir.exists():
        chown_tree(workdir, os.getuid(), os.getgid())


def run_step(
    step: str,
    argv: list[str],
    log_path: Path,
    *,
    workdir: Path,
    reads: list[Path],
    env: dict[str, str],
    timeout: float,
    limit_address_space: bool = True,
) -> str:
    """Run argv (the repository's code runs in it) in `workdir`, the only place it may
    write, seeing `reads` read-only; append its output to `log_path` as run_logged does and
    return its stdout. Raises StepFailed (classified) on a non-zero exit or a timeout.
    `limit_address_space=False` for Node (V8 reserves far more address space than it uses:
    see Policy), whose memory the run's cgroup still bounds where there is one."""
    box = sandbox()
    if box is None:
        return run_logged(step, argv, log_path, cwd=workdir, env=env, timeout=timeout)
    return _run(box, step, argv, log_path, workdir=workdir, reads=reads, env=env,
                timeout=timeout, throwaway=False,
                limit_address_space=limit_address_space)[0]  # fmt: skip


def run_for_result(
    box: BwrapSandbox,
    step: str,
    argv: list[str],
    log_path: Path,
    *,
    workdir: Path,
    reads: list[Path],
    env: dict[str, str],
    timeout: float,
) -> tuple[str, bytes]:
    """As run_step, in `box`, but `workdir` is a throw-away layer where bubblewrap can make
    one (as root, bwrap 0.10+; elsewhere it is written, as run_step's is), and the result is
    what argv wrote to the channel the harness owns ($SWEBOUNTY_RESULT_FD): (stdout, those
    bytes). No file of the step is read back. The bytes are the repository's to write too:
    they are hostile input."""
    return _run(box, step, argv, log_path, workdir=workdir, reads=reads, env=env,
                timeout=timeout, throwaway=True)  # fmt: skip


def _run(
    box: BwrapSandbox,
    step: str,
    argv: list[str],
    log_path: Path,
    *,
    workdir: Path,
    reads: list[Path],
    env: dict[str, str],
    timeout: float,
    throwaway: bool,
    limit_address_space: bool = True,
) -> tuple[str, bytes]:
    started = time.monotonic()
    # Mounted by path, and bwrap follows links: a link left where a folder of the build was
    # (by an earlier step, which could write the build folder) would show a host folder.
    for path in (workdir, *(r for r in reads if workdir.parent in r.parents)):
        if path.is_symlink():
            raise StepFailed(step, "other", f"{path} is a link, not the build's folder: not "
                             "mounted (the repository's build replaced it?)")  # fmt: skip
    box.prepare_workdir(workdir)
    policy = Policy(
        timeout_s=timeout,
        env={**env, "HOME": "/tmp", "TMPDIR": "/tmp"},
        disk_bytes=4 << 30,  # /tmp: pip's build folders of an old setup.py
        output_limit_bytes=8 << 20,
        limit_address_space=limit_address_space,
        channel_limit_bytes=1 << 20,
    )
    inside = [p for p in dict.fromkeys(reads) if p.exists()]
    mounts = [Mount(path=p) for p in inside if p != workdir and workdir not in p.parents]
    if throwaway:
        mounts.append(Mount(path=workdir, ephemeral=True))
    try:
        result = box.run(argv, workdir=workdir, mounts=mounts, policy=policy,
                         result_channel=throwaway)  # fmt: skip
    except SandboxError as exc:
        raise StepFailed(step, "other", f"the build sandbox could not start: {exc}") from exc
    out, err, code = result.stdout, result.stderr, result.returncode
    if result.timed_out:
        err, code = f"timed out after {timeout:.0f} s\n{err}", -1
    with log_path.open("a", encoding="utf-8") as fh:
        fh.write(
            f"\n$ {' '.join(argv)}\n# {step} (build sandbox): exit {code} in "
            f"{time.monotonic() - started:.1f}s\n"
        )
        fh.write(out[-20000:] + err[-20000:])
    if result.timed_out:
        raise StepFailed(step, "timeout", err + out)
    if code < 0:  # a signal: the run's stop ending its sandboxes, the OOM killer
        raise killed(step, code, err + out)
    if code != 0:
        raise StepFailed(step, classify(err + out), err + out)
    return out, result.channel or b""
