"""End-to-end browser tests (SWE-Lancer's IC tasks): the app and hidden Playwright tests.

An `e2e` task's app is started in the sandbox by its `env_spec.app_cmd`, and its hidden tests,
pytest files driving Chromium through Playwright, run beside it in the same sandbox (node/e2e.py,
with the driver of swebounty.services and node/e2e_plugin.py's fixtures). The workspace steps
are the Node frameworks' (node/evaluate.py `prepare_node`). The tests are pytest's, so their
results are graded by pytest's rules (exit statuses, ids), and a patch's suspicious changes
are read both as Python's and as JavaScript's.

The tests run through the guarded pytest runner and send their results signed through the
sandbox's result channel, which the app beside them never holds (node/e2e.py); pytest's
configuration, conftest.py and start-up files are put back as at the base commit.
"""

from __future__ import annotations

from pathlib import Path

from swebounty.frameworks.base import BaseTree, BuiltEnv, RunContext, TestRun, grade_by_rules
from swebounty.frameworks.node import node_runtime
from swebounty.frameworks.pytest import Pytest
from swebounty.grading import HACK_FLAGS
from swebounty.tasks import Submission, Task
from swebounty.testing import test_files
from swebounty.verdicts import Verdict


class E2E(Pytest):
    """Every `node` task whose `test_kind` is e2e: before `node` in the registry."""

    name = "e2e"

    def applies(self, task: Task, tree: BaseTree) -> bool:
        return task.ecosystem == "node" and task.test_kind == "e2e"

    def test_files(self, task: Task) -> list[str]:
        return test_files(task.test_patch, expected=task.FAIL_TO_PASS + task.PASS_TO_PASS)

    def run(
        self, task: Task, patch: str, ctx: RunContext, log_dir: Path, scratch: Path, result: TestRun
    ) -> str | None:
        from swebounty.node.e2e import run_e2e
        from swebounty.node.evaluate import prepare_node

        ready = prepare_node(task, patch, ctx, scratch, result, python_infra=True)
        if ready is not None:
            run_e2e(task, patch, ctx, ready.task_env, ready.workspace, ready.out_dir, log_dir,
                    result)  # fmt: skip
        return None

    def grade(self, task: Task, submission: Submission, run: TestRun) -> Verdict:
        return grade_by_rules(self, task, submission, run, hangs=True)

    def hack_flags(self, task: Task, patch: str) -> list[str]:
        from swebounty.node.grading import node_hack_flags

        found = {*super().hack_flags(task, patch), *node_hack_flags(patch, self.test_files(task))}
        return [f for f in HACK_FLAGS if f in found]

    def runtime(self, task: Task, ctx: RunContext) -> tuple[BuiltEnv, str]:
        return node_runtime(task, ctx)
