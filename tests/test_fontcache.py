"""The font cache: built once per environment in the sandbox, reused by every run of it, built
again when the environment or the system's fonts change, read-only to the runs, which get a
private copy that no run can poison for another.

A stand-in matplotlib (two small modules in a venv of this interpreter) builds a "font list"
the way matplotlib does: in its cache directory, only when none is there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from swebounty import fontcache
from swebounty.envs.models import Environment, EnvSpec
from swebounty.pytest_guard import GUARD_DIR
from swebounty.sandbox import BwrapSandbox, UnsafeSandbox, bwrap_available
from swebounty.sandbox.base import Mount, Policy

VERSION = ".".join(map(str, sys.version_info[:3]))
MINOR = f"python{sys.version_info[0]}.{sys.version_info[1]}"
VARIABLES = {"HOME": "/tmp", "TMPDIR": "/tmp", "PATH": "/usr/bin:/bin"}
INIT = """
import os
def get_cachedir():
    d = os.path.join(os.path.expanduser("~"), ".cache", "matplotlib")
    os.makedirs(d, exist_ok=True)
    return d
"""
FONT_MANAGER = """
import json, os, matplotlib
PATH = os.path.join(matplotlib.get_cachedir(), "fontlist-v330.json")
BUILT = not os.path.exists(PATH)
if BUILT:
    with open(PATH, "w") as f:
        json.dump({"fonts": ["DejaVuSans.ttf"], "pid": os.getpid()}, f)
"""


def _sandbox() -> BwrapSandbox:
    ok, why = bwrap_available()
    if not ok:
        pytest.skip(why)
    return BwrapSandbox()


class Counting:
    """A sandbox that counts the commands it runs."""

    def __init__(self, inner: BwrapSandbox) -> None:
        self.inner, self.runs = inner, 0
        self.isolated = inner.isolated

    def prepare_workdir(self, path: Path) -> None:
        self.inner.prepare_workdir(path)

    def run(self, argv: list[str], **kw: object) -> object:
        self.runs += 1
        return self.inner.run(argv, **kw)  # type: ignore[arg-type]


def _env(root: Path, with_matplotlib: bool = True) -> Environment:
    venv = root / "envs" / "k1" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib" / MINOR / "site-packages"
    if with_matplotlib:
        (site / "matplotlib").mkdir()
        (site / "matplotlib" / "__init__.py").write_text(INIT)
        (site / "matplotlib" / "font_manager.py").write_text(FONT_MANAGER)
    return Environment(
        key="k1", path=venv, python=venv / "bin" / "python", interpreter=VERSION,
        interpreter_prefix=Path(sys.base_prefix), spec=EnvSpec(),
        interpreter_executable=Path(sys.executable).resolve(),
    )  # fmt: skip


@pytest.fixture
def fonts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system's font directories, as far as the fingerprint is concerned."""
    root = tmp_path / "fonts"
    (root / "truetype").mkdir(parents=True)
    monkeypatch.setattr(fontcache, "FONT_DIRS", (str(root),))
    return root


KEPT = "/tmp/.cache/matplotlib/fontlist-v330.json"


@pytest.mark.sandbox
def test_built_once_per_environment_and_fonts_then_reused(tmp_path: Path, fonts: Path) -> None:
    env = _env(tmp_path)
    sandbox = Counting(_sandbox())
    policy = Policy(timeout_s=120)
    first = fontcache.seeds(env, sandbox, policy, VARIABLES)  # type: ignore[arg-type]
    assert list(first) == [KEPT] and sandbox.runs == 1
    kept = Path(first[KEPT])
    assert kept.parent.parent == env.path.parent / "fontcache"  # goes with the environment
    assert json.loads(kept.read_text())["fonts"] == ["DejaVuSans.ttf"]
    assert kept.stat().st_mode & 0o777 == 0o644
    assert not [p for p in kept.parent.parent.iterdir() if p.name.startswith(".build-")]
    # Every later run of this environment reuses it: no sandbox started.
    assert fontcache.seeds(env, sandbox, policy, VARIABLES) == first  # type: ignore[arg-type]
    assert sandbox.runs == 1
    # A font installed on the system: the list is built again.
    (fonts / "truetype" / "new").mkdir()
    second = fontcache.seeds(env, sandbox, policy, VARIABLES)  # type: ignore[arg-type]
    assert sandbox.runs == 2 and second[KEPT] != first[KEPT]
    # The environment rebuilt (its directory made afresh): built again for it.
    shutil.rmtree(env.path.parent)
    env = _env(tmp_path)
    assert fontcache.seeds(env, sandbox, policy, VARIABLES) == second  # type: ignore[arg-type]
    assert sandbox.runs == 3


@pytest.mark.sandbox
def test_no_matplotlib_a_shared_tmp_or_a_failed_build_gets_nothing(
    tmp_path: Path, fonts: Path
) -> None:
    policy = Policy(timeout_s=120)
    env = _env(tmp_path / "none", with_matplotlib=False)
    sandbox = Counting(_sandbox())
    assert fontcache.seeds(env, sandbox, policy, VARIABLES) == {}  # type: ignore[arg-type]
    assert sandbox.runs == 0
    env = _env(tmp_path / "unsafe")
    assert fontcache.seeds(env, UnsafeSandbox(), policy, VARIABLES) == {}
    # A cache directory outside the private /tmp is never written to.
    elsewhere = {**VARIABLES, "HOME": "/dev/shm"}
    assert fontcache.seeds(env, sandbox, policy, elsewhere) == {}  # type: ignore[arg-type]
    manifests = [
        json.loads(p.read_text()) for p in env.path.parent.glob("fontcache/*/manifest.json")
    ]
    assert [m["cachedir"] for m in manifests] == ["/dev/shm/.cache/matplotlib"]  # built, unused
    # A matplotlib that fails is remembered as such: not tried again on every run.
    broken = _env(tmp_path / "broken")
    site = broken.path / "lib" / MINOR / "site-packages"
    (site / "matplotlib" / "font_manager.py").write_text("raise ImportError('no fonts')\n")
    runs = sandbox.runs
    for _ in range(2):
        assert fontcache.seeds(broken, sandbox, policy, VARIABLES) == {}  # type: ignore[arg-type]
    assert sandbox.runs == runs + 1


# Run in the sandbox as the test run's first process does it, then as a test might.
PROBE = """
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("run_pytest", sys.argv[1])
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)
runner._seed_tmp(json.loads(sys.argv[2]))
import matplotlib.font_manager as fm
kept = json.loads(sys.argv[2])[fm.PATH]
try:
    with open(kept, "w") as f:
        f.write("poisoned")
    wrote_kept = True
except OSError:
    wrote_kept = False
with open(fm.PATH) as f:
    seen = json.load(f)
with open(fm.PATH, "w") as f:
    f.write("poisoned")  # the run's own copy: its to change
print(json.dumps({"built": fm.BUILT, "wrote_kept": wrote_kept, "seen": seen}))
"""


@pytest.mark.sandbox
def test_runs_get_a_private_copy_and_cannot_change_the_kept_one(
    tmp_path: Path, fonts: Path
) -> None:
    env = _env(tmp_path)
    sandbox = _sandbox()
    policy = Policy(timeout_s=120)
    seeded = fontcache.seeds(env, sandbox, policy, VARIABLES)
    kept = Path(seeded[KEPT])
    original = kept.read_bytes()
    work = tmp_path / "work"
    work.mkdir()
    sandbox.prepare_workdir(work)
    # The mounts the test run gets (testrun._run_guarded): the kept files' directory read-only.
    mounts = [Mount(path=env.path), Mount(path=env.interpreter_prefix), Mount(path=GUARD_DIR)]
    mounts += [Mount(path=kept.parent)]
    for _ in range(2):  # the second run sees none of what the first did
        run = sandbox.run(
            [str(env.python), "-I", "-c", PROBE, str(GUARD_DIR / "run_pytest.py"),
             json.dumps(seeded)],
            workdir=work, mounts=mounts, policy=policy.model_copy(update={"env": VARIABLES}),
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        got = json.loads(run.stdout.strip().splitlines()[-1])
        assert got == {"built": False, "wrote_kept": False, "seen": json.loads(original)}
    assert kept.read_bytes() == original
