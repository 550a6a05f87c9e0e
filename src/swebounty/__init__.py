"""swebounty: fresh, hidden-test, dollar-valued evaluation of AI coding agents, without Docker."""

from swebounty.report import write_report
from swebounty.scoring import score_run
from swebounty.tasks import (
    EnvSpec,
    RecordError,
    Submission,
    Task,
    TestResult,
    Verdict,
    load_predictions,
    load_tasks,
)

__all__ = [
    "EnvSpec",
    "RecordError",
    "Submission",
    "Task",
    "TestResult",
    "Verdict",
    "load_predictions",
    "load_tasks",
    "score_run",
    "write_report",
]
__version__ = "0.1.0"
