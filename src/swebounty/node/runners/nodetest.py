"""Node's built-in test runner (`node --test`): node itself, with the harness's reporter module
(`node_test_reporter.mjs`) writing to a file the harness owns."""

from __future__ import annotations

from pathlib import Path

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.results import JsResults
from swebounty.node.runners.cases import parse_cases


class NodeTest:
    name = "nodetest"
    result_file = "node-test.jsonl"

    def argv(
        self,
        node: Path,
        workspace: Path,
        call: RunnerCall,
        files: list[str] | None,
        out: Path,
        tools: Path,
        package_dir: str,
    ) -> list[str]:
        reporter = tools / "node_test_reporter.mjs"
        targets = files if files else call.paths
        return [str(node), *call.node_flags, *call.flags, "--test",
                f"--test-reporter={reporter}", f"--test-reporter-destination={out}",
                *targets]  # fmt: skip

    def parse(self, path: Path, base: Path) -> JsResults:
        return parse_cases(path, base, json_lines=True)
