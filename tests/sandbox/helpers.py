"""What every sandbox test uses: a workspace next to things the sandboxed code must not
reach (`World`), and running a submitted attack file in it (conftest.py holds the fixtures).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from repo_helpers import git_env
from swebounty.sandbox import (
    Mount,
    Policy,
    RunResult,
    Sandbox,
    bwrap_available,
)

PYTHON = sys.executable
PREFIXES = sorted({Path(sys.prefix), Path(sys.base_prefix)})

# Prepended to every attack: records each attempt's outcome and prints them as one JSON line.
PRELUDE = """\
import ctypes, errno, json, os, socket, sys
RESULTS = {}
def attempt(name, fn):
    try:
        RESULTS[name] = {"ok": True, "value": fn()}
    except BaseException as e:
        RESULTS[name] = {"ok": False, "error": type(e).__name__, "errno": getattr(e, "errno", None)}
def report():
    print("RESULTS=" + json.dumps(RESULTS, default=repr), flush=True)
LIBC = ctypes.CDLL(None, use_errno=True)
def checked(ret):
    if ret < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return ret
"""


def _require_bwrap() -> None:
    ok, why = bwrap_available()
    if not ok:
        pytest.skip(why)


@dataclass
class World:
    """A workspace next to things the sandboxed code must not reach."""

    ws: Path
    other_ws: Path
    dataset: Path
    store: Path
    outside: Path
    env_dir: Path
    out_dir: Path
    token: str

    def mounts(self) -> list[Mount]:
        return [
            *(Mount(path=p) for p in PREFIXES),
            Mount(path=self.env_dir),
            Mount(path=self.out_dir, writable=True),
        ]


def _git(repo: Path, *args: str, stdin: str | None = None) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args], env=git_env(), input=stdin, text=True, check=True,
        capture_output=True,
    )  # fmt: skip


def _new_file_patch(name: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def make_world(tmp_path: Path) -> World:
    """A fresh world under `tmp_path`, a git workspace first."""
    token = f"swebounty-attack-{uuid.uuid4().hex[:10]}"
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", "-b", "main")
    (ws / "README").write_text("a task's repo\n")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "base")
    other = tmp_path / "other-ws"
    other.mkdir()
    (other / "secret.txt").write_text("another task's workspace\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tasks.jsonl").write_text('{"instance_id": "x", "patch": "hidden"}\n')
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "runs.sqlite").write_bytes(b"SQLite format 3\x00 hidden verdicts")
    outside = tmp_path / "outside"
    env_dir = tmp_path / "env"
    out_dir = tmp_path / "out"
    for d in (outside, env_dir, out_dir):
        d.mkdir()
        # World-writable: only the sandbox's mounts may stop a write here, not permissions.
        d.chmod(0o777)
    (env_dir / "lib.py").write_text("VALUE = 1\n")
    return World(ws, other, tmp_path / "data" / "tasks.jsonl", tmp_path / "runs" / "runs.sqlite",
                 outside, env_dir, out_dir, token)  # fmt: skip


def _submit(world: World, sb: Sandbox, name: str, code: str) -> None:
    """Apply a patch adding `name` to the workspace, then hand the workspace to the sandbox."""
    text = PRELUDE + textwrap.dedent(code) if name.endswith(".py") else textwrap.dedent(code)
    _git(world.ws, "apply", "-", stdin=_new_file_patch(name, text))
    sb.prepare_workdir(world.ws)
    sb.prepare_workdir(world.out_dir)


def _run(world: World, sb: Sandbox, argv: list[str], **policy: Any) -> RunResult:
    policy.setdefault("timeout_s", 30)
    return sb.run(argv, workdir=world.ws, mounts=world.mounts(), policy=Policy(**policy))


def _attack(world: World, sb: Sandbox, code: str, *args: str, **policy: Any) -> dict[str, Any]:
    _submit(world, sb, "attack.py", code)
    result = _run(world, sb, [PYTHON, "attack.py", world.token, *args], **policy)
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("RESULTS=")]
    assert lines, f"attack did not report (rc {result.returncode}): {result.stderr[-2000:]}"
    outcomes: dict[str, Any] = json.loads(lines[-1].removeprefix("RESULTS="))
    return outcomes


def _survivors(token: str) -> list[int]:
    """Host pids whose command line carries `token`, zombies excluded."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(entry.name))
    return found


def _blocked(outcome: dict[str, Any], *errnos: int) -> bool:
    return not outcome["ok"] and (not errnos or outcome["errno"] in errnos)
