"""One runner call's command and results, by runner: a runner of `runners/` (Mocha, Jasmine,
node's own, Vitest, Jest 21+), whose reporting sends its results signed through the result
channel, or Jest before 21, which still writes a file in the run's output directory
(`runner.py`)."""

from __future__ import annotations

from pathlib import Path

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.results import JsResults, parse_jest
from swebounty.node.runner import RESULT_FILES, command
from swebounty.node.runners import RUNNERS
from swebounty.node.runners.base import Invocation
from swebounty.node.runners.cases import tampered
from swebounty.pytest_guard import ChannelTampered, read_signed
from swebounty.sandbox.base import RunResult


def argv_for(
    node: Path,
    workspace: Path,
    call: RunnerCall,
    files: list[str] | None,
    run_dir: Path,
    package_dir: str,
    tools: Path,
) -> tuple[list[str], bool]:
    """The command of one call, and whether its results come through the result channel
    (else a file in `run_dir`). RunnerError when its runner is not installed."""
    runner = RUNNERS.get(call.runner)
    if runner is not None and runner.takes(workspace, package_dir):
        inv = Invocation(node, workspace, call, files, tools, package_dir)
        return runner.argv(inv), True
    return command(node, workspace, call, files, run_dir, package_dir), False


def results_of(
    call: RunnerCall, run: RunResult, key: bytes, signed: bool, run_dir: Path, base: Path
) -> tuple[JsResults | None, list[str]]:
    """(what the call's reporter reported, None when nothing; what it saw tampered with, or
    why the channel cannot be trusted). Raises JUnitError when the results are unusable."""
    if signed:
        try:
            doc = read_signed(run.channel, key, run.channel_truncated)
        except ChannelTampered as exc:
            return None, [str(exc)]
        if doc is None:
            return None, []
        return RUNNERS[call.runner].results(doc, base), tampered(doc)
    return parse_jest(run_dir / RESULT_FILES[call.runner], base), []
