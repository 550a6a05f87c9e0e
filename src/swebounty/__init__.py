"""swebounty: fresh, hidden-test, dollar-valued evaluation of AI coding agents, without Docker."""

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
]
__version__ = "0.1.0"
