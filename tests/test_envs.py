"""Environments end to end: real builds at a cutoff, cache hits, concurrent builders, and tests
that import the workspace's code through a TaskEnv (specs without a build: test_envs_spec.py).

Builds need the package index (marked `network`); they are small and shared per session.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import uv as uv_package

from env_helpers import build_env, run_tests
from repo_helpers import git_repo
from swebounty.envs import (
    EnvBuildError,
    Environment,
    EnvManager,
)
from swebounty.tasks import EnvSpec, Task

MODERN = datetime(2024, 6, 1, 12, tzinfo=timezone.utc)


PROJECT = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "tinyproj"
        version = "1.0"
        requires-python = ">=3.8"
        dependencies = ["six"]

        [project.optional-dependencies]
        test = ["pytest"]

        [project.scripts]
        tiny = "tinyproj:main"
        """,
    "src/tinyproj/__init__.py": """
        import six

        def answer():
            return 1

        def main():
            print("tiny", answer())
        """,
    "tests/test_tiny.py": """
        import tinyproj

        def test_answer():
            assert tinyproj.answer() == 1
        """,
}


def counting_uv(tmp: Path) -> tuple[Path, Path]:
    """A uv that logs each `venv` creation to a file, then runs the real uv."""
    counter = tmp / "venvs.log"
    script = tmp / "uv"
    script.write_text(
        f'#!/bin/sh\nif [ "$1" = venv ]; then echo "$$" >> {counter}; fi\n'
        f'exec {uv_package.find_uv_bin()} "$@"\n'
    )
    script.chmod(0o755)
    return script, counter


@pytest.fixture(scope="session")
def built(
    tmp_path_factory: pytest.TempPathFactory, index_reachable: None
) -> tuple[EnvManager, Environment, Path, Path]:
    """One modern environment for tinyproj, built once for the session."""
    tmp = tmp_path_factory.mktemp("envs")
    uv_bin, counter = counting_uv(tmp)
    ws = git_repo(tmp / "ws", PROJECT)
    manager = EnvManager(tmp / "cache", uv_bin=uv_bin)
    env = build_env(manager, ws, MODERN, "tiny-1", "test/tinyproj")
    return manager, env, ws, counter


# ----------------------------------------------------------------------------- builds


@pytest.mark.network
def test_cutoff_reaches_uv_and_old_versions_are_installed(
    tmp_path: Path, index_reachable: None
) -> None:
    ws = git_repo(tmp_path / "ws", {"README": "nothing to install\n"})
    manager = EnvManager(tmp_path / "cache")
    spec = EnvSpec(cutoff=datetime(2021, 1, 1, tzinfo=timezone.utc), install_project=False)
    env = manager.ensure(spec, ws)
    pins = dict(line.split("==") for line in env.lock.split())
    assert pins["pytest"].startswith("6.")  # pytest 6.2.1 was the newest on 2021-01-01
    assert int(pins["pip"].split(".")[0]) <= 20 and int(pins["setuptools"].split(".")[0]) <= 51
    log = (env.path.parent / "build.log").read_text()
    assert "--exclude-newer 2021-01-01T00:00:00Z" in log
    freeze = (env.path.parent / "freeze.txt").read_text()
    assert f"pytest=={pins['pytest']}" in freeze  # the recorded lock is what got installed

    manager.prune(keep_keys={env.key})
    assert [e.key for e in manager.list()] == [env.key]
    assert manager.prune(keep_keys=set()) > 1_000_000 and manager.list() == []
    # The spec's record kept the lock: the rebuild installs it as it is, without resolving.
    rebuilt = EnvManager(tmp_path / "cache").ensure(spec, ws)
    assert rebuilt.key == env.key and rebuilt.lock == env.lock
    assert "resolve dependencies" not in (rebuilt.path.parent / "build.log").read_text()
    assert manager.prune() > 1_000_000 and manager.list() == []


@pytest.mark.network
def test_build_is_shared_and_reused_without_building(
    built: tuple[EnvManager, Environment, Path, Path], tmp_path: Path
) -> None:
    manager, env, ws, counter = built
    assert env.project is not None and env.project.mode == "pth", env.why
    assert (env.path.parent / "ready.json").exists()
    shared = next(iter(env.path.glob("lib/python*/site-packages")))
    assert not list(shared.glob("tinyproj*")), "the shared env must not shadow the workspace"
    assert list(shared.glob("six*")) and list(shared.glob("pytest*"))
    assert list(shared.rglob("*.pyc")), "bytecode is compiled at install (read-only use)"
    builds = counter.read_text().count("\n")

    started = time.monotonic()
    again = EnvManager(manager.cache.root, uv_bin=manager.uv_bin)
    task = Task(instance_id="tiny-9", repo="test/tinyproj", base_commit="HEAD")
    env2 = again.ensure(again.spec_for(task, ws, MODERN), ws)
    assert time.monotonic() - started < 1.0
    assert env2.key == env.key and counter.read_text().count("\n") == builds
    assert [e.key for e in again.list()] == [env.key]
    assert env.size_bytes and env.size_bytes > 1_000_000


@pytest.mark.network
def test_tests_import_the_workspace_not_a_copy(
    built: tuple[EnvManager, Environment, Path, Path], tmp_path: Path
) -> None:
    manager, env, base_ws, _ = built
    ws = tmp_path / "ws"
    subprocess.run(["git", "clone", "-q", str(base_ws), str(ws)], check=True)
    # The workspace changes after the environment was built: tests must see the change.
    init = ws / "src/tinyproj/__init__.py"
    init.write_text(init.read_text().replace("return 1", "return 2"))
    (ws / "tests/test_tiny.py").write_text(
        "import tinyproj\n\ndef test_answer():\n    assert tinyproj.answer() == 2\n"
    )
    tenv = manager.for_task(env, ws, tmp_path / "scratch")
    assert tenv.setup_argv is None  # pure Python, packaging unchanged: nothing to run
    assert env.interpreter_prefix in tenv.ro_paths and env.path in tenv.ro_paths
    assert tenv.env["PIP_NO_INDEX"] == "1" and "PIP_FIND_LINKS" not in tenv.env
    run_tests(tenv, ws)
    script = subprocess.run(["tiny"], cwd=ws, env=tenv.env, capture_output=True, text=True)
    assert script.stdout.strip() == "tiny 2"


@pytest.mark.network
def test_changed_packaging_gets_a_real_offline_install(
    built: tuple[EnvManager, Environment, Path, Path], tmp_path: Path
) -> None:
    manager, env, base_ws, _ = built
    ws = tmp_path / "ws"
    subprocess.run(["git", "clone", "-q", str(base_ws), str(ws)], check=True)
    pyproject = ws / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "1.0"', 'version = "1.1"'))
    tenv = manager.for_task(env, ws, tmp_path / "scratch")
    assert tenv.setup_argv is not None and "--no-index" in tenv.setup_argv
    setup = subprocess.run(tenv.setup_argv, cwd=ws, env=tenv.env, capture_output=True, text=True)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    probe = (
        "import tinyproj, importlib.metadata as m;"
        "print(tinyproj.__file__); print(m.version('tinyproj'))"
    )
    out = subprocess.run(
        [tenv.test_prefix[0], "-c", probe],
        cwd=tmp_path,
        env=tenv.env,
        capture_output=True,
        text=True,
    )
    file, version = out.stdout.split()
    assert Path(file).is_relative_to(ws) and version == "1.1"


def _ensure_in_process(cache: str, ws: str, uv_bin: str, out: str) -> None:
    manager = EnvManager(Path(cache), uv_bin=Path(uv_bin))
    env = build_env(manager, Path(ws), MODERN, "tiny-c", "test/tinyproj")
    Path(out).write_text(json.dumps({"key": env.key, "python": str(env.python)}))


@pytest.mark.network
def test_two_processes_build_one_environment_once(
    built: tuple[EnvManager, Environment, Path, Path], tmp_path: Path
) -> None:
    _, env, ws, _ = built  # uv's download cache is warm now, so this build is quick
    uv_bin, counter = counting_uv(tmp_path)
    here = [str(Path(__file__).parent)]
    code = f"import sys; sys.path[:0] = {here!r}; import test_envs as t; t._ensure_in_process(*sys.argv[1:])"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                code,
                str(tmp_path / "cache"),
                str(ws),
                str(uv_bin),
                str(tmp_path / f"out{i}.json"),
            ],
            stderr=subprocess.PIPE,
        )
        for i in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()[-2000:]
    results = [json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(2)]
    assert results[0] == results[1] and results[0]["key"] == env.key
    assert counter.read_text().count("\n") == 1  # one venv was created, by one of them


@pytest.mark.network
def test_unresolvable_dependencies_fail_clearly_and_fast_the_second_time(
    tmp_path: Path, index_reachable: None
) -> None:
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    manager = EnvManager(tmp_path / "cache")
    spec = EnvSpec(install=["swebounty-no-such-package-zz9"], install_project=False, cutoff=MODERN)
    with pytest.raises(EnvBuildError) as info:
        manager.ensure(spec, ws)
    message = str(info.value)
    assert "resolve dependencies failed" in message and "swebounty-no-such-package-zz9" in message
    assert "override" in message  # says what to do
    started = time.monotonic()
    with pytest.raises(EnvBuildError):
        EnvManager(tmp_path / "cache").ensure(spec, ws)
    assert time.monotonic() - started < 1.0  # remembered, not rebuilt
    assert manager.prune() >= 0 and manager.list() == []


# six 1.16.0 was uploaded on 2021-05-05: after the start of May 2021, before these commits.
MAY_2021 = [datetime(2021, 5, d, 12, tzinfo=timezone.utc) for d in (10, 20)]


def _requirements_only(root: Path, requirement: str) -> Path:
    return git_repo(root, {"requirements-test.txt": f"{requirement}\n", "test_x.py": "x = 1\n"})


@pytest.mark.network
def test_tasks_of_one_month_share_an_environment_unless_they_need_that_month(
    tmp_path: Path, index_reachable: None
) -> None:
    manager = EnvManager(tmp_path / "cache")
    plain = Task(
        instance_id="m-1",
        repo="test/monthly",
        base_commit="HEAD",
        env_spec=EnvSpec(install_project=False),
    )
    envs = []
    for i, when in enumerate(MAY_2021):
        # python-dateutil 2.8.1 (2019) needs six, which had a release on May 5th: a package
        # the project did not ask for by name, so the month's release is not needed.
        ws = _requirements_only(tmp_path / f"ws{i}", "python-dateutil")
        envs.append(manager.ensure(manager.spec_for(plain, ws, when), ws))
    assert envs[0].key == envs[1].key  # two commit dates, one lock, one environment
    assert "six==1.15.0" in envs[0].lock.split()
    log = (envs[0].path.parent / "build.log").read_text()
    assert "--exclude-newer 2021-05-01T00:00:00Z" in log

    # A package the project asks for by name, released in the month, that does not import
    # the project (no companion of it, test_envs_companions.py): the shared cutoff still.
    ws = _requirements_only(tmp_path / "ws-direct", "six")
    direct = manager.ensure(manager.spec_for(plain, ws, MAY_2021[1]), ws)
    assert "six==1.15.0" in direct.lock.split()
    assert not any("six 1.16.0" in w for w in direct.why)

    # A commit that needs a release of its own month resolves at its exact cutoff.
    ws = _requirements_only(tmp_path / "ws-new", "six>=1.16")
    newer = manager.ensure(manager.spec_for(plain, ws, MAY_2021[1]), ws)
    assert "six==1.16.0" in newer.lock.split() and newer.key != envs[0].key
    log = (newer.path.parent / "build.log").read_text()
    assert "--exclude-newer 2021-05-01T00:00:00Z" in log  # tried first, did not resolve
    assert "--exclude-newer 2021-05-22T00:00:00Z" in log
    assert not any("at the shared cutoff" in w for w in newer.why)

    # Without sharing, a task resolves at its own cutoff only.
    alone = EnvManager(tmp_path / "cache2", share=False)
    ws = _requirements_only(tmp_path / "ws-alone", "six")
    env = alone.ensure(alone.spec_for(plain, ws, MAY_2021[0]), ws)
    assert "six==1.16.0" in env.lock.split()
    assert "--exclude-newer 2021-05-12T00:00:00Z" in (env.path.parent / "build.log").read_text()


# Versions from git tags, written into the package at install time (pytest's setuptools_scm
# `write_to` gives `_pytest/_version.py`; hatch-vcs has `version-file`). Neither file is in the
# repository, so a workspace lacks it; hatchling also needs `editables` for an editable install.
VCS_PROJECTS = {
    "setuptools_scm": {
        "pyproject.toml": """
            [build-system]
            requires = ["setuptools>=64", "setuptools_scm>=8"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "swebounty-scm-probe"
            dynamic = ["version"]
            requires-python = ">=3.8"

            [tool.setuptools_scm]
            write_to = "src/vcsproj/_version.py"
            """,
    },
    "hatch-vcs": {
        "pyproject.toml": """
            [build-system]
            requires = ["hatchling", "hatch-vcs"]
            build-backend = "hatchling.build"

            [project]
            name = "swebounty-hatch-probe"
            dynamic = ["version"]
            requires-python = ">=3.8"

            [tool.hatch.version]
            source = "vcs"

            [tool.hatch.build.hooks.vcs]
            version-file = "src/vcsproj/_version.py"

            [tool.hatch.build.targets.wheel]
            packages = ["src/vcsproj"]
            """,
    },
}


@pytest.mark.network
@pytest.mark.parametrize("backend", sorted(VCS_PROJECTS))
def test_version_file_generated_at_install_reaches_the_workspace(
    backend: str, tmp_path: Path, index_reachable: None
) -> None:
    files = {
        **VCS_PROJECTS[backend],
        ".gitignore": "src/vcsproj/_version.py\n",
        "src/vcsproj/__init__.py": "from ._version import version\n",
        "tests/test_v.py": "import vcsproj\n\ndef test_v():\n    assert vcsproj.version\n",
    }
    base = git_repo(tmp_path / "base", files)
    manager = EnvManager(tmp_path / "cache")
    env = build_env(manager, base, MODERN, "vcs-1", "test/vcsproj")
    assert env.project is not None
    # An editable install the per-task layer can replay, not a copy installed per task.
    assert env.project.mode == "pth" and env.project.editable, env.project.why
    assert env.project.generated == ["src/vcsproj/_version.py"]

    ws = tmp_path / "ws"
    subprocess.run(["git", "clone", "-q", str(base), str(ws)], check=True)
    assert not (ws / "src/vcsproj/_version.py").exists()
    tenv = manager.for_task(env, ws, tmp_path / "scratch")
    assert tenv.setup_argv is None
    run_tests(tenv, ws)
