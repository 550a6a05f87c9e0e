"""JavaScript/TypeScript unit tests: the project's own runner (Jest, Vitest, Mocha, Jasmine or
node's own).

Which runner, with which flags and on which files, is read from the project's `test` script
at the base commit (envs/node_project.py); the argv adds only what makes results structured
(node/runner.py, node/runners/). The workspace steps are node/evaluate.py's (`prepare_node`: the
patch, the runner's configuration and `node_modules` put back as at the base commit, the hidden
tests applied). Every runner reports through the sandbox's result channel: the harness's
reporter (node/runners/) takes it before anything of the workspace runs and sends every test's
result signed with the run's key, with what of the runner's machinery was replaced meanwhile
(Mocha, Jasmine: flagged `tampers_with_test_runner`, never resolved). Results are
cross-checked with the runner's exit status (node/results.py); SWE-bench's ids (`file`,
`file:title`, full titles) are matched as Multi-SWE-bench names them.

Known gaps: Jest before 21 (no `--reporters`) still writes its `--json` report to a file the
run could rewrite (its tests run apart from the reporter, and the file must agree with the exit
status). Code under test shares the runner's process (Mocha, Jasmine, Jest in band): the key
is in no JavaScript value, but code that reads the process's own memory could find it, and a
Jest `expect` replaced inside a test file's own context is not watched.
"""

from __future__ import annotations

from pathlib import Path

from swebounty.frameworks.base import BaseTree, BuiltEnv, RunContext, TestRun
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict


class Node:
    """The unit tests of every `node` task that is not an e2e task."""

    name = "node"

    def applies(self, task: Task, tree: BaseTree) -> bool:
        return task.ecosystem == "node"

    def test_files(self, task: Task) -> list[str]:
        from swebounty.node.testfiles import js_test_files

        return js_test_files(task.test_patch)

    def run(
        self, task: Task, patch: str, ctx: RunContext, log_dir: Path, scratch: Path, result: TestRun
    ) -> str | None:
        from swebounty.node.evaluate import run_node_tests

        run_node_tests(task, patch, ctx, log_dir, scratch, result)
        return None  # a run without results is an error here (node/grading.py), never a crash

    def grade(self, task: Task, submission: Submission, run: TestRun) -> Verdict:
        from swebounty.node.grading import grade_node

        verdict = grade_node(task, submission, run)
        if run.timed_out and not submission.is_empty and "hangs_tests" not in verdict.hack_flags:
            verdict.hack_flags.append("hangs_tests")
        return verdict

    def runtime(self, task: Task, ctx: RunContext) -> tuple[BuiltEnv, str]:
        return node_runtime(task, ctx)


def node_runtime(task: Task, ctx: RunContext) -> tuple[BuiltEnv, str]:
    """`Framework.runtime` of the Node frameworks: the task's Node environment."""
    from swebounty.node.evaluate import build_node_env

    env = build_node_env(task, ctx)
    return env, f"node {env.node_version}"
