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
    if need.services or need.service_data:
        lacks += _service_lacks(need.services, need.service_data)
    if need.browser:
        from swebounty.report.browser import browser_missing

        if why := browser_missing():
            lacks.append(f"a browser: {why}")
    return lacks


def _service_lacks(services: list[str], data: dict[str, list[str]]) -> list[str]:
    from swebounty.services.catalog import load_catalog

    known = {s.name: s for s in load_catalog().service}
    lacks = []
    for name in services:
        service = known.get(name)
        if service is None:
            lacks.append(f"the service {name} (not in swebounty's service catalog)")
        elif service.takes_data and not data.get(name):
            lacks.append(f"the files the service {name} reads (the task gives none in "
                         "requires.service_data)")  # fmt: skip
    for name, files in data.items():
        if name not in services:
            lacks.append(f"the service {name} its requires.service_data names (it is not "
                         "among requires.services)")  # fmt: skip
        for file in files:
            path = Path(file)
            if not path.is_absolute() or not path.is_file():
                lacks.append(f"the file {file} the service {name} reads (take it with the "
                             "dataset)")  # fmt: skip
    return lacks


def cannot_run(lacks: list[str]) -> str:
    """The reason an evaluation or an attempt gives when the machine lacks something."""
    return "cannot run on this machine; it lacks " + "; ".join(lacks)
