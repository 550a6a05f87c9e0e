"""One runner call's command and results, by runner: Jest, Vitest and Mocha (`runner.py`,
`results.py`), or a runner of `runners/` (Jasmine, node's own)."""

from __future__ import annotations

from pathlib import Path

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.results import JsResults, parse_jest, parse_junit_js
from swebounty.node.runner import RESULT_FILES, command
from swebounty.node.runners import RUNNERS


def argv_for(
    node: Path,
    workspace: Path,
    call: RunnerCall,
    files: list[str] | None,
    run_dir: Path,
    package_dir: str,
    tools: Path,
) -> list[str]:
    """The command of one call (RunnerError when its runner is not installed)."""
    runner = RUNNERS.get(call.runner)
    if runner is None:
        return command(node, workspace, call, files, run_dir, package_dir)
    out = run_dir / runner.result_file
    return runner.argv(node, workspace, call, files, out, tools, package_dir)


def results_of(call: RunnerCall, run_dir: Path, base: Path) -> JsResults:
    """What the call's reporter wrote in `run_dir` (JUnitError when it wrote nothing usable)."""
    runner = RUNNERS.get(call.runner)
    if runner is not None:
        return runner.parse(run_dir / runner.result_file, base)
    path = run_dir / RESULT_FILES[call.runner]
    return (
        parse_jest(path, base) if call.runner == "jest" else parse_junit_js(path, base, call.runner)
    )
