"""Jest 21 and later (the first with `--reporters`): the project's own jest and command line,
with the harness's reporter (`jest_reporter.js`) beside Jest's default one. The reporter runs in
Jest's parent process, built before any test runs, and sends the results signed through the
result channel in the shape of Jest's `--json` report (read by `results.jest_results`); its
guard (`jest_guard.js`, preloaded) fails a test file whose tests' assertion machinery the code
under test replaced, which the reporter sends as tampering. Older
Jest writes its `--json` report to a file (`node/runner.py`)."""

from __future__ import annotations

from pathlib import Path

from swebounty.node.runner import runner_entry
from swebounty.node.runners.base import Invocation, JestShapedReporting

FIRST_WITH_REPORTERS = 21


class Jest(JestShapedReporting):
    name = "jest"
    label = "Jest"

    def takes(self, workspace: Path, package_dir: str) -> bool:
        """Whether the installed jest has `--reporters` (else its results come from a file)."""
        _, version = runner_entry(workspace, "jest", package_dir)
        major = version.split(".", 1)[0]
        return major.isdigit() and int(major) >= FIRST_WITH_REPORTERS

    def argv(self, inv: Invocation) -> list[str]:
        entry, _ = runner_entry(inv.workspace, "jest", inv.package_dir)
        guard = inv.tools / "jest_guard.js"  # in Jest's process and its workers (their execArgv)
        argv = [str(inv.node), *inv.call.node_flags, "--require", str(guard), str(entry)]
        argv += [*inv.call.flags, "--ci", "--forceExit"]
        argv += ["--reporters=default", f"--reporters={inv.tools / 'jest_reporter.js'}"]
        argv += ["--coverage=false", "--watchman=false", "--maxWorkers=2"]
        targets = inv.targets  # the script's own patterns when no files are asked for
        return argv + (["--", *targets] if targets else [])
