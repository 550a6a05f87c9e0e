"""Node's built-in test runner (`node --test`): node itself, with the harness's reporter module
(`node_test_reporter.mjs`), which runs in the parent process (each test file runs in a child
of its own) and sends the results signed through the result channel; its guard
(`nodetest_guard.js`, preloaded in every test file's process) fails a file whose tests'
assertion machinery the code under test replaced, which the reporter sends as tampering."""

from __future__ import annotations

from swebounty.node.runners.base import CaseReporting, Invocation


class NodeTest(CaseReporting):
    name = "nodetest"

    def argv(self, inv: Invocation) -> list[str]:
        node, call, tools = inv.node, inv.call, inv.tools
        reporter = tools / "node_test_reporter.mjs"
        # The spec reporter writes the log; the harness's own writes nothing there (a file would
        # be fsync'ed: /dev/null refuses), its results go through the channel.
        guard = tools / "nodetest_guard.js"  # in each test file's process (the runner's execArgv)
        return [str(node), *call.node_flags, "--require", str(guard), *call.flags, "--test",
                "--test-reporter=spec", "--test-reporter-destination=stdout",
                f"--test-reporter={reporter}", "--test-reporter-destination=stderr",
                *inv.targets]  # fmt: skip
