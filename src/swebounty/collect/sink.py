"""Append-only JSONL outputs that survive a crash and let the next run resume.

Records go to `<file>.partial` the moment they exist (one line, flushed); `finish()` renames the
partial files into place, so a finished file is always complete. At start, the partial file left
by a stopped run (or else the finished file of an earlier run) is read back: the ids it holds are
`known`, so a re-run skips them and never writes a duplicate. `fresh=True` starts over. A record
a re-run no longer wants (a candidates file without its id) leaves the output for
`<stem>.dropped.jsonl` beside it, never into nothing: it may be hours of validation.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swebounty.tasks import Task

log = logging.getLogger(__name__)


class Sink:
    """Kept records to `output`, rejected ones to `rejects`; both resumable."""

    def __init__(
        self,
        output: Path,
        rejects: Path,
        *,
        forget: Callable[[dict[str, Any]], bool] | None = None,
        fresh: bool = False,
        only: set[str] | None = None,
    ) -> None:
        """`forget(reject_record)`: True for a reject that a resumed run should try again
        (its line is dropped). `only`: ids still wanted; earlier records of others are dropped
        (validating a new candidates file must not carry over tasks it no longer has); they are
        appended to `dropped(file)` and counted in `dropped_count`."""
        self.output, self.rejects = output, rejects
        self.partial = output.with_name(output.name + ".partial")
        self.rejects_partial = rejects.with_name(rejects.name + ".partial")
        self.known: set[str] = set()
        self.dropped_count = 0
        self._lock = threading.Lock()
        output.parent.mkdir(parents=True, exist_ok=True)
        rejects.parent.mkdir(parents=True, exist_ok=True)
        for final, partial in ((output, self.partial), (rejects, self.rejects_partial)):
            if fresh:
                partial.unlink(missing_ok=True)
            elif not partial.exists() and final.exists():
                # Continue from a finished run; the finished file stays valid until finish().
                partial.write_bytes(final.read_bytes())

        def unwanted(record: dict[str, Any]) -> bool:
            return only is not None and str(record.get("instance_id")) not in only

        def forget_reject(record: dict[str, Any]) -> bool:
            return unwanted(record) or (forget is not None and forget(record))

        for path, final, drop in (
            (self.partial, output, unwanted),
            (self.rejects_partial, rejects, forget_reject),
        ):
            self.known |= self._load(path, drop, unwanted, dropped(final))

    def _load(
        self,
        path: Path,
        forget: Callable[[dict[str, Any]], bool] | None,
        unwanted: Callable[[dict[str, Any]], bool],
        aside: Path,
    ) -> set[str]:
        if not path.exists():
            return set()
        ids: set[str] = set()
        keep: list[str] = []
        away: list[str] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
                iid = str(record["instance_id"])
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a line torn by a kill: that record is simply redone
            if unwanted(record):
                away.append(line)
            elif forget is None or not forget(record):
                ids.add(iid)
                keep.append(line)
        if away:
            # Kept before the output is rewritten: a crash in between duplicates, never loses.
            with aside.open("a", encoding="utf-8") as fh:
                fh.write("".join(line + "\n" for line in away))
            self.dropped_count += len(away)
            log.warning(
                "%d records in %s are of candidates this candidates file does not hold: moved"
                " to %s (validate the file that holds them to keep them in the output)",
                len(away), path.name, aside,
            )  # fmt: skip
        # Rewrite without torn or forgotten lines, so the final file has each id once.
        path.write_text("".join(line + "\n" for line in keep), encoding="utf-8")
        return ids

    def _append(self, path: Path, line: str) -> None:
        with self._lock, path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()

    def add(self, task: Task) -> None:
        self.known.add(task.instance_id)
        self._append(self.partial, task.model_dump_json())

    def reject(self, record: dict[str, Any]) -> None:
        self.known.add(str(record["instance_id"]))
        self._append(self.rejects_partial, json.dumps(record, default=str))

    def finish(self) -> None:
        for partial, final in ((self.partial, self.output), (self.rejects_partial, self.rejects)):
            if not partial.exists():
                partial.touch()
            partial.replace(final)


def dropped(output: Path) -> Path:
    """Where records leave `output` when a re-run no longer wants them: `tasks.jsonl` ->
    `tasks.dropped.jsonl`."""
    return output.with_name(output.stem + ".dropped.jsonl")
