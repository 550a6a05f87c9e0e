"""Vitest: the project's own vitest and command line, with the harness's reporter
(`vitest_reporter.mjs`) beside the default one. The reporter runs in Vitest's main process,
loaded before any test runs (the tests run in workers), and sends the results signed through
the result channel in the shape of Jest's `--json` report (read by `results.jest_results`);
it adds the harness's guard (`vitest_guard.mjs`) as the last setup file, which fails a test
file whose tests' assertion machinery the code under test replaced: sent as tampering."""

from __future__ import annotations

from pathlib import Path

from swebounty.node.runner import runner_entry
from swebounty.node.runners.base import Invocation, JestShapedReporting


class Vitest(JestShapedReporting):
    name = "vitest"
    label = "Vitest"

    def takes(self, workspace: Path, package_dir: str) -> bool:
        return True

    def argv(self, inv: Invocation) -> list[str]:
        entry, version = runner_entry(inv.workspace, "vitest", inv.package_dir)
        reporter = inv.tools / "vitest_reporter.mjs"
        argv = [str(inv.node), *inv.call.node_flags, str(entry), "run", *inv.call.flags,
                "--reporter=default", f"--reporter={reporter}", "--coverage.enabled=false"]  # fmt: skip
        major = version.split(".", 1)[0]
        if major.isdigit() and int(major) >= 1:
            # Its results cache goes in node_modules/.vite, the environment's, read-only here:
            # the failed write fails the run. (0.x has no --no-cache and refuses it.)
            argv.append("--no-cache")
        return argv + inv.targets
