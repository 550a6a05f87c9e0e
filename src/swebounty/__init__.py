"""swebounty: fresh, hidden-test, dollar-valued evaluation of AI coding agents, without Docker.

The public API is `__all__`. Names are imported on first use (PEP 562), so `import swebounty`
and the CLI's start-up do not pay for pydantic models, scoring or the HTML report until needed.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from swebounty.agents import Agent, AgentResult, PublicTask, create_agent
    from swebounty.evalinputs import EvalInputError
    from swebounty.evaluation import evaluate
    from swebounty.report import write_report
    from swebounty.scoring import score_run
    from swebounty.tasks import (
        Attempt,
        EnvSpec,
        RecordError,
        Submission,
        Task,
        load_predictions,
        load_tasks,
    )
    from swebounty.verdicts import TestResult, Verdict

# Public name -> the module that defines it.
_WHERE = {
    "Agent": "swebounty.agents",
    "AgentResult": "swebounty.agents",
    "Attempt": "swebounty.tasks",
    "PublicTask": "swebounty.agents",
    "create_agent": "swebounty.agents",
    "EvalInputError": "swebounty.evalinputs",
    "evaluate": "swebounty.evaluation",
    "EnvSpec": "swebounty.tasks",
    "RecordError": "swebounty.tasks",
    "Submission": "swebounty.tasks",
    "Task": "swebounty.tasks",
    "TestResult": "swebounty.verdicts",
    "Verdict": "swebounty.verdicts",
    "load_predictions": "swebounty.tasks",
    "load_tasks": "swebounty.tasks",
    "score_run": "swebounty.scoring",
    "write_report": "swebounty.report",
}

__all__ = [
    "Agent",
    "AgentResult",
    "Attempt",
    "EnvSpec",
    "EvalInputError",
    "PublicTask",
    "RecordError",
    "Submission",
    "Task",
    "TestResult",
    "Verdict",
    "create_agent",
    "evaluate",
    "load_predictions",
    "load_tasks",
    "score_run",
    "write_report",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module 'swebounty' has no attribute {name!r}")
    value = getattr(_importlib.import_module(_WHERE[name]), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
