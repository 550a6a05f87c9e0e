"""The argv that runs a JavaScript test suite with structured results, in the sandbox.

The runner and the flags are the project's own (its `test` script, see `project.py`); the
harness adds only what makes results structured and the run complete: no bail, no watch, no
coverage. This module finds each runner's entry point; the runners report through the signed
result channel (`runners/`), but for Jest before 21, which has no `--reporters`: `command`
runs it with `--ci --json --outputFile`. The runner's JavaScript entry point is run with the task's node
directly (no npm, no shell): nothing of the project's scripts runs besides its tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swebounty.envs.node_scripts import RunnerCall

RESULT_FILES = {"jest": "jest.json"}
_PACKAGES = {"jest": ("jest", "jest-cli"), "mocha": ("mocha",), "vitest": ("vitest",)}
_BINS = {"jest": ("jest",), "mocha": ("_mocha", "mocha"), "vitest": ("vitest",)}


class RunnerError(Exception):
    """The project's test runner is not installed: an environment problem."""


def _manifests(
    workspace: Path, packages: tuple[str, ...], package_dir: str
) -> list[tuple[Path, dict[str, Any]]]:
    """The installed package.json of each of `packages`: the workspace package's own first (a
    monorepo's package may pin another version), then the root's."""
    homes = [workspace / package_dir, workspace] if package_dir else [workspace]
    found = []
    for package, home in [(p, h) for h in homes for p in packages]:
        manifest = home / "node_modules" / package / "package.json"
        if manifest.is_file():
            data = json.loads(manifest.read_text(encoding="utf-8"))
            found.append((manifest, data if isinstance(data, dict) else {}))
    return found


def installed_package(
    workspace: Path, packages: tuple[str, ...], package_dir: str, runner: str
) -> tuple[Path, str]:
    """The real directory of the first of `packages` installed, and its version."""
    for manifest, data in _manifests(workspace, packages, package_dir):
        return manifest.parent.resolve(), str(data.get("version", "0"))
    raise RunnerError(
        f"{runner} is not installed in the environment's node_modules; the project's "
        "dependencies do not provide its test runner"
    )


def runner_entry(workspace: Path, runner: str, package_dir: str = "") -> tuple[Path, str]:
    """The runner's JavaScript entry point in `node_modules` and its version."""
    for manifest, data in _manifests(workspace, _PACKAGES[runner], package_dir):
        bins = data.get("bin")
        if isinstance(bins, str):
            bins = {manifest.parent.name: bins}
        for name in _BINS[runner]:
            if isinstance(bins, dict) and name in bins:
                # Its real path (node runs that anyway): a run that re-points the link does
                # not change what a later run starts.
                return (manifest.parent / bins[name]).resolve(), str(data.get("version", "0"))
    raise RunnerError(
        f"{runner} is not installed in the environment's node_modules; the project's "
        "dependencies do not provide its test runner"
    )


def command(
    node: Path,
    workspace: Path,
    call: RunnerCall,
    files: list[str] | None,
    out_dir: Path,
    package_dir: str = "",
) -> list[str]:
    """argv for one run; `files` None runs the whole suite as the project's script does.
    `package_dir`: the workspace package whose runner this is (files relative to it)."""
    entry, _ = runner_entry(workspace, call.runner, package_dir)
    if call.runner not in RESULT_FILES:
        raise RunnerError(f"{call.runner} reports through the result channel (node/runners/)")
    out = out_dir / RESULT_FILES[call.runner]
    argv = [str(node), *call.node_flags, str(entry)]
    argv += [*call.flags, "--ci", "--json", f"--outputFile={out}", "--forceExit"]
    argv += ["--coverage=false", "--watchman=false", "--maxWorkers=2"]
    targets = files if files else call.paths  # the script's own patterns otherwise
    return argv + (["--", *targets] if targets else [])
