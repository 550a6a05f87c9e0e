"""Jasmine: the project's own `jasmine` package, run by the harness's launcher with one reporter
more (`jasmine_launcher.js`, which sends the results signed through the result channel), its
configuration file the one the project's script names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.results import JsResults
from swebounty.node.runner import RunnerError, installed_package
from swebounty.node.runners.cases import cases_of


class Jasmine:
    name = "jasmine"

    def takes(self, workspace: Path, package_dir: str) -> bool:
        return True

    def results(self, doc: dict[str, Any], base: Path) -> JsResults:
        return cases_of(doc, base)

    def argv(
        self,
        node: Path,
        workspace: Path,
        call: RunnerCall,
        files: list[str] | None,
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
        return [str(node), *call.node_flags, str(launcher), str(package), config, *targets]
