"""The build copy: the copy of a task's workspace that an environment build works on.

Building writes into the project (egg-info, build/, a generated version file), so the builder
never works in the workspace itself. The copy is also made buildable the way a release of its
time would have been, without touching what the tests see:
- a version computed from git tags gets the tag of the release current at the cutoff
  (`releases.tag_release`): a tagless workspace builds as `0.1.dev1`;
- sources its build would download, provided from the sources folder, are put where its build
  looks for them (sources.py), else it builds against the system's libraries (switches.py);
- setup.cfg's `[egg_info]` tags are dropped: `tag_build = .dev` with `tag_date = true` (sphinx
  before 2021) makes old setuptools write a version such as `3.1.0.dev20261123.dev-20261123`,
  which today's resolvers reject as invalid; the release version is what dependents expect.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

from swebounty import safefs
from swebounty.envs.projectfiles import read_config
from swebounty.envs.releases import tag_release
from swebounty.envs.sources import Sources, switch_name
from swebounty.envs.switches import use_system_libraries
from swebounty.repos import isolated_git_env
from swebounty.submodules import copy_filled

log = logging.getLogger(__name__)

_EGG_INFO_TAGS = ("tag_build", "tag_date", "tag_svn_revision")


def copy_project(workspace: Path, dest: Path, sources: Sources | None = None) -> list[str]:
    """A copy of the workspace to build from, so building never writes into it (egg-info,
    build/). A local clone keeps .git, for setuptools_scm-style versions. Returns what was
    changed for the build to need no download, for the build's log.

    No `--local`: given explicitly, git dies when it cannot hardlink the objects instead of
    copying them, and a workspace in memory (/dev/shm) is on another filesystem than the
    build's temporary directory: every clone failed, the copy had no .git, and no
    tag-versioned project built (all 17 pytest tasks of SWE-bench: "setuptools-scm was
    unable to detect version")."""
    if (workspace / ".git").exists():
        proc = subprocess.run(
            ["git", "clone", "--quiet", str(workspace), str(dest)],
            capture_output=True,
            text=True,
        )
        if proc.returncode == 0:
            copy_filled(workspace, dest)  # a clone leaves submodules empty
            return no_downloads(dest, sources)
        log.warning("git clone of %s failed (%s); copying files", workspace, proc.stderr.strip())
        shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(workspace, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return no_downloads(dest, sources)


def no_downloads(project: Path, sources: Sources | None) -> list[str]:
    """The build copy's sources its build would download, from the sources folder where it
    holds them (sources.py), else the system's libraries (switches.py)."""
    provided = sources.place(project) if sources is not None else {}
    notes = [f"build copy: build/{name} from the sources folder ({digest})"
             for name, digest in provided.items()]  # fmt: skip
    keep = {switch_name(name) for name in provided}
    notes += [f"build copy: {done}" for done in use_system_libraries(project, keep)]
    return notes


def commit_copy(project: Path) -> bool:
    """Make a copy without .git a one-commit repository, so that it can be tagged: a version
    computed from git tags needs a repository to compute it from. False if git fails."""
    env = isolated_git_env()
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--no-verify", "-m", "base"]):
        proc = subprocess.run(["git", *argv], cwd=project, env=env, capture_output=True)
        if proc.returncode:
            log.warning("git %s in the build copy failed: %s", argv[0], proc.stderr.decode())
            return False
    return True


def drop_egg_info_tags(project: Path) -> list[str]:
    """Remove the version tags of setup.cfg's `[egg_info]` section; returns those removed."""
    path = project / "setup.cfg"
    text = read_config(path, project)
    if text is None:
        return []
    out: list[str] = []
    dropped: list[str] = []
    section = ""
    for line in text.splitlines(keepends=True):
        header = re.match(r"^\s*\[([^\]]+)\]", line)
        if header:
            section = header.group(1).strip()
        key = re.match(r"^\s*([\w-]+)\s*[=:]", line)
        if section == "egg_info" and key and key.group(1).replace("-", "_") in _EGG_INFO_TAGS:
            dropped.append(line.strip())
            continue
        out.append(line)
    if dropped:  # as a regular file: never written through a link
        safefs.write_beneath(project, "setup.cfg", "".join(out).encode("utf-8"))
    return dropped


def prepare(
    workspace: Path,
    dest: Path,
    *,
    name: str | None,
    vcs_tag_prefix: str | None,
    cutoff: datetime | None,
    release_hint: str | None,
    lookup: bool,
    why: list[str],
    sources: Sources | None = None,
    log_path: Path | None = None,
) -> dict[str, str]:
    """Make the build copy of `workspace` at `dest`; say in `why` what was changed (and in
    the build log, which sources the build uses). Returns the variables that make a
    per-task install see the same version (see tag_release)."""
    notes = copy_project(workspace, dest, sources)
    why += notes
    if log_path is not None:
        with log_path.open("a", encoding="utf-8") as fh:
            fh.writelines(f"# {note}\n" for note in notes)
    if vcs_tag_prefix is not None and not (dest / ".git").exists() and commit_copy(dest):
        why.append("build copy: made a git repository, to be tagged")
    dropped = drop_egg_info_tags(dest)
    if dropped:
        why.append(f"build copy: dropped setup.cfg [egg_info] {'; '.join(dropped)}")
    version, version_env = tag_release(
        dest, name, vcs_tag_prefix, cutoff, hint=release_hint, lookup=lookup
    )
    if version:
        why.append(f"version from git tags: build copy tagged as release {version}")
    return version_env
