"""A small git repository a test writes from a dict of files (the environment tests' fixture)."""

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


def git_repo(root: Path, files: dict[str, str], *, when: str | None = None) -> Path:
    """`root` made a git repository with `files` (relative path -> dedented text) committed;
    `when` (ISO 8601) dates the commit, and so the dependency cut-off of its environment."""
    env = {**os.environ, **({"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else {})}
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for argv in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", *argv], cwd=root, env=env, check=True, capture_output=True)
    return root
