"""Small JavaScript repositories made on the fly, with one task each: a base commit, a fix and
hidden tests, as a dataset row in SWE-bench's format (no `ecosystem`)."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

from repo_helpers import git_env
from swebounty.tasks import Task

WHEN = "2025-03-01T12:00:00+00:00"


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], env=git_env(WHEN), check=True,
                         capture_output=True, text=True)  # fmt: skip
    return out.stdout


def _write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def js_task(
    repos: Path,
    name: str,
    base: dict[str, str],
    fix: dict[str, str],
    tests: dict[str, str],
    fail_to_pass: list[str],
    pass_to_pass: list[str],
) -> Task:
    """`repos/o__<name>` with `base` committed, and the task whose reference patch writes `fix`
    and whose test patch writes `tests`."""
    repo = repos / f"o__{name}"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    _write(repo, base)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    head = _git(repo, "rev-parse", "HEAD").strip()
    _write(repo, fix)
    _git(repo, "add", "-A")
    patch = _git(repo, "diff", "--cached", "HEAD")
    _git(repo, "reset", "-q", "--hard", head)
    _write(repo, tests)
    _git(repo, "add", "-A")
    test_patch = _git(repo, "diff", "--cached", "HEAD")
    _git(repo, "reset", "-q", "--hard", head)
    return Task(instance_id=f"o__{name}-1", repo=f"o/{name}", base_commit=head,
                problem_statement="fix it", patch=patch, test_patch=test_patch,
                FAIL_TO_PASS=fail_to_pass, PASS_TO_PASS=pass_to_pass)  # fmt: skip
