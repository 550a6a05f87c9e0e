"""What a task needs that this machine lacks, said before any work is done.

A task may declare what running it takes beyond what swebounty builds itself
(`Task.requires`: a clone that cannot be made on demand, files the tests read, programs and
services the tests' runtime starts, a browser). `missing` checks each one here and returns one
line per lack, with what to do; evaluation and agent runs turn a non-empty answer into an
`error` (the machine's, never the model's failure) naming them all, instead of failing late
and naming only the first. A task that declares nothing needs nothing more.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from swebounty.repos import _is_git_repo, find_mirror
from swebounty.tasks import Task


def _clone_here(task: Task, repos_dir: Path | None, cache_dir: Path) -> bool:
    if find_mirror(task.repo, repos_dir) is not None:
        return True
    return _is_git_repo(cache_dir / "mirrors" / f"{task.owner_name}.git")


def missing(task: Task, *, repos_dir: Path | None, cache_dir: Path) -> list[str]:
    """One line per thing `task` requires that is not here (empty: it can run here)."""
    need = task.requires
    if need is None:
        return []
    lacks = []
    if need.local_clone is not None and not _clone_here(task, repos_dir, cache_dir):
        where = (
            f"{repos_dir}/{task.owner_name}" if repos_dir else f"--repos-dir DIR/{task.owner_name}"
        )
        lacks.append(f"a clone of {task.repo} ({need.local_clone}; put it at {where})")
    for name in need.files:
        path = Path(name)
        if not path.is_absolute() or not path.is_file():
            lacks.append(f"the file {name} (the task's data: take it with the dataset)")
    for program in need.programs:
        if shutil.which(program) is None:
            lacks.append(f"the program {program} on PATH")
    if need.services:
        from swebounty.services.catalog import load_catalog

        known = {s.name for s in load_catalog().service}
        for service in need.services:
            if service not in known:
                lacks.append(f"the service {service} (not in swebounty's service catalog)")
    if need.browser:
        from swebounty.report.browser import browser_missing

        if why := browser_missing():
            lacks.append(f"a browser: {why}")
    return lacks


def cannot_run(lacks: list[str]) -> str:
    """The reason an evaluation or an attempt gives when the machine lacks something."""
    return "cannot run on this machine; it lacks " + "; ".join(lacks)
