"""Mocha: the project's own mocha and command line, started by the harness's launcher
(`mocha_launcher.js`), which hears every test's end from mocha's runner and sends the results,
signed, through the result channel; mocha's spec reporter writes the log."""

from __future__ import annotations

from swebounty.node.runner import installed_package, runner_entry
from swebounty.node.runners.base import CaseReporting, Invocation


class Mocha(CaseReporting):
    name = "mocha"

    def argv(self, inv: Invocation) -> list[str]:
        package, _ = installed_package(inv.workspace, ("mocha",), inv.package_dir, "mocha")
        entry, version = runner_entry(inv.workspace, "mocha", inv.package_dir)
        major = version.split(".", 1)[0]
        argv = [str(inv.node), *inv.call.node_flags, str(inv.tools / "mocha_launcher.js"),
                str(package), str(entry), *inv.call.flags, "--reporter", "spec"]  # fmt: skip
        if major.isdigit() and int(major) >= 4:
            argv.append("--exit")  # an open handle must not hang the run until the timeout
        return argv + inv.targets
