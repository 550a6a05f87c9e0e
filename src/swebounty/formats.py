"""Dataset formats: how a task file that is not SWE-bench's JSON becomes Tasks.

A format is a plug-in behind `DatasetFormat`: it says whether a file is one of its own
(`claims`, from the name and the first bytes) and reads it into Tasks and RecordErrors (`load`).
`load_file` asks every registered format in turn and falls back to SWE-bench's records
(`tasks.load_tasks`: `.json`, `.jsonl`, `.parquet`, Multi-SWE-bench's records among them), so
the evaluation path never names a format. A new format is a new module listed in `FORMATS`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol, runtime_checkable

from swebounty.tasks import RecordError, Task, first_of_each, load_tasks

# name -> "module:attribute" of the format object; imported only when a file is read.
FORMATS: dict[str, str] = {
    "swelancer": "swebounty.swelancer.format:FORMAT",
}


@runtime_checkable
class DatasetFormat(Protocol):
    """Reads one kind of task file."""

    name: str

    def claims(self, path: Path) -> bool:
        """True if `path` is this format's (cheap: the suffix and the first bytes)."""
        ...

    def load(self, path: Path) -> tuple[list[Task], list[RecordError]]:
        """The file's tasks; a bad record is a RecordError, never an exception."""
        ...


def registered() -> list[DatasetFormat]:
    """Every format of `FORMATS`, in order."""
    found = []
    for spec in FORMATS.values():
        module, _, attribute = spec.partition(":")
        found.append(getattr(importlib.import_module(module), attribute))
    return found


def format_of(path: Path) -> DatasetFormat | None:
    """The format that claims `path`, or None for SWE-bench's records."""
    return next((fmt for fmt in registered() if fmt.claims(path)), None)


def load_file(path: str | Path) -> tuple[list[Task], list[RecordError]]:
    """The tasks of a dataset file in any known format; duplicate ids keep the first."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset {path} does not exist")
    fmt = format_of(path)
    if fmt is None:
        return load_tasks(path)
    tasks, errors = fmt.load(path)
    return first_of_each(tasks, errors, path), errors
