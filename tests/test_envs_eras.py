"""Older eras' environments: each generic rule on a small repository the test builds.

Builds that need the package index are marked `network`: a 2020 project whose setup.cfg tags
versions with a date, a 2019 project needing a package whose every release of the time was
deleted, a 2014 project on an interpreter newer than its era. The fallback chain and the
failure classes: test_envs_fallbacks.py.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from env_helpers import build_env, run_tests
from repo_helpers import git_repo
from swebounty.envs import Environment, EnvManager
from swebounty.envs.buildcopy import drop_egg_info_tags
from swebounty.envs.failures import StepFailed
from swebounty.envs.interpreters import first_release
from swebounty.envs.releases import first_release_after
from swebounty.envs.resolve import unpin_tools, unreleased
from swebounty.envs.steps import lock_allowances
from swebounty.tasks import Task

UTC = timezone.utc


def build(tmp_path: Path, ws: Path, when: datetime) -> tuple[EnvManager, Environment]:
    manager = EnvManager(tmp_path / "cache")
    return manager, build_env(manager, ws, when, "era-1", "test/era")


# ----------------------------------------------------------------------------- 2020: dated tags

DATED = {
    "setup.py": """
        from setuptools import setup
        setup(
            name="datedproj",
            version="3.1.0",
            packages=["datedproj"],
            extras_require={
                ':sys_platform=="win32"': ["colorama"],
                "test": ["six"],
            },
        )
        """,
    "setup.cfg": "[egg_info]\ntag_build = .dev\ntag_date = true\n\n[flake8]\nmax-line-length = 99\n",
    "datedproj/__init__.py": "import six\n\nVALUE = 1\n",
    "tests/test_dated.py": "import datedproj\n\n\ndef test_value():\n    assert datedproj.VALUE == 1\n",
}


def test_egg_info_tags_are_dropped_from_the_build_copy_only(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text(DATED["setup.cfg"].replace("tag_date", "tag-date"))
    assert drop_egg_info_tags(tmp_path) == ["tag_build = .dev", "tag-date = true"]
    assert (tmp_path / "setup.cfg").read_text() == "[egg_info]\n\n[flake8]\nmax-line-length = 99\n"
    assert drop_egg_info_tags(tmp_path) == []
    assert drop_egg_info_tags(tmp_path / "nowhere") == []


@pytest.mark.network
def test_a_dated_dev_version_and_a_marker_keyed_extra_build(
    tmp_path: Path, index_reachable: None
) -> None:
    """sphinx before 2021: `tag_build = .dev` + `tag_date = true` made old setuptools write a
    version uv rejects; `':sys_platform=="win32"'` is an extras_require key, not an extra."""
    ws = git_repo(tmp_path / "ws", DATED)
    manager, env = build(tmp_path, ws, datetime(2020, 5, 20, tzinfo=UTC))
    assert any(
        "dropped setup.cfg [egg_info] tag_build = .dev; tag_date = true" in w for w in env.why
    )
    assert "tag_date" in (ws / "setup.cfg").read_text()  # the workspace is untouched
    assert "six==" in env.lock and "colorama" not in env.lock
    assert not any(":sys_platform" in p.extras for p in env.spec.plans)
    assert env.project is not None and env.project.mode == "pth", env.project
    assert "1 passed" in run_tests(manager.for_task(env, ws, tmp_path / "scratch"), ws)


# ----------------------------------------------------------------------- version asked at import

SCM_AT_IMPORT = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61", "setuptools_scm>=6.2"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "swebounty-scm-at-import"
        dynamic = ["version"]
        requires-python = ">=3.8"
        dependencies = ["setuptools_scm"]

        [project.optional-dependencies]
        test = ["pytest"]

        [tool.setuptools.packages.find]
        include = ["scmimport"]

        [tool.setuptools_scm]
        """,
    # astropy's _dev/scm_version.py: a development checkout asks git, at import.
    "scmimport/__init__.py": """
        try:
            from setuptools_scm import get_version
            version = get_version(root="..", relative_to=__file__)
        except Exception:
            version = "0.0.0"
        """,
    "tests/test_version.py": """
        import scmimport

        def test_release():
            assert scmimport.version == "1.4.0", scmimport.version
        """,
}


@pytest.mark.network
def test_a_project_that_asks_git_its_version_at_import_sees_the_release(
    tmp_path: Path, index_reachable: None
) -> None:
    """The workspace's one untagged commit made astropy 5.0 say 0.1.dev1 at import, and
    pytest-astropy-header took it for astropy 2 (every test of astropy-12907 erred)."""
    ws = git_repo(tmp_path / "ws", SCM_AT_IMPORT)
    manager = EnvManager(tmp_path / "cache")
    env = build_env(
        manager, ws, datetime(2024, 6, 1, tzinfo=UTC), "scm-1", "test/scm", version="1.4.0"
    )
    assert env.project is not None and env.project.version_env, env.why
    assert "1 passed" in run_tests(manager.for_task(env, ws, tmp_path / "scratch"), ws)


# ----------------------------------------------------------------------------- 2019: deleted


def test_unreleased_packages_get_their_oldest_release_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = (
        "error: No solution found when resolving dependencies\n"
        "  cause: Because there are no versions of atomicwrites and pytest>=4.4.1 depends on "
        "atomicwrites>=1.0, we can conclude that pytest>=4.4.1 cannot be used.\n\n"
        "hint: `atomicwrites` was filtered by `exclude-newer` to only include packages "
        "uploaded before 2019-05-01T00:00:00Z."
    )
    uploads = {
        "atomicwrites": [("1.4.1", "2022-07-08T18:31:40Z"), ("1.4.0", "2020-04-25T00:00:00Z")],
        "older": [("1.0", "2018-01-01T00:00:00Z")],
    }

    def fake_get(url: str, **kwargs: Any) -> httpx.Response:
        name = url.rstrip("/").rsplit("/", 1)[-1]
        files = [
            {"filename": f"{name}-{v}.tar.gz", "upload-time": t} for v, t in uploads.get(name, [])
        ]
        return httpx.Response(200, json={"files": files}, request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", fake_get)
    cutoff = datetime(2019, 5, 1, tzinfo=UTC)
    assert first_release_after("atomicwrites", cutoff) == (
        "1.4.0",
        datetime(2020, 4, 25, tzinfo=UTC),
    )
    assert first_release_after("older", cutoff) is None  # it has one before the cutoff
    assert first_release_after("missing", cutoff) is None  # not on the index at all
    exc = StepFailed("resolve dependencies", "resolve", output)
    assert exc.unreleased == ["atomicwrites"]
    assert exc.describe() == "atomicwrites has no release before the cutoff"
    allow = unreleased(exc, cutoff, {}, offline=False)
    assert allow == {"atomicwrites": datetime(2020, 4, 25, 0, 0, 1, tzinfo=UTC)}
    assert unreleased(exc, cutoff, allow, offline=False) == {}  # allowed already: not again
    assert unreleased(exc, cutoff, {}, offline=True) == {}


@pytest.mark.network
def test_a_dependency_whose_old_releases_were_deleted_takes_its_oldest(
    tmp_path: Path, index_reachable: None
) -> None:
    """pytest of 2019 needs atomicwrites>=1.0, whose only release left is of 2022."""
    files = {
        "requirements-test.txt": "atomicwrites>=1.0\n",
        "tests/test_a.py": "import atomicwrites\n\n\ndef test_a():\n    assert atomicwrites\n",
    }
    ws = git_repo(tmp_path / "ws", files)
    task = Task(instance_id="era-2", repo="test/era", base_commit="HEAD")
    manager = EnvManager(tmp_path / "cache")
    spec = manager.spec_for(task, ws, datetime(2019, 5, 10, tzinfo=UTC))
    spec.install_project = False
    env = manager.ensure(spec, ws)
    allowed = lock_allowances(env.lock)
    assert "atomicwrites" in allowed and allowed["atomicwrites"] > datetime(2022, 1, 1, tzinfo=UTC)
    assert "atomicwrites==1.4.1" in env.lock.split()
    assert any("atomicwrites: no release before the cutoff, its oldest" in w for w in env.why)
    # Everything else stays at the cutoff: pytest is the one of May 2019.
    pytest_pin = next(p for p in env.lock.split() if p.startswith("pytest=="))
    assert pytest_pin.startswith("pytest==4.")
    assert "1 passed" in run_tests(manager.for_task(env, ws, tmp_path / "scratch"), ws)


# ----------------------------------------------------------------------------- 2014: new Python


def test_a_projects_pins_of_the_tools_give_way() -> None:
    assert unpin_tools("pytest==2.3.4") == "pytest"
    assert unpin_tools("pip>=1.5; python_version < '3'") == 'pip; python_version < "3"'
    assert unpin_tools("py==1.4.12") == "py==1.4.12"  # not one of the environment's tools
    assert unpin_tools("not a requirement ==") == "not a requirement =="


@pytest.mark.network
def test_an_interpreter_newer_than_the_era_gets_tools_that_run_on_it(
    tmp_path: Path, index_reachable: None
) -> None:
    """requests of 2014 claims Python 3.3 at most; on the oldest Python here, pip 1.5 and
    setuptools 2.2 of 2014 cannot even start."""
    files = {
        "setup.py": """
            from setuptools import setup
            setup(
                name="oldproj",
                version="2.3.0",
                packages=["oldproj"],
                classifiers=["Programming Language :: Python :: 3.3"],
            )
            """,
        "requirements.txt": "pytest==2.3.4\n",
        "oldproj/__init__.py": "VALUE = 2\n",
        "tests/test_old.py": "import oldproj\n\n\ndef test_value():\n    assert oldproj.VALUE == 2\n",
    }
    ws = git_repo(tmp_path / "ws", files)
    when = datetime(2014, 3, 12, tzinfo=UTC)
    manager, env = build(tmp_path, ws, when)
    interp = env.interpreter.rsplit(".", 1)[0]
    released = first_release(tuple(int(x) for x in interp.split(".")))  # type: ignore[arg-type]
    assert released > when
    assert any(f"tools as of Python {interp}" in w for w in env.why), env.why
    allowed = lock_allowances(env.lock)
    assert {"pip", "setuptools", "wheel", "pytest"} <= set(allowed)
    pins = dict(p.split("==") for p in env.lock.split() if "==" in p)
    assert pins["pytest"] != "2.3.4"  # the project's pin of its era's test runner gave way
    assert any("requirements.txt used" in w for w in env.why)
    assert "1 passed" in run_tests(manager.for_task(env, ws, tmp_path / "scratch"), ws)
