"""Jasmine: the project's own `jasmine` package, run by the harness's launcher with one reporter
more (`jasmine_launcher.js`), its configuration file the one the project's script names."""

from __future__ import annotations

from pathlib import Path

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.results import JsResults
from swebounty.node.runner import RunnerError, installed_package
from swebounty.node.runners.cases import parse_cases


class Jasmine:
    name = "jasmine"
    result_file = "jasmine.json"

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
        package, _ = installed_package(workspace, ("jasmine",), package_dir, "jasmine")
        config = ""
        for i, flag in enumerate(call.flags):
            if flag.startswith("--config="):
                config = flag.split("=", 1)[1]
            elif flag == "--config" and i + 1 < len(call.flags):
                config = call.flags[i + 1]
        if config and not (workspace / package_dir / config).is_file():
            raise RunnerError(f"jasmine's configuration {config!r} is not in the workspace")
        targets = files if files else call.paths
        launcher = tools / "jasmine_launcher.js"
        return [str(node), *call.node_flags, str(launcher), str(package), str(out), config,
                *targets]  # fmt: skip

    def parse(self, path: Path, base: Path) -> JsResults:
        return parse_cases(path, base, json_lines=False)
