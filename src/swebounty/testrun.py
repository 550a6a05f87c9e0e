"""Running a task's hidden tests against a patch, once: the step under every verdict.

`run_tests` asks the framework registry (frameworks/) which test framework runs the task's
tests and has it make a fresh workspace at the base commit, apply the patch, put the test
infrastructure back as at the base commit, apply the hidden tests and run them in the sandbox,
its results coming back on a channel the harness owns, never from a file. Whatever the patch
does, it comes back as data:
- `patch_error`: the patch does not apply;
- `failure`: the submission broke the run (tampered with the reporting): graded `unresolved`,
  with a flag;
- `error`: the harness or the task could not run the tests, or the run crashed, hung or lost
  its results (`crash`: baseline.py decides whose fault that was from the unpatched base's run).
Cleanup never recurses into the sandbox's leftovers and never replaces any of these.
"""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

from swebounty.envs import EnvBuildError
from swebounty.frameworks import FrameworkError, resolve, stamp
from swebounty.frameworks.base import RunContext, TestRun
from swebounty.frameworks.python import build_task_env, workspace_and_env
from swebounty.integrity import IntegrityError
from swebounty.remover import remove_trees
from swebounty.repos import RepoError
from swebounty.sandbox import SandboxError
from swebounty.services.catalog import ServiceError
from swebounty.tasks import Task

# RunContext and TestRun are frameworks/base.py's, build_task_env and workspace_and_env
# frameworks/python.py's: listed here because much of the harness imports them from here.
__all__ = ["RunContext", "TestRun", "build_task_env", "run_tests", "workspace_and_env"]

log = logging.getLogger(__name__)


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="replace")


def run_tests(task: Task, patch: str, ctx: RunContext, log_dir: Path) -> TestRun:
    """Apply `patch` and the hidden tests to a fresh workspace and run them in the sandbox.

    Never raises for problems of the task, the patch or the infrastructure (see the module
    docstring). A run that crashed, hung or lost its results is an `error` with `crash` set:
    `baseline.attribute` compares it with the unpatched base's run to say whose fault it was.
    """
    start = time.monotonic()
    log_dir.mkdir(parents=True, exist_ok=True)
    _write(log_dir / "patch.diff", patch)
    result = TestRun()
    scratch = ctx.work_dir / f"{task.instance_id}-{uuid.uuid4().hex[:8]}"
    crash: str | None = None
    try:
        task, framework = resolve(task, ctx)
        stamp(result, task, framework)
        crash = framework.run(task, patch, ctx, log_dir, scratch, result)
    except FrameworkError as exc:
        result.error = result.limitation = str(exc)
    except (RepoError, EnvBuildError, SandboxError, IntegrityError, ServiceError) as exc:
        result.error = str(exc)
    except Exception as exc:  # a harness bug must not take the run down with it
        cancelled = getattr(ctx, "cancelled", None)  # EvalContext's, set by Ctrl-C
        if cancelled is not None and cancelled.is_set():
            # a step cut short by Ctrl-C (its tools got SIGINT too): expected, not a bug
            log.info("%s: stopped by the interruption (%s)", task.instance_id, exc)
        else:
            log.exception("evaluating %s failed", task.instance_id)
        result.error = f"harness error: {type(exc).__name__}: {exc}"
    finally:
        # Never recursive, never raising: a tree the tests left cannot cost the verdict; off
        # the critical path, after the run, when the context has a remover (remover.py).
        trees = [scratch]
        if ctx.memory_dir is not None:  # the workspace, if it was made in memory
            trees.append(ctx.memory_dir / scratch.name)
        result.cleanup_error = remove_trees(getattr(ctx, "remover", None), trees, task.instance_id)
    if crash is not None:
        result.error = result.crash = crash
    result.seconds = time.monotonic() - start
    if result.error:
        _write(log_dir / "error.txt", result.error)
    return result
