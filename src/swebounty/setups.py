"""Starting states: a task's base commit with its setup patch applied, as a commit of its own.

SWE-Lancer's IC tasks start from a commit with a fixed bug put back (`Task.setup_patch`). That
state is made once per (base commit, setup patch) as a real commit in a repository the harness
owns (`cache_dir/setups/owner__name.git`), which borrows the mirror's objects through git's
alternates, so the user's clone is never written. The commit's parent is the base and its date
the base's (the environment's dependency cut-off is unchanged). Every workspace, the agent's
and each evaluation's, is made from it by the usual `make_workspace`: it has no history, and
the setup is part of its base tree, so the agent's diff, the test files' reset and the hack
flags all start from the state the task describes. A task without a setup patch is untouched.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from swebounty.repos import (
    RepoError,
    ensure_mirror,
    file_lock,
    git,
    isolated_git_env,
    resolve_commit,
)
from swebounty.tasks import Task

SETUPS_DIR = "setups"


def _objects_dir(mirror: Path) -> Path:
    out = git(mirror, "rev-parse", "--git-path", "objects").stdout.decode().strip()
    path = Path(out)
    return (path if path.is_absolute() else mirror / path).resolve()


def _setup_repo(mirror: Path, cache_dir: Path, repo: str) -> Path:
    """The harness's repository for `repo`'s starting states, borrowing `mirror`'s objects."""
    target = cache_dir / SETUPS_DIR / f"{repo.replace('/', '__')}.git"
    if not (target / "HEAD").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        git(target.parent, "init", "--bare", "--quiet", target.name, env=isolated_git_env())
    alternates = target / "objects" / "info" / "alternates"
    objects = str(_objects_dir(mirror))
    known = alternates.read_text().splitlines() if alternates.is_file() else []
    if objects not in known:
        alternates.parent.mkdir(parents=True, exist_ok=True)
        alternates.write_text("".join(f"{line}\n" for line in [*known, objects]))
    return target


def starting_state(
    mirror: Path, commit: str, setup_patch: str, cache_dir: Path, repo: str
) -> tuple[Path, str]:
    """(repository, commit) of `commit` with `setup_patch` applied; RepoError if it does not
    apply (the message says which task data to check)."""
    base = resolve_commit(mirror, commit)
    key = hashlib.sha256(f"{base}\0{setup_patch}".encode()).hexdigest()
    ref = f"refs/setups/{key}"
    with file_lock(cache_dir / SETUPS_DIR / f"{repo.replace('/', '__')}.lock"):
        target = _setup_repo(mirror, cache_dir, repo)
        found = git(target, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        if found.returncode == 0:
            return target, found.stdout.decode().strip()
        env = isolated_git_env()
        when = git(target, "show", "-s", "--format=%ct +0000", base, "--", env=env)
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.stdout.decode().strip()
        with tempfile.TemporaryDirectory(prefix="swebounty-setup-") as tmp:
            env["GIT_INDEX_FILE"] = os.path.join(tmp, "index")
            git(target, "read-tree", base, env=env)
            applied = git(target, "apply", "--cached", "--whitespace=nowarn", "-",
                          input=setup_patch.encode(), env=env, check=False)  # fmt: skip
            if applied.returncode != 0:
                err = applied.stderr.decode(errors="replace").strip()
                raise RepoError(f"the setup patch does not apply to {base}: {err}")
            tree = git(target, "write-tree", env=env).stdout.decode().strip()
        message = b"swebounty: the task's starting state (its setup patch)\n"
        made = git(target, "commit-tree", tree, "-p", base, input=message, env=env)
        state = made.stdout.decode().strip()
        git(target, "update-ref", ref, state, env=env)
        return target, state


def starting_point(task: Task, *, repos_dir: Path | None, cache_dir: Path) -> tuple[Path, str]:
    """Where a task's workspaces come from: (mirror, base commit), or the starting state's
    (repository, commit) when the task has a setup patch."""
    mirror = ensure_mirror(
        task.repo, repos_dir=repos_dir, cache_dir=cache_dir, url=task.repo_url,
        commits=[task.base_commit],  # a cached clone older than the task is fetched once
    )  # fmt: skip
    if not task.setup_patch.strip():
        return mirror, task.base_commit
    return starting_state(mirror, task.base_commit, task.setup_patch, cache_dir, task.repo)
