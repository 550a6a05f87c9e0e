"""sympy's own test runner: `bin/test`, which runs `sympy/utilities/runtests.py`'s SymPyTests.

SWE-bench runs sympy's tests as `bin/test -C --verbose FILES`. swebounty runs them under pytest
(pytest.py) wherever that works, which is everywhere but before 2016-10-11: until PR #11710
(6ff2372, "Improve pytest compatibility: add raises") sympy/utilities/pytest.py defined no
`raises` when sympy's conftest.py says pytest is running, so every test module that imports it
fails under pytest. This framework never applies by itself: the overrides file pins it for
sympy's commits of that era (envs/overrides.toml), so no other task changes how it runs.

The run is `python bin/test --no-cache --verbose --no-subprocess FILES` (`-C` is --no-cache;
each option only when the base's bin/test has it; one process, so the guard sees every test:
the subprocess SWE-bench's run starts only sets a hash seed), from the workspace's root,
through the unittest framework's steps (unittest.run_program) with its own guarded runner
(pytest_guard/run_sympy.py, sympy_guard.py, sympy_modules.py: the runner's module and its test
helpers are loaded from the base's bytes, and each result is recorded as the runner's own code
reported it). The runner's files are the base commit's: bin/test, the bin/ modules it imports
(get_sympy.py), the runner module and its test helpers (sympy/utilities/pytest.py: raises,
XFAIL, slow, SKIP); a submission that changes them has them put back (`test_infra_reverted`)
and is flagged `modifies_test_config`.

Records are named `file::function` (the function's own code name); SWE-bench's bare function
names (`test_ccode_Relational`) are matched onto them by testids.py, and a module that failed to
import is an error of its file (`uncollected`, as limitations.py reads it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath

from swebounty.frameworks.base import BaseTree, BuiltEnv, RunContext, TestRun
from swebounty.frameworks.python import python_runtime
from swebounty.frameworks.unittest import (
    UnittestRules,
    disagreement,
    received,
    run_program,
    with_runner,
)
from swebounty.pytest_guard import GUARD_DIR, GuardResult
from swebounty.tasks import Task
from swebounty.testids import match_results
from swebounty.testing import MESSAGE_CHARS, TestOutcome, test_files
from swebounty.unittestids import outcomes_of

SCRIPT = "bin/test"
SYMPY_RUNNER = GUARD_DIR / "run_sympy.py"
_RUNNER_MODULE = re.compile(r"^(\w+)/utilities/runtests\.py$")
_RUNNER_API = (b"class SymPyTests", b"def test_file", b"class PyTestReporter")
_IMPORTS = re.compile(rb"^\s*(?:from\s+(\w+)\s+import|import\s+(\w+))", re.MULTILINE)
_TEST_FILE = "test_*.py"  # what the runner collects (SymPyTests.get_test_files)
_OPTIONS = (b"--no-cache", b"--verbose", b"--no-subprocess")


@dataclass(frozen=True)
class Runner:
    """sympy's runner as the base commit has it."""

    script: str  # bin/test
    module: str  # sympy.utilities.runtests
    module_file: str  # sympy/utilities/runtests.py
    files: tuple[str, ...]  # every file the runner is made of (reverted, pinned)
    options: tuple[str, ...]
    helpers: tuple[tuple[str, str], ...] = ()  # (module, file) of its test helpers


class Sympy(UnittestRules):
    """`bin/test` where the overrides file pins it (module docstring)."""

    name = "sympy"

    def applies(self, task: Task, tree: BaseTree) -> bool:
        return False  # only where the overrides file pins it: pytest runs sympy elsewhere

    def test_files(self, task: Task) -> list[str]:
        found = test_files(task.test_patch, expected=task.FAIL_TO_PASS + task.PASS_TO_PASS)
        return [f for f in found if fnmatch(PurePosixPath(f).name, _TEST_FILE)]

    def match(
        self, expected: list[str], outcomes: dict[str, TestOutcome]
    ) -> dict[str, TestOutcome]:
        return match_results(expected, outcomes)

    def run(
        self, task: Task, patch: str, ctx: RunContext, log_dir: Path, scratch: Path, result: TestRun
    ) -> str | None:
        runner = runner_of(BaseTree(task, ctx.repos_dir, ctx.cache_dir))
        if runner is None:
            result.error = (
                "the base commit has no sympy runner (bin/test and */utilities/runtests.py)"
            )
            return None
        own = list(runner.files)

        def extra_infra(workspace: Path, touched: list[str]) -> list[str]:
            if set(own) & set(touched):
                result.flags.append("modifies_test_config")
            return own

        program = {"script": runner.script, "runner_module": runner.module,
                   "runner_file": runner.module_file, "helper_modules": dict(runner.helpers),
                   "tests": result.test_files}  # fmt: skip
        labels = {f: f for f in result.test_files}
        task = with_runner(task, ["python", runner.script])
        with ctx.lease() as sandbox:
            return run_program(task, patch, ctx, sandbox, log_dir, scratch, result, program,
                               list(runner.options), labels, extra_infra, runner=SYMPY_RUNNER,
                               reader=read_results, pinned=own)  # fmt: skip

    def runtime(self, task: Task, ctx: RunContext) -> tuple[BuiltEnv, str]:
        return python_runtime(with_runner(task, ["python", SCRIPT]), ctx)


def runner_of(tree: BaseTree) -> Runner | None:
    """The base commit's sympy runner: bin/test, and the one `PKG/utilities/runtests.py` with
    SymPyTests and PyTestReporter; None when it has none."""
    script = tree.read(SCRIPT)
    modules = [f for f in sorted(tree.files()) if _RUNNER_MODULE.match(f)]
    found = [(f, tree.read(f)) for f in modules]
    api = [f for f, data in found if data is not None and all(a in data for a in _RUNNER_API)]
    if script is None or len(api) != 1:
        return None
    module_file = api[0]
    helpers = str(PurePosixPath(module_file).with_name("pytest.py"))
    bin_modules = [f"bin/{m.decode()}.py" for pair in _IMPORTS.findall(script) for m in pair if m]
    files = [SCRIPT, *bin_modules, module_file, helpers]
    return Runner(
        script=SCRIPT,
        module=_module(module_file),
        module_file=module_file,
        files=tuple(dict.fromkeys(f for f in files if tree.exists(f))),
        options=tuple(o.decode() for o in _OPTIONS if o in script),
        helpers=((_module(helpers), helpers),) if tree.exists(helpers) else (),
    )


def _module(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def read_results(
    task: Task,
    guard: GuardResult | None,
    result: TestRun,
    timeout_s: float,
    labels: Mapping[str, str],
) -> str | None:
    """Fill `result` from the sympy guard's records; why the run gave no usable results."""
    guard, why = received(guard, result, timeout_s)
    if guard is None:
        return why
    result.outcomes = outcomes_of(guard.tests)
    imports = {k: (r.get("message") or "").strip() for k, r in guard.tests.items()
               if r.get("kind") == "import"}  # fmt: skip
    result.uncollected = {
        k: m.splitlines()[-1][:MESSAGE_CHARS] if m else "" for k, m in imports.items()
    }
    if result.timed_out:
        return f"tests timed out after {timeout_s:.0f} s"
    return disagreement(guard.exitstatus, result.outcomes)
