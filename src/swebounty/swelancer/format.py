"""The SWE-Lancer CSV format: which files are SWE-Lancer's, and every row read as a Task."""

from __future__ import annotations

import csv
from pathlib import Path

from pydantic import ValidationError

from swebounty.records import describe_invalid
from swebounty.swelancer.ic import ic_task
from swebounty.swelancer.manager import manager_task
from swebounty.swelancer.rows import REQUIRED, VARIANTS, RowError, read_rows, split_name
from swebounty.tasks import RecordError, Task


class SWELancerFormat:
    """SWE-Lancer's CSV task files (the `formats.DatasetFormat` protocol)."""

    name = "swelancer"

    def claims(self, path: Path) -> bool:
        if path.suffix.lower() != ".csv" or not path.is_file():
            return False
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            header = next(csv.reader([handle.readline()]), [])
        return {h.strip() for h in header} >= REQUIRED

    def load(self, path: Path) -> tuple[list[Task], list[RecordError]]:
        tasks: list[Task] = []
        errors: list[RecordError] = []
        default_split = split_name(path)
        try:
            rows = list(read_rows(path))
        except (csv.Error, OSError) as exc:
            return [], [RecordError(source=str(path), where="file", message=f"not CSV: {exc}")]
        for line, row in rows:
            where = f"line {line}" + (
                f" ({row['question_id'][:80]})" if row.get("question_id") else ""
            )
            try:
                split = (row.get("set") or "").strip() or default_split
                variant = (row.get("variant") or "").strip()
                if variant == "swe_manager":
                    record = manager_task(row, split)
                elif variant == "ic_swe":
                    record = ic_task(row, split, path.parent)
                else:
                    raise RowError(f"variant {variant[:40]!r} is not one of {', '.join(VARIANTS)}")
                tasks.append(Task.model_validate(record))
            except RowError as exc:
                errors.append(RecordError(source=str(path), where=where, message=str(exc)))
            except (ValidationError, ValueError, RecursionError) as exc:
                errors.append(
                    RecordError(source=str(path), where=where, message=describe_invalid(exc))
                )
        return tasks, errors


FORMAT = SWELancerFormat()
