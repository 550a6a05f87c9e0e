"""One attempt for tests of evaluate_run's own control flow (interruptions, saving, cleanup),
with no repository and no sandbox: the tests replace the evaluation itself."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict, VerdictStatus


def one_attempt(runs_dir: Path, **ctx: Any) -> tuple[Task, Submission, Any]:
    """A task, an empty submission to it, and a context holding only what evaluate_run reads
    (plus `ctx`)."""
    task = Task(instance_id="o__r-1", repo="o/r", base_commit="abc", patch="d", test_patch="t")
    sub = Submission(instance_id="o__r-1", model_patch="", model_name_or_path="m")
    return task, sub, SimpleNamespace(runs_dir=runs_dir, cancelled=threading.Event(), **ctx)


def verdict_of(
    task: Task, sub: Submission, status: VerdictStatus, reason: str, *, empty_patch: bool = True
) -> Verdict:
    return Verdict(
        instance_id=task.instance_id,
        attempt=sub.attempt,
        model_name_or_path=sub.model_name_or_path,
        status=status,
        empty_patch=empty_patch,
        reason=reason,
    )
