"""The build copy of a tag-versioned (setuptools_scm) project gets a release tag wherever the
workspace lives: in memory (another filesystem than the build's temporary directory), made
from a bare clone without tags, or given without .git at all."""

from __future__ import annotations

import os
import subprocess
import tempfile
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from repo_helpers import git_repo
from swebounty.envs import buildcopy
from swebounty.repos import make_workspace

SCM_PROJECT = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=45", "setuptools_scm>=6.2"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "scmproj"
        dynamic = ["version"]

        [tool.setuptools_scm]
        """,
    "scmproj/__init__.py": "VALUE = 1\n",
}
CUTOFF = datetime(2023, 6, 1, tzinfo=timezone.utc)


def bare_clone_without_tags(root: Path) -> Path:
    """A setuptools_scm project committed once, untagged, then `git clone --bare`d."""
    src = git_repo(root / "src", SCM_PROJECT)
    bare = root / "owner__scmproj"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True)
    assert not subprocess.run(["git", "-C", str(bare), "tag"], capture_output=True).stdout
    return bare


def described(project: Path) -> str:
    proc = subprocess.run(
        ["git", "describe", "--tags", "--long"], cwd=project, capture_output=True, text=True
    )
    return proc.stdout.strip()


def other_filesystem_dir() -> Path:
    """A directory on another filesystem than the temporary one (the build copy's), as a
    workspace in memory is; skips where there is none."""
    shm = Path("/dev/shm")
    tmp = Path(tempfile.gettempdir())
    if not shm.is_dir() or not os.access(shm, os.W_OK) or shm.stat().st_dev == tmp.stat().st_dev:
        pytest.skip("no writable /dev/shm on another filesystem than the temporary directory")
    return Path(tempfile.mkdtemp(prefix="swebounty-test-", dir=shm))


def test_a_workspace_in_memory_gives_a_tagged_build_copy(tmp_path: Path) -> None:
    """`git clone --local` died on the cross-device hardlink (/dev/shm -> /tmp): the copy lost
    .git, was never tagged, and setuptools_scm could not detect a version (pytest, 17/17)."""
    bare = bare_clone_without_tags(tmp_path)
    shm = other_filesystem_dir()
    try:
        ws = make_workspace(bare, "HEAD", shm / "workspace")
        with tempfile.TemporaryDirectory(prefix="swebounty-build-") as build:
            dest = Path(build) / "project"
            why: list[str] = []
            env = buildcopy.prepare(
                ws, dest, name="scmproj", vcs_tag_prefix="", cutoff=CUTOFF,
                release_hint="1.2.0", lookup=False, why=why,
            )  # fmt: skip
            assert env["SETUPTOOLS_SCM_PRETEND_VERSION_FOR_SCMPROJ"] == "1.2.0"
            assert why == ["version from git tags: build copy tagged as release 1.2.0"]
            assert described(dest).startswith("1.2.0-0-g")
        assert not subprocess.run(["git", "-C", str(ws), "tag"], capture_output=True).stdout
    finally:
        subprocess.run(["rm", "-rf", str(shm)], check=True)


def test_a_workspace_git_cannot_clone_still_gets_a_tagged_copy(tmp_path: Path) -> None:
    """Whatever makes the clone fail, the copied files become a repository to tag."""
    ws = tmp_path / "ws"
    for rel, text in SCM_PROJECT.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(textwrap.dedent(text))
    (ws / ".git").write_text("gitdir: /nonexistent\n")  # not a repository git can clone
    why: list[str] = []
    env = buildcopy.prepare(
        ws, tmp_path / "copy", name="scmproj", vcs_tag_prefix="v", cutoff=CUTOFF,
        release_hint="2.0", lookup=False, why=why,
    )  # fmt: skip
    assert env["SETUPTOOLS_SCM_PRETEND_VERSION"] == "2.0"
    assert "build copy: made a git repository, to be tagged" in why
    assert described(tmp_path / "copy").startswith("v2.0-0-g")
    assert (ws / ".git").read_text() == "gitdir: /nonexistent\n"  # the workspace untouched


def test_a_project_not_versioned_from_tags_is_copied_as_it_is(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "setup.py").write_text("from setuptools import setup\nsetup(version='1.0')\n")
    why: list[str] = []
    env = buildcopy.prepare(
        ws, tmp_path / "copy", name="plain", vcs_tag_prefix=None, cutoff=CUTOFF,
        release_hint=None, lookup=False, why=why,
    )  # fmt: skip
    assert env == {} and why == []
    assert not (tmp_path / "copy" / ".git").exists()
    assert (tmp_path / "copy" / "setup.py").is_file()
