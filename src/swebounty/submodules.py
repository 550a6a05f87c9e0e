"""Git submodules of a workspace, filled from clones of their own repositories.

A checkout leaves a submodule's directory empty: its files live in another repository, at the
commit the superproject's tree records (the gitlink). A project whose build or tests need them
(astropy 1.x-3.x builds through its `astropy_helpers` submodule, and its `ah_bootstrap.py` runs
`git submodule update --init`, which clones from GitHub) cannot be evaluated without them, and
grading it anyway would hold the missing files against the patch. So every submodule that
`.gitmodules` declares and the base tree records is filled, as SWE-bench's images are cloned:

- the submodule's URL names a GitHub repository (`https://github.com/owner/name`, an ssh form,
  or a path relative to the superproject's own GitHub repository); its clone is looked up in
  `--repos-dir` under the usual name (`owner__name`), else in the cache's mirrors (cloned once
  if the network allows: `repos.ensure_mirror`);
- the directory becomes a one-commit, shallow repository at the gitlink's commit (its tree's
  objects and that commit only: no history of the other repository, older or newer), checked
  out, and the superproject marks the submodule active, so `git submodule status` reports it
  up to date and nothing tries to fetch it;
- a submodule that cannot be filled (no clone, the commit missing from it, a URL that is not
  GitHub's) is a SubmoduleError naming the submodule, its URL and commit, and what to do: the
  task is an `error`, never graded on a partial tree.

`.gitmodules` is the repository's data, so hostile: only paths the tree records as gitlinks
are filled (git has vetted them: no `..`, no `.git`), every directory on the way is opened
without following links, names and URLs are checked before use, and the URL itself is never
used: a clone of `https://github.com/owner/name.git` is, built from the checked parts.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from swebounty import safefs
from swebounty.repos import (
    RepoError,
    ensure_mirror,
    find_mirror,
    git,
    init_bare_minimum,
    isolated_git_env,
    objects_and_tree,
    pack_objects,
)

log = logging.getLogger(__name__)

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9._-]{1,100}"
_GITHUB = re.compile(
    rf"^(?:(?:https?|git|ssh)://(?:git@)?github\.com/|git@github\.com:)({_OWNER})/({_NAME})/?$"
)
_RELATIVE = re.compile(rf"^(?:\.\./)+(?:({_OWNER})/)?({_NAME})/?$")
_SUBMODULE_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,255}$")

# Repositories whose clone failed in this process (no network): asked once, not per workspace.
_unreachable: set[str] = set()
_lock = threading.Lock()


class SubmoduleError(RepoError):
    """A submodule the base tree needs cannot be filled; the message says what to do."""


@dataclass(frozen=True)
class Sources:
    """Where submodules' clones are found: `repos_dir` (clones named owner__name, the user's),
    else mirrors under `cache_dir` (cloned from GitHub once, if it is reachable). `repo` is
    the superproject's owner/name, against which relative URLs resolve."""

    repo: str
    repos_dir: Path | None = None
    cache_dir: Path | None = None

    def fill(self, workspace: Path) -> list[Submodule]:
        """`fill(workspace, self)`: what repos.make_workspace calls once it has checked out."""
        return fill(workspace, self)


@dataclass(frozen=True)
class Submodule:
    name: str
    path: str  # relative to the workspace, as the tree records the gitlink
    url: str
    commit: str


def github_repo(url: str, superproject: str) -> str | None:
    """owner/name of the GitHub repository `url` names, or None (another host, or not a URL
    this module trusts). Relative URLs (`../name.git`) resolve against `superproject`."""
    url = url.strip()
    found = _GITHUB.match(url)
    owner, name = found.groups() if found else (None, None)
    if found is None:
        relative = _RELATIVE.match(url)
        if relative is None or "/" not in superproject:
            return None
        owner = relative.group(1) or superproject.split("/")[0]
        name = relative.group(2)
        if url.count("../") != (2 if relative.group(1) else 1):
            return None
    assert owner is not None and name is not None
    if name.endswith(".git"):
        name = name[:-4]
    if name in ("", ".", "..") or name.startswith("."):
        return None
    return f"{owner}/{name}"


def declared(workspace: Path) -> list[Submodule]:
    """The submodules of the workspace's index that `.gitmodules` declares (a gitlink it does
    not name, and an entry of it the tree does not record, are not submodules here)."""
    env = isolated_git_env()
    staged = git(workspace, "ls-files", "--stage", "-z", env=env).stdout.decode("utf-8", "replace")
    links: dict[str, str] = {}
    for entry in staged.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[0] == "160000":
            links[path] = fields[1]
    if not links or not safefs.exists_beneath(workspace, ".gitmodules"):
        return []
    # --file never follows include.path; --null keeps a value's newlines from forging keys.
    proc = git(
        workspace, "config", "--file", ".gitmodules", "--null", "--list", env=env, check=False
    )
    if proc.returncode != 0:
        raise SubmoduleError(
            f"{workspace}/.gitmodules cannot be read by git: "
            f"{proc.stderr.decode(errors='replace').strip()}"
        )
    paths: dict[str, str] = {}
    urls: dict[str, str] = {}
    for item in proc.stdout.decode("utf-8", "replace").split("\0"):
        key, _, value = item.partition("\n")
        if not key.startswith("submodule.") or key.count(".") < 2:
            continue
        name, field = key[len("submodule.") :].rsplit(".", 1)
        if field == "path":
            paths[name] = value.strip().rstrip("/")
        elif field == "url":
            urls[name] = value.strip()
    found = []
    for name, path in paths.items():
        if path not in links:
            continue
        if not _SUBMODULE_NAME.match(name) or ".." in name.split("/"):
            raise SubmoduleError(f"submodule name {name!r} in .gitmodules is not one git allows")
        found.append(Submodule(name, path, urls.get(name, ""), links[path]))
    return sorted(found, key=lambda s: s.path)


def fill(workspace: Path, sources: Sources) -> list[Submodule]:
    """Fill every declared submodule of `workspace` (made by repos.make_workspace, nothing run
    in it yet) at its gitlink's commit; return them. SubmoduleError if one cannot be."""
    subs = declared(workspace)
    for sub in subs:
        mirror = _clone_of(sub, sources)
        _check_out(workspace, sub, mirror)
        log.info("workspace %s: submodule %s filled at %s", workspace, sub.path, sub.commit[:12])
    return subs


def copy_filled(workspace: Path, dest: Path) -> None:
    """Copy the filled submodules of `workspace` into `dest`, a clone of it (a build copy:
    `git clone` leaves submodules empty), and mark them active there as well."""
    for sub in declared(dest):
        src = workspace / sub.path
        if not _plain_dir(workspace, sub.path) or not _plain_dir(workspace, f"{sub.path}/.git"):
            continue  # not filled in the workspace
        if not _plain_dir(dest, sub.path):
            raise SubmoduleError(f"{dest}/{sub.path} is not a plain directory")
        shutil.copytree(src, dest / sub.path, symlinks=True, dirs_exist_ok=True)
        _activate(dest, sub)


def _clone_of(sub: Submodule, sources: Sources) -> Path:
    where = f"submodule {sub.path!r} ({sub.url or 'no URL'}) at commit {sub.commit}"
    repo = github_repo(sub.url, sources.repo)
    if repo is None:
        raise SubmoduleError(
            f"{where} cannot be filled: its URL is not a GitHub repository, and swebounty "
            f"fills submodules only from clones of GitHub repositories"
        )
    folder = repo.replace("/", "__")
    advice = (
        f"clone {repo} into {sources.repos_dir}/{folder} "
        f"(git clone --bare https://github.com/{repo}.git {sources.repos_dir}/{folder})"
        if sources.repos_dir
        else f"clone {repo} into a folder DIR/{folder} and pass --repos-dir DIR"
    )
    mirror = find_mirror(repo, sources.repos_dir)
    if mirror is None and sources.cache_dir is not None:
        with _lock:
            tried = repo in _unreachable
        if not tried:
            try:
                mirror = ensure_mirror(
                    repo, repos_dir=None, cache_dir=sources.cache_dir, commits=[sub.commit]
                )
            except RepoError as exc:
                log.warning("submodule %s: %s", sub.path, exc)
                with _lock:
                    _unreachable.add(repo)
    if mirror is None:
        raise SubmoduleError(f"{where} cannot be filled: no clone of {repo} here; {advice}")
    has = git(mirror, "cat-file", "-e", f"{sub.commit}^{{commit}}", check=False)
    if has.returncode != 0:
        raise SubmoduleError(
            f"{where} cannot be filled: the clone {mirror} lacks that commit; fetch it "
            f"(git -C {mirror} fetch origin {sub.commit}) or {advice}"
        )
    return mirror


def _plain_dir(root: Path, rel: str) -> bool:
    """Whether root/rel is a directory reached through directories only (no link)."""
    try:
        with safefs.open_dir(root, rel.split("/")) as fd:
            return stat.S_ISDIR(os.fstat(fd).st_mode)
    except (OSError, ValueError):
        return False


def _check_out(workspace: Path, sub: Submodule, mirror: Path) -> None:
    """Make workspace/sub.path a shallow one-commit repository at sub.commit, checked out."""
    parts = sub.path.split("/")
    if any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
        raise SubmoduleError(f"submodule path {sub.path!r} is not a path inside the tree")
    if not _plain_dir(workspace, sub.path):
        raise SubmoduleError(f"submodule path {sub.path!r} is not a directory of the checkout")
    target = workspace / sub.path
    if any(target.iterdir()):
        raise SubmoduleError(f"submodule path {sub.path!r} is not empty")
    env = isolated_git_env()
    objects, tree = objects_and_tree(os.path.abspath(mirror), sub.commit)
    listing = sub.commit.encode() + b"\n" + git(mirror, "rev-list", "--objects", tree).stdout
    try:
        init_bare_minimum(target)
        gitdir = target / ".git"
        pack_objects(gitdir, objects, listing, env)
        # The commit's parents are not here: a shallow repository says so, and git is content.
        (gitdir / "shallow").write_text(sub.commit + "\n")
        (gitdir / "HEAD").write_text(sub.commit + "\n")  # detached, as a submodule is
        git(target, "read-tree", "--reset", "-u", "HEAD", env=env)
    except BaseException:
        for child in list(target.iterdir()):
            safefs.remove_tree(child)
        raise
    _activate(workspace, sub)


def _activate(workspace: Path, sub: Submodule) -> None:
    """Mark the submodule active (not its URL: nothing should fetch it)."""
    git(workspace, "config", f"submodule.{sub.name}.active", "true", env=isolated_git_env())
