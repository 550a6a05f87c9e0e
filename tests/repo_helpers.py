"""A small git repository a test writes from a dict of files (the environment tests' fixture),
and the git environment every test's repositories are made with."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

# A one-module project with a bug (`double` adds instead of multiplying) and pytest as its test
# extra: the grading tests' small repository (their tests and tasks are added by each test).
BUGGY_PROJECT = {
    "pyproject.toml": '[project]\nname = "proj"\nversion = "0.1"\n'
    'requires-python = ">=3.8"\n[project.optional-dependencies]\ntest = ["pytest"]\n',
    "proj/__init__.py": "",
    "proj/a.py": "def double(x):\n    return x + 2\n\n\ndef name():\n    return 'proj'\n",
    "tests/__init__.py": "",
}


# git that reads neither the user's nor the system's configuration and commits as one identity,
# so a repository a test makes is the same whoever runs it.
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git_env(when: str | None = None) -> dict[str, str]:
    """This process's environment (read now: a test may have changed it) without the caller's
    GIT_* variables, with GIT_ENV, and commits dated `when` (ISO 8601) when it is given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    return env | ({"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else {})


def git_repo(root: Path, files: dict[str, str], *, when: str | None = None) -> Path:
    """`root` made a git repository with `files` (relative path -> dedented text) committed;
    `when` (ISO 8601) dates the commit, and so the dependency cut-off of its environment."""
    env = git_env(when)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *argv], cwd=root, env=env, check=True, capture_output=True)
    return root


# The date of the small projects' base commits: their environments' cut-off.
WHEN = "2024-03-01T12:00:00+00:00"


def git(repo: Path, *argv: str) -> str:
    """git's output in `repo`, its commits dated WHEN."""
    return subprocess.run(
        ["git", *argv], cwd=repo, env=git_env(WHEN), check=True, capture_output=True, text=True
    ).stdout


def diff_of(repo: Path, files: dict[str, str]) -> str:
    """The patch that writes `files` (path -> dedented text) in `repo`, made with git and
    undone."""
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(textwrap.dedent(text))
    git(repo, "add", "-N", ".")
    patch = git(repo, "diff")
    git(repo, "reset", "-q")
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "clean", "-qfd")
    return patch


def base_clones(repos_dir: Path, repos: list[str], commit: str = "abc") -> Path:
    """`repos_dir` with a one-commit clone of each of `repos` ("owner/name"), tagged `commit`.

    The framework registry reads a task's base commit to choose its framework (a django runner
    script?), so tests whose tasks name a made-up base commit give it this: a tree with only a
    test module, which pytest runs."""
    for repo in repos:
        if (repos_dir / repo.replace("/", "__")).exists():
            continue
        root = git_repo(repos_dir / repo.replace("/", "__"), {"tests/t.py": "x = 1\n"})
        subprocess.run(["git", "tag", commit], cwd=root, env=git_env(), check=True)
    return repos_dir
