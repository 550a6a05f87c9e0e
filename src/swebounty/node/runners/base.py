"""What the channel runners share: the call they are asked to start (`Invocation`), and how the
two shapes of message their reporters send are read (`CaseReporting`: Mocha's, Jasmine's and
node's own launchers and reporters; `JestShapedReporting`: Jest's and Vitest's)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.results import JsResults, jest_results
from swebounty.node.runners.cases import cases_of


@dataclass(frozen=True)
class Invocation:
    """One call of a project's test script to start: `node` runs it in `workspace` (the
    package's directory `package_dir` in it), on `files` (None: the call's own suite), with the
    harness's reporters found in `tools`."""

    node: Path
    workspace: Path
    call: RunnerCall
    files: list[str] | None
    tools: Path
    package_dir: str

    @property
    def targets(self) -> list[str]:
        """The test files to run: the ones asked for, else the paths the script names."""
        return self.files if self.files else self.call.paths


class CaseReporting:
    """A runner whose reporter sends `{cases, errors, tampered}` (cases.py), whatever version
    of it is installed."""

    def takes(self, workspace: Path, package_dir: str) -> bool:
        return True

    def results(self, doc: dict[str, Any], base: Path) -> JsResults:
        return cases_of(doc, base)


class JestShapedReporting:
    """A runner whose reporter sends the shape of Jest's `--json` report (`jest_results`)."""

    label = "Jest"

    def results(self, doc: dict[str, Any], base: Path) -> JsResults:
        return jest_results(doc, base, f"the harness's {self.label} reporter's message")
