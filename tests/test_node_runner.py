"""Which runner a test run starts: the package's own before the root's, by its real path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.runner import RunnerError, command, runner_entry


def _jest(modules: Path, version: str) -> Path:
    pkg = modules / "jest"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "bin" / "jest.js").write_text("")
    (pkg / "package.json").write_text(json.dumps({"version": version, "bin": "./bin/jest.js"}))
    return pkg


def test_a_package_s_own_runner_comes_first_by_its_real_path(tmp_path: Path) -> None:
    env = tmp_path / "env"
    root_jest = _jest(env / "node_modules", "29.7.0")
    own_jest = _jest(env / "nested" / "node_modules", "27.5.1")
    ws = tmp_path / "ws"
    (ws / "node_modules").mkdir(parents=True)
    (ws / "node_modules" / "jest").symlink_to(root_jest)
    (ws / "packages" / "old" / "node_modules").mkdir(parents=True)
    (ws / "packages" / "old" / "node_modules" / "jest").symlink_to(own_jest)

    entry, version = runner_entry(ws, "jest")
    assert (entry, version) == (root_jest / "bin" / "jest.js", "29.7.0")
    entry, version = runner_entry(ws, "jest", "packages/old")
    assert (entry, version) == (own_jest / "bin" / "jest.js", "27.5.1")
    assert runner_entry(ws, "jest", "packages/new")[1] == "29.7.0"  # none of its own: the root's

    argv = command(
        Path("/node"), ws, RunnerCall(runner="jest"), ["src/a.test.ts"], tmp_path, "packages/old"
    )
    assert argv[1] == str(own_jest / "bin" / "jest.js") and argv[-2:] == ["--", "src/a.test.ts"]
    with pytest.raises(RunnerError, match="vitest is not installed"):
        runner_entry(ws, "vitest", "packages/old")
