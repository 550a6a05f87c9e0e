"""Naming the repositories to mine: a command-line argument (`RepoSource`), a `--repos FILE`
list, and each repository's own record of the run.

A list names one repository a line: `owner/name` (its clone is `REPOS_DIR/owner__name`) or
`owner/name=CLONE`; blank lines and `#` comments are skipped. A line that names no clone that
exists is not fatal: the repository is recorded as failed with the reason, and the others run.

`RepoLog` is `<output stem>.repos.json`: per repository, its clone, how many fixes were mined
in the window, whether mining finished or failed (and why), and the seconds it took. It is
rewritten (atomically) after every repository, so a stopped run shows how far it got, and the
yield funnel (funnel.py) counts repositories that gave no fix at all. It is a record, not a
to-do list: every run mines every repository again (pipeline.collect).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from swebounty.collect.mining import GitError, open_repo

_SLUG = re.compile(r"^[\w.-]+/[\w.-]+$")


@dataclass
class RepoSource:
    """One repository to mine: its clone, and whether the GitHub API enriches it."""

    path: Path
    repo: str | None = None  # owner/name; None: from the clone's origin remote
    api: bool = False
    problem: str | None = None  # why this repository cannot be mined (its clone is missing)


def parse_repo_arg(
    arg: str, repo_path: Path | None = None, *, git_only: bool = False
) -> RepoSource:
    """REPO as given on the command line: a clone path (git-only), `owner/name` with
    --repo-path, or `owner/name=CLONE`. The last two use the API unless `git_only` (then
    owner/name only names the repository)."""
    if "=" in arg and _SLUG.match(arg.split("=", 1)[0]):
        slug, path = arg.split("=", 1)
        return RepoSource(open_repo(path), slug, api=not git_only)
    if Path(arg).expanduser().exists() or not _SLUG.match(arg):
        return RepoSource(open_repo(arg))
    if repo_path is None:
        raise ValueError(
            f"{arg} looks like owner/name: give its clone with --repo-path CLONE "
            f"(or write {arg}=CLONE), or pass the clone's path for git-only mode"
        )
    return RepoSource(open_repo(repo_path), arg, api=not git_only)


@dataclass
class RepoLine:
    """One line of a repository list: the slug, and its clone (None: not found)."""

    repo: str
    clone: Path | None
    problem: str | None = None  # why the clone cannot be used


def clone_dir(repos_dir: Path, repo: str) -> Path:
    """Where `owner/name` is cloned under a folder of clones: `owner__name`."""
    return repos_dir / repo.replace("/", "__")


def read_repo_list(path: Path, repos_dir: Path | None = None) -> list[RepoLine]:
    """The repositories a list names, in order, each once. Raises ValueError for a line that is
    not `owner/name[=CLONE]` (a typo must not silently shrink the benchmark)."""
    lines: list[RepoLine] = []
    seen: set[str] = set()
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        slug, _, clone_text = text.partition("=")
        slug = slug.strip()
        if not _SLUG.match(slug):
            raise ValueError(f"{path}:{n}: {text!r} is not owner/name or owner/name=CLONE")
        if slug.lower() in seen:
            continue
        seen.add(slug.lower())
        if clone_text.strip():
            clone = Path(clone_text.strip()).expanduser()
            if not clone.is_absolute():
                clone = path.parent / clone
        elif repos_dir is not None:
            clone = clone_dir(repos_dir, slug)
        else:
            raise ValueError(
                f"{path}:{n}: {slug} has no clone: write {slug}=CLONE, or pass --repos-dir "
                "with the folder holding owner__name clones"
            )
        try:
            lines.append(RepoLine(slug, open_repo(clone)))
        except GitError as exc:
            lines.append(RepoLine(slug, None, str(exc)))
    return lines


class RepoRecord(BaseModel):
    """What mining one repository gave."""

    repo: str
    clone: str | None = None
    # running: begun (or killed mid-way); stopped: interrupted mid-way, its fixes so far kept
    status: Literal["running", "done", "failed", "stopped"] = "running"
    fixes: int = 0  # fix commits and merged PRs that landed in the window
    error: str | None = None
    seconds: float = 0.0


class RepoLog:
    """`<output stem>.repos.json`, rewritten after each change."""

    def __init__(self, path: Path, *, fresh: bool = False) -> None:
        self.path = path
        self.records: dict[str, RepoRecord] = {} if fresh else load_repo_log(path)

    def update(self, record: RepoRecord) -> None:
        self.records[record.repo] = record
        data: dict[str, Any] = {r: rec.model_dump() for r, rec in self.records.items()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
        os.replace(tmp, self.path)  # a kill leaves the old file or the new one, never half


def load_repo_log(path: Path) -> dict[str, RepoRecord]:
    """The records of a repos.json; {} when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {repo: RepoRecord.model_validate(rec) for repo, rec in data.items()}
    except (OSError, ValueError):
        return {}


def repo_log_path(output: Path) -> Path:
    return output.with_name(output.stem + ".repos.json")
