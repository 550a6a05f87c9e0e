"""Test frameworks as plug-ins: the registry the evaluation path asks (protocol: base.py).

`FRAMEWORKS` is ordered most specific first; the first whose `applies` says yes runs a task's
tests, pytest last as the Python default. A repository's entry in the overrides file
(envs/overrides.toml) can pin one by name (`framework = "django"`): data, never code. A run
records the framework's name (`TestRun.framework`), and grading asks that one again.
"""

from __future__ import annotations

from swebounty.frameworks.base import (
    BaseTree,
    BuiltEnv,
    Framework,
    RunContext,
    TestRun,
)
from swebounty.frameworks.django import Django
from swebounty.frameworks.e2e import E2E
from swebounty.frameworks.node import Node
from swebounty.frameworks.pytest import Pytest
from swebounty.frameworks.sympy import Sympy
from swebounty.frameworks.unittest import Unittest
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict

__all__ = [
    "FRAMEWORKS",
    "BaseTree",
    "BuiltEnv",
    "Framework",
    "FrameworkError",
    "RunContext",
    "TestRun",
    "by_name",
    "framework_for",
    "grade_run",
    "resolve",
    "stamp",
]


class FrameworkError(Exception):
    """No framework can run a task's tests (or the one pinned is unknown): the harness's
    limitation, never the submission's."""


# Most specific first; the Python default last. sympy's runner applies only where pinned.
FRAMEWORKS: list[Framework] = [E2E(), Node(), Django(), Unittest(), Sympy(), Pytest()]


def by_name(name: str) -> Framework:
    for framework in FRAMEWORKS:
        if framework.name == name:
            return framework
    known = ", ".join(f.name for f in FRAMEWORKS)
    raise FrameworkError(f"no test framework named {name!r} (known: {known})")


def resolve(task: Task, ctx: RunContext) -> tuple[Task, Framework]:
    """`task` with its ecosystem decided (ecosystems.py: a SWE-bench row names none), and the
    framework that runs its tests. Raises FrameworkError when neither can be decided (and the
    RepoError of a repository or base commit that cannot be read)."""
    from swebounty.ecosystems import EcosystemError
    from swebounty.ecosystems import resolve as resolve_ecosystem

    try:
        task = resolve_ecosystem(task, repos_dir=ctx.repos_dir, cache_dir=ctx.cache_dir)
    except EcosystemError as exc:
        raise FrameworkError(str(exc)) from exc
    return task, framework_for(task, ctx)


def stamp(run: TestRun, task: Task, framework: Framework) -> None:
    """Record on `run` which framework runs it, the task's ecosystem as decided, and the test
    files the framework will run."""
    run.framework, run.ecosystem = framework.name, task.ecosystem
    run.test_files = framework.test_files(task)


def framework_for(task: Task, ctx: RunContext, tree: BaseTree | None = None) -> Framework:
    """The framework that runs `task`'s tests: the one its repository's overrides pin, else
    the first of FRAMEWORKS that applies. Raises FrameworkError when none does (and the
    RepoError of a base commit that cannot be read)."""
    tree = tree or BaseTree(task, ctx.repos_dir, ctx.cache_dir)
    pinned = _pinned(task, ctx, tree)
    if pinned is not None:
        return by_name(pinned)
    for framework in FRAMEWORKS:
        if framework.applies(task, tree):
            return framework
    raise FrameworkError(
        f"no test framework swebounty knows ({', '.join(f.name for f in FRAMEWORKS)}) runs the "
        f"tests of {task.repo} ({task.ecosystem}); pin one in the overrides file "
        '(framework = "name")'
    )


def _pinned(task: Task, ctx: RunContext, tree: BaseTree) -> str | None:
    """The framework an override of the task's repository names (the last that applies)."""
    from swebounty.envs.overrides import matching

    overrides = getattr(ctx.envs, "overrides", [])
    if not any(o.framework and o.repo.lower() == task.repo.lower() for o in overrides):
        return None  # no git needed to learn the base commit's date
    names = [o.framework for o in matching(overrides, task.repo, task.version, tree.when)]
    found = [n for n in names if n]
    return found[-1] if found else None


def grade_run(task: Task, submission: Submission, run: TestRun) -> Verdict:
    """The verdict of a run, by the framework that made it; a run that failed before any
    framework was chosen is graded as the infrastructure error it is."""
    if run.framework is not None:
        return by_name(run.framework).grade(task, submission, run)
    from swebounty.grading import grade

    return grade(
        task,
        submission,
        outcomes=None,
        exit_code=None,
        patch_method=None,
        infra_error=run.error or "no test framework ran the tests",
    )
