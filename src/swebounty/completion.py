"""Tests skipped for want of a package: the environment is incomplete, not the patch wrong.

When a task's expected tests are skipped in a run, `complete_env` looks at the same tests on
the unpatched base (baseline.base_run, cached). Those the base skips too, with a reason that
names a module this environment lacks ("requires dask", "could not import 'cftime'",
`not HAS_SCIPY`), make the environment ask for that module's distribution
(envs/complete.py): the spec's environment is rebuilt with it and the caller runs the tests
again, in the environment every later task of the spec gets too.

Only the base's reasons are read, never the submission's: a patch that makes a test skip with
a crafted reason must not choose what is installed in an environment other submissions share.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable

from swebounty import safefs
from swebounty.baseline import BaseContext, base_run
from swebounty.envs.complete import marker_reasons, wanted_modules
from swebounty.envs.probe import own_roots
from swebounty.frameworks import grade_run
from swebounty.tasks import Submission, Task
from swebounty.testrun import TestRun, workspace_and_env

log = logging.getLogger(__name__)

MAX_TEST_FILE = 8 << 20
# Completions of one evaluation: what one distribution brings may lack the next (dask added for
# `requires dask`, then its tests fail on `No module named 'tlz'`, toolz: xarray-4094). Each
# module is asked for once per spec, so the rounds end anyway; this bounds the test runs.
ROUNDS = 3


def completed_run(
    task: Task, tr: TestRun, ctx: BaseContext, rerun: Callable[[], TestRun], *, is_base: bool
) -> TestRun:
    """`tr`, or the run of `rerun` after the environment was completed, as many rounds as the
    base's reasons keep naming what it lacks (at most ROUNDS)."""
    for _ in range(ROUNDS):
        if not complete_env(task, tr, ctx, is_base=is_base):
            break
        tr = rerun()
    return tr


def skipped_ids(task: Task, tr: TestRun) -> list[str]:
    """The task's expected tests that `tr` skipped (ids matched as grading matches them)."""
    if tr.error or tr.patch_error or tr.failure or not tr.outcomes:
        return []
    empty = Submission(instance_id=task.instance_id, model_patch="")
    verdict = grade_run(task, empty, tr)
    return [
        t.test_id
        for t in verdict.tests
        if t.status == "skipped" or (t.status in _FAILED and _NO_MODULE.search(t.message))
    ]


_FAILED = ("failed", "error")
# A test that fails (not skips) for want of a module: what a distribution added for a skip
# may still lack (dask added for `requires dask`, then `No module named 'toolz'`: the array
# extra's dependency). Only this phrase is read from a failure's message.
_NO_MODULE = re.compile(r"No module named '?[A-Za-z_][\w.]*'?")


def complete_env(task: Task, tr: TestRun, ctx: BaseContext, *, is_base: bool = False) -> bool:
    """True when the environment of `tr` was completed with what the base's skip reasons
    name (run the tests again); `is_base`: `tr` is the unpatched base's own run."""
    if tr.ecosystem != "python":
        return False  # what skip reasons name are Python distributions
    skipped = skipped_ids(task, tr)
    if not skipped or tr.env_key is None:
        return False
    if is_base and all(t in tr.outcomes for t in skipped):
        at_base = {t: _reason(tr.outcomes[t].status, tr.outcomes[t].message) for t in skipped}
    else:  # ids matched by prefix, or a submission's run: the base's own run says
        at_base = _base_skips(task, tr, ctx, skipped)
    reasons = [message for message in at_base.values() if message]
    if not at_base:
        return False
    scratch = ctx.work_dir / f"complete-{task.instance_id}-{uuid.uuid4().hex[:8]}"
    try:
        workspace, env = workspace_and_env(task, ctx, scratch)
        if env.key != tr.env_key:
            return True  # the spec's environment was completed meanwhile
        minor = ".".join(env.interpreter.split(".")[:2])
        site = env.path / "lib" / f"python{minor}" / "site-packages"
        for test_id in at_base:  # the markers, where the reason does not name the module
            source = safefs.read_beneath(workspace, test_id.split("::")[0], MAX_TEST_FILE)
            if source is not None:
                reasons += marker_reasons(source.decode(errors="replace"), test_id)
        modules = wanted_modules(reasons, site, own_roots(workspace))
        if not modules:
            return False
        log.info("%s: the base skips tests for want of %s", task.instance_id, ", ".join(modules))
        return ctx.envs.complete(env, modules, workspace)
    finally:
        safefs.remove_tree(scratch)


def _base_skips(task: Task, tr: TestRun, ctx: BaseContext, skipped: list[str]) -> dict[str, str]:
    """Of `skipped`, the ids the unpatched base skips too, with the base's reason."""
    base = base_run(task, ctx, tr.env_key, tr.services, tr.framework)
    return {
        test_id: _reason(found[0], found[1])
        for test_id in skipped
        if (found := base.outcomes.get(test_id)) is not None
        and (found[0] == "skipped" or (found[0] in _FAILED and _NO_MODULE.search(found[1])))
    }


def _reason(status: str, message: str) -> str:
    if status == "skipped":
        return message
    found = _NO_MODULE.search(message)
    return found.group(0) if found else ""
