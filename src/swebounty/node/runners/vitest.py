"""Vitest: the project's own vitest and command line, with the harness's reporter
(`vitest_reporter.mjs`) beside the default one. The reporter runs in Vitest's main process,
loaded before any test runs (the tests run in workers), and sends the results signed through
the result channel in the shape of Jest's `--json` report (read by `results.jest_results`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.results import JsResults, jest_results
from swebounty.node.runner import runner_entry


class Vitest:
    name = "vitest"

    def takes(self, workspace: Path, package_dir: str) -> bool:
        return True

    def results(self, doc: dict[str, Any], base: Path) -> JsResults:
        return jest_results(doc, base, "the harness's Vitest reporter's message")

    def argv(
        self,
        node: Path,
        workspace: Path,
        call: RunnerCall,
        files: list[str] | None,
        tools: Path,
        package_dir: str,
    ) -> list[str]:
        entry, version = runner_entry(workspace, "vitest", package_dir)
        reporter = tools / "vitest_reporter.mjs"
        argv = [str(node), *call.node_flags, str(entry), "run", *call.flags,
                "--reporter=default", f"--reporter={reporter}", "--coverage.enabled=false"]  # fmt: skip
        major = version.split(".", 1)[0]
        if major.isdigit() and int(major) >= 1:
            # Its results cache goes in node_modules/.vite, the environment's, read-only here:
            # the failed write fails the run. (0.x has no --no-cache and refuses it.)
            argv.append("--no-cache")
        return argv + (files or call.paths)
