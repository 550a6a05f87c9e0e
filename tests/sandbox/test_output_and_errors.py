"""Output is capped, a uv venv runs inside, launch failures are sandbox errors (never exit codes
a command could fake), the backends and the public API, start cost, workdir hand-over, and
sweeping stale leftovers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import swebounty.sandbox as sandbox_pkg
from sandbox.helpers import (
    PYTHON,
    World,
    _require_bwrap,
    _run,
    _submit,
)
from swebounty.sandbox import (
    BwrapSandbox,
    Mount,
    Policy,
    Sandbox,
    SandboxError,
    UnsafeSandbox,
    get_sandbox,
)
from swebounty.sandbox._cgroups import sweep_stale
from swebounty.sandbox._process import CappedBuffer

FLOOD = """
sys.stdout.write("HEAD" + "o" * (3 << 20) + "TAIL\\n")
sys.stdout.flush()
sys.stderr.write("e" * (3 << 20))
"""


@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=pytest.mark.sandbox), "unsafe"])
def test_output_is_capped(world: World, backend: str) -> None:
    if backend == "bwrap":
        _require_bwrap()
    sb = get_sandbox(backend)
    _submit(world, sb, "attack.py", FLOOD)
    result = _run(world, sb, [PYTHON, "attack.py"], output_limit_bytes=64 << 10)
    assert result.returncode == 0
    assert result.truncated
    assert result.stdout.startswith("HEADooo") and result.stdout.endswith("oooTAIL\n")
    assert "bytes of output omitted" in result.stdout
    assert len(result.stdout) < (64 << 10) + 200
    assert len(result.stderr) < (64 << 10) + 200


def test_capped_buffer_keeps_head_and_tail_within_its_limit() -> None:
    buf = CappedBuffer(1000)
    for i in range(10_000):
        buf.feed(f"{i:05d}\n".encode())
        assert len(buf.head) + len(buf.tail) <= 3 * 500
    text = buf.text()
    assert text.startswith("00000\n") and text.endswith("09999\n")
    assert buf.truncated and buf.total == 60_000
    small = CappedBuffer(1000)
    small.feed(b"short")
    assert small.text() == "short" and not small.truncated


@pytest.mark.sandbox
def test_a_uv_venv_runs_inside_with_its_interpreter_mounted(
    world: World, bwrap: BwrapSandbox, tmp_path: Path
) -> None:
    from uv import find_uv_bin

    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    interpreter = Path(sys.base_prefix) / "bin" / f"python{version}"
    venv = tmp_path / "venv"
    subprocess.run(
        [find_uv_bin(), "venv", "-q", "-p", str(interpreter), str(venv)],
        check=True, env={**os.environ, "UV_NO_CONFIG": "1"},
    )  # fmt: skip
    _submit(world, bwrap, "test_in_venv.py", """\
        import sys, unittest
        class InVenv(unittest.TestCase):
            def test_prefix(self):
                self.assertEqual(sys.prefix, "{venv}")
                self.assertNotEqual(sys.prefix, sys.base_prefix)
        """.replace("{venv}", str(venv)))  # fmt: skip
    result = bwrap.run(
        [str(venv / "bin" / "python"), "-m", "unittest", "-v", "test_in_venv"],
        workdir=world.ws,
        mounts=[Mount(path=venv), Mount(path=Path(sys.base_prefix))],
        policy=Policy(timeout_s=30),
    )
    assert result.returncode == 0, result.stderr
    assert "test_prefix" in result.stderr and "OK" in result.stderr


@pytest.mark.sandbox
def test_a_missing_mount_is_a_sandbox_error(world: World, bwrap: BwrapSandbox) -> None:
    with pytest.raises(SandboxError, match="does not exist"):
        bwrap.run(["true"], workdir=world.ws, mounts=[Mount(path=world.ws / "nope")],
                  policy=Policy())  # fmt: skip


def test_a_launch_failure_is_a_sandbox_error_not_an_exit_code(world: World) -> None:
    with pytest.raises(SandboxError, match="exec"):
        UnsafeSandbox().run(["/nonexistent/python"], workdir=world.ws, mounts=[],
                            policy=Policy())  # fmt: skip


def test_a_command_cannot_fake_a_launch_failure(world: World) -> None:
    code = 'sys.stderr.write("swebounty launcher: exec failed\\n"); sys.exit(125)\n'
    _submit(world, UnsafeSandbox(), "attack.py", code)
    result = _run(world, UnsafeSandbox(), [PYTHON, "attack.py"])
    assert result.returncode == 125


def test_get_sandbox_names_its_backends() -> None:
    unsafe = get_sandbox("unsafe")
    assert isinstance(unsafe, Sandbox)
    assert unsafe.isolated is False
    with pytest.raises(ValueError, match="bwrap, unsafe"):
        get_sandbox("docker-please")


def test_public_api_is_all() -> None:
    assert set(sandbox_pkg.__all__) == {
        "BwrapSandbox", "Mount", "Policy", "RunResult", "Sandbox", "SandboxError",
        "UnsafeSandbox", "bwrap_available", "get_sandbox",
    }  # fmt: skip
    for name in sandbox_pkg.__all__:
        assert hasattr(sandbox_pkg, name), name


@pytest.mark.sandbox
def test_bwrap_start_cost_is_small(world: World, bwrap: BwrapSandbox) -> None:
    bwrap.prepare_workdir(world.ws)
    times = []
    for _ in range(5):
        start = time.monotonic()
        result = bwrap.run(["true"], workdir=world.ws, mounts=[], policy=Policy())
        times.append(time.monotonic() - start)
        assert result.returncode == 0
    assert sorted(times)[2] < 0.5, times


@pytest.mark.sandbox
def test_prepare_workdir_hands_the_tree_to_the_sandbox_uid(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root hands workspaces to another uid")
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.py").write_text("x")
    (tmp_path / "a" / "link").symlink_to("/etc/passwd")
    _require_bwrap()
    sb = BwrapSandbox(uid=64_321, gid=64_321)
    sb.prepare_workdir(tmp_path)
    for path in [tmp_path, *tmp_path.rglob("*")]:
        assert path.lstat().st_uid == 64_321, path
    assert Path("/etc/passwd").stat().st_uid == 0  # symlinks are not followed


def test_stale_leftovers_are_swept_but_live_ones_kept(tmp_path: Path) -> None:
    old, fresh, busy = (tmp_path / f"swebounty-{n}" for n in ("old", "fresh", "busy"))
    for d in (old, fresh, busy):
        d.mkdir()
    (busy / "file").write_text("in use")
    long_ago = time.time() - 3600
    for d in (old, busy):
        os.utime(d, (long_ago, long_ago))
    sweep_stale(tmp_path, "swebounty-*")
    assert not old.exists()
    assert fresh.exists() and busy.exists()
