"""JavaScript/TypeScript tests (Jest, Vitest, Mocha) and Playwright browser tests: node/.

The Node evaluation path (node/evaluate.py: workspace, Node environment, patches, the runner's
configuration put back as at the base commit, structured results) and its grading
(node/grading.py), behind the framework protocol.
"""

from __future__ import annotations

from pathlib import Path

from swebounty.frameworks.base import BaseTree, BuiltEnv, RunContext, TestRun
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict


class Node:
    """Every task of the `node` ecosystem: its unit tests, or its e2e browser tests."""

    name = "node"

    def applies(self, task: Task, tree: BaseTree) -> bool:
        return task.ecosystem == "node"

    def test_files(self, task: Task) -> list[str]:
        if task.test_kind == "e2e":  # the hidden browser tests are pytest files
            from swebounty.testing import test_files

            return test_files(task.test_patch, expected=task.FAIL_TO_PASS + task.PASS_TO_PASS)
        from swebounty.node.evaluate import js_test_files

        return js_test_files(task.test_patch)

    def run(
        self, task: Task, patch: str, ctx: RunContext, log_dir: Path, scratch: Path, result: TestRun
    ) -> str | None:
        from swebounty.node.evaluate import run_node_tests

        run_node_tests(task, patch, ctx, log_dir, scratch, result)
        return None

    def grade(self, task: Task, submission: Submission, run: TestRun) -> Verdict:
        from swebounty.node.grading import grade_node

        verdict = grade_node(task, submission, run)
        if run.timed_out and not submission.is_empty and "hangs_tests" not in verdict.hack_flags:
            verdict.hack_flags.append("hangs_tests")
        return verdict

    def runtime(self, task: Task, ctx: RunContext) -> tuple[BuiltEnv, str]:
        from swebounty.node.evaluate import build_node_env

        env = build_node_env(task, ctx)
        return env, f"node {env.node_version}"
