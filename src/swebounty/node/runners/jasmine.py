"""Jasmine: the project's own `jasmine` package, run by the harness's launcher with one reporter
more (`jasmine_launcher.js`, which sends the results signed through the result channel), its
configuration file the one the project's script names."""

from __future__ import annotations

from swebounty.node.runner import RunnerError, installed_package
from swebounty.node.runners.base import CaseReporting, Invocation


class Jasmine(CaseReporting):
    name = "jasmine"

    def argv(self, inv: Invocation) -> list[str]:
        package, _ = installed_package(inv.workspace, ("jasmine",), inv.package_dir, "jasmine")
        flags = inv.call.flags
        config = ""
        for i, flag in enumerate(flags):
            if flag.startswith("--config="):
                config = flag.split("=", 1)[1]
            elif flag == "--config" and i + 1 < len(flags):
                config = flags[i + 1]
        if config and not (inv.workspace / inv.package_dir / config).is_file():
            raise RunnerError(f"jasmine's configuration {config!r} is not in the workspace")
        launcher = inv.tools / "jasmine_launcher.js"
        return [str(inv.node), *inv.call.node_flags, str(launcher), str(package), config,
                *inv.targets]  # fmt: skip
