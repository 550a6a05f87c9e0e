"""django's test runner: a repository's own `runtests.py` that runs its tests with django's.

Applies when the base commit has a runner script (`tests/runtests.py`, or `runtests.py` at the
root, as django itself and many django apps have) whose code uses django's test runner
(`DiscoverRunner`, `get_runner`). The run is `python RUNNER --settings=S --parallel 1
--verbosity 2 LABELS`, each option only when the runner has it: the settings module the runner
itself defaults to (`DJANGO_SETTINGS_MODULE`, `test_sqlite` in django), one process (the
guard records results in the process it runs in), and the labels named from the test patch
relative to the runner's folder (`tests/foo/tests.py` -> `foo.tests`).

The runner and the settings module are the base commit's: a submission that changes them has
them put back (`test_infra_reverted`) and is flagged `modifies_test_config`. The rest of the
run, and how SWE-bench's ids (`test_x (foo.tests.Class)`, `foo.tests.Class.test_x`, docstring
first lines) are matched, is unittest.py's: django's runner is built on unittest's result
object, which the guard watches.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from swebounty.frameworks.base import BaseTree, BuiltEnv, RunContext, TestRun
from swebounty.frameworks.python import python_runtime
from swebounty.frameworks.unittest import UnittestRules, module_name, run_program, with_runner
from swebounty.tasks import Task

RUNNERS = ("tests/runtests.py", "runtests.py")
_USES_DJANGO_RUNNER = re.compile(rb"\bDiscoverRunner\b|\bget_runner\s*\(")
_SETTINGS_DEFAULT = re.compile(
    rb"""(?:setdefault\(\s*|\[\s*)['"]DJANGO_SETTINGS_MODULE['"]\s*(?:,|\]\s*=)\s*['"]([\w.]+)['"]"""
)


class Django(UnittestRules):
    """A repository's own runtests.py that runs django's test runner."""

    name = "django"

    def applies(self, task: Task, tree: BaseTree) -> bool:
        return task.ecosystem == "python" and runner_of(tree) is not None

    def run(
        self, task: Task, patch: str, ctx: RunContext, log_dir: Path, scratch: Path, result: TestRun
    ) -> str | None:
        tree = BaseTree(task, ctx.repos_dir, ctx.cache_dir)
        found = runner_of(tree)
        if found is None:
            result.error = "the base commit has no runtests.py that uses django's test runner"
            return None
        runner, text = found
        root = str(PurePosixPath(runner).parent).removeprefix(".")
        settings = settings_module(text, root, tree)
        labels = {f: module_name(f, root) for f in result.test_files if _under(f, root)}
        if not labels:
            result.error = f"the task's test patch touches no test module under {root or '.'}/"
            return None
        own = [runner, *([settings_path(settings, root)] if settings else [])]

        def extra_infra(workspace: Path, touched: list[str]) -> list[str]:
            if set(own) & set(touched):
                result.flags.append("modifies_test_config")
            return own

        task = with_runner(task, ["python", runner])
        with ctx.lease() as sandbox:
            return run_program(task, patch, ctx, sandbox, log_dir, scratch, result,
                               {"script": runner}, options(text, settings), labels, extra_infra)  # fmt: skip

    def runtime(self, task: Task, ctx: RunContext) -> tuple[BuiltEnv, str]:
        found = runner_of(BaseTree(task, ctx.repos_dir, ctx.cache_dir))
        return python_runtime(with_runner(task, ["python", found[0]]) if found else task, ctx)


def runner_of(tree: BaseTree) -> tuple[str, bytes] | None:
    """The base commit's runner script and its text, if one uses django's test runner."""
    for path in RUNNERS:
        data = tree.read(path) if tree.exists(path) else None
        if data is not None and b"django" in data and _USES_DJANGO_RUNNER.search(data):
            return path, data
    return None


def settings_module(text: bytes, root: str, tree: BaseTree) -> str | None:
    """The settings module the runner defaults to, when it is a file beside the runner."""
    found = _SETTINGS_DEFAULT.search(text)
    if found is None:
        return None
    name = found.group(1).decode()
    return name if tree.exists(settings_path(name, root)) else None


def settings_path(module: str, root: str) -> str:
    rel = module.replace(".", "/") + ".py"
    return f"{root}/{rel}" if root else rel


def options(text: bytes, settings: str | None) -> list[str]:
    """The runner's options the harness relies on, each only if the runner defines it."""
    argv = []
    if settings and b"--settings" in text:
        argv.append(f"--settings={settings}")
    if b"--parallel" in text:
        argv += ["--parallel", "1"]
    if b"--verbosity" in text:
        argv += ["--verbosity", "2"]
    if b"--noinput" in text:
        argv.append("--noinput")
    return argv


def _under(path: str, root: str) -> bool:
    return not root or path.startswith(root + "/")
