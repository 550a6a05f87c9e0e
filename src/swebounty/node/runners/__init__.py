"""Test runners whose results come through the harness's signed result channel: Mocha, Jasmine,
node's own, Vitest and Jest 21+ (older Jest still writes a file: `node/runner.py`).

A `JsRunner` knows the argv that runs some test files (or the project's whole suite) with
reporting of the harness's own, which sends every test's result, signed with the run's key,
through the pipe the sandbox gives the run (`channel.js`: taken before anything of the
workspace runs, so the code under test can neither write nor sign a message of its own, and
what it replaced of the runner's machinery is reported). The reporters are files of this
package (`tools_dir` copies them to a place the sandbox user can read, mounted read-only):
`mocha_launcher.js` and `jasmine_launcher.js` start the project's own runner,
`node_test_reporter.mjs` is a `--test-reporter` module, `jest_reporter.js` one of Jest's
`--reporters`, `vitest_reporter.mjs` one of Vitest's. A new runner is a new module here and
one entry in `RUNNERS`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from swebounty.node.results import JsResults
from swebounty.node.runners.base import Invocation
from swebounty.node.runners.jasmine import Jasmine
from swebounty.node.runners.jest import Jest
from swebounty.node.runners.mocha import Mocha
from swebounty.node.runners.nodetest import NodeTest
from swebounty.node.runners.vitest import Vitest
from swebounty.node.tools import published

_TOOLS = ("channel.js", "assertions.js", "mocha_launcher.js", "jasmine_launcher.js",
          "node_test_reporter.mjs", "nodetest_guard.js", "jest_guard.js", "jest_reporter.js",
          "vitest_reporter.mjs", "vitest_guard.mjs")  # fmt: skip


class JsRunner(Protocol):
    name: str

    def takes(self, workspace: Path, package_dir: str) -> bool:
        """Whether the installed runner can report through the channel (RunnerError when it
        is not installed)."""
        ...

    def argv(self, inv: Invocation) -> list[str]:
        """The command that runs the invocation's test files, its results sent on the result
        channel. Raises RunnerError when its runner is not installed."""
        ...

    def results(self, doc: dict[str, Any], base: Path) -> JsResults:
        """The results in the message its reporter sent, files named relative to `base`."""
        ...


RUNNERS: dict[str, JsRunner] = {
    r.name: r for r in (Mocha(), Jasmine(), NodeTest(), Jest(), Vitest())
}


def tools_dir(cache_dir: Path) -> Path:
    """The reporters, copied once per version to `cache_dir` (world-readable)."""
    texts = {n: resources.files(__name__).joinpath(n).read_text(encoding="utf-8") for n in _TOOLS}
    return published(texts, cache_dir / "node" / "js-runner-tools")
