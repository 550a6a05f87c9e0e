"""Test runners behind one small protocol, beside Jest, Vitest and Mocha (`node/runner.py`).

A `JsRunner` knows its packages in `node_modules` (none for node's own), the argv that runs
some test files (or the project's whole suite) with a reporter of the harness's own that
writes every test's result to a file in a directory the harness owns, and how to read that
file. The reporters are files of this package (`tools_dir` copies them to a place the
sandbox user can read, mounted read-only): `jasmine_launcher.js` runs the project's own
Jasmine with one reporter more, `node_test_reporter.mjs` is a `--test-reporter` module.
A new runner is a new module here and one entry in `RUNNERS`.
"""

from __future__ import annotations

import hashlib
import shutil
from importlib import resources
from pathlib import Path
from typing import Protocol

from swebounty.envs.node_scripts import RunnerCall
from swebounty.node.results import JsResults
from swebounty.node.runners.jasmine import Jasmine
from swebounty.node.runners.nodetest import NodeTest

_TOOLS = ("jasmine_launcher.js", "node_test_reporter.mjs")


class JsRunner(Protocol):
    name: str
    result_file: str

    def argv(
        self,
        node: Path,
        workspace: Path,
        call: RunnerCall,
        files: list[str] | None,
        out: Path,
        tools: Path,
        package_dir: str,
    ) -> list[str]:
        """The command that runs `files` (None: the call's own suite) writing results to
        `out`; `tools`: where the reporters are. Raises RunnerError when not installed."""
        ...

    def parse(self, path: Path, base: Path) -> JsResults:
        """The results the run wrote at `path`, files named relative to `base`."""
        ...


RUNNERS: dict[str, JsRunner] = {r.name: r for r in (Jasmine(), NodeTest())}


def tools_dir(cache_dir: Path) -> Path:
    """The reporters, copied once per version to `cache_dir` (world-readable)."""
    texts = {n: resources.files(__name__).joinpath(n).read_text(encoding="utf-8") for n in _TOOLS}
    digest = hashlib.sha256("\0".join(texts.values()).encode()).hexdigest()[:12]
    dest = cache_dir / "node" / "js-runner-tools" / digest
    if not all((dest / name).is_file() for name in _TOOLS):
        tmp = dest.with_name(f".{digest}.{id(texts)}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, text in texts.items():
            (tmp / name).write_text(text, encoding="utf-8")
            (tmp / name).chmod(0o644)
        tmp.chmod(0o755)
        try:
            tmp.rename(dest)
        except OSError:  # another worker got there first
            shutil.rmtree(tmp, ignore_errors=True)
    return dest
