"""Mocha: the project's own mocha and command line, started by the harness's launcher
(`mocha_launcher.js`), which hears every test's end from mocha's runner and sends the results,
signed, through the result channel; mocha's spec reporter writes the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.results import JsResults
from swebounty.node.runner import installed_package, runner_entry
from swebounty.node.runners.cases import cases_of


class Mocha:
    name = "mocha"

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
        package, _ = installed_package(workspace, ("mocha",), package_dir, "mocha")
        entry, version = runner_entry(workspace, "mocha", package_dir)
        major = version.split(".", 1)[0]
        argv = [str(node), *call.node_flags, str(tools / "mocha_launcher.js"), str(package),
                str(entry), *call.flags, "--reporter", "spec"]  # fmt: skip
        if major.isdigit() and int(major) >= 4:
            argv.append("--exit")  # an open handle must not hang the run until the timeout
        return argv + (files if files else call.paths)
