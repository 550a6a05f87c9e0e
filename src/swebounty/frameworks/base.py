"""The test-framework protocol: what the evaluation path asks of pytest, jest, django's runner...

A `Framework` owns everything that differs between test runners; the evaluation path
(testrun.py, runs.py, grading.py) only asks the registry (`frameworks/__init__.py`) which one a
task's tests run under, and then asks that one. A framework says:

- `applies`: whether it runs a task's tests, from the task's fields and the repository at the
  base commit (`BaseTree`, read with git, no checkout);
- `test_files`: which files of the test patch it runs (also what validation checks);
- `run`: the whole sandboxed step of one attempt: a fresh workspace at the base commit, the
  submission's patch, its own test infrastructure (runner, settings, configuration) put back
  as at the base commit (`test_infra_reverted`), the hidden tests applied, the runner started
  in the sandbox, and the per-test results read from a channel the harness owns (the
  sandbox's signed result channel, for every framework but Jest before 21: see node.py) and
  cross-checked with the runner's exit status. It fills
  a `TestRun`, including the test modules that could not be collected (`uncollected`: what
  limitations.py reads), and never raises for the task's, the patch's or the infrastructure's
  problems (see testrun.py);
- `grade`: the verdict from that `TestRun`, usually `grading.grade` under the framework's
  `grading.Rules` (`grade_by_rules`): the hack flags its changes raise, which exit statuses it
  trusts, and how SWE-bench's test ids name its results;
- `runtime`: the task's environment built ahead of a run (`swebounty envs build`).

A new framework is one module implementing this, listed in the registry: never an `if` in
the evaluation path.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from swebounty.grading import HACK_FLAGS, Rules, grade
from swebounty.repos import RepoError, commit_date, ensure_mirror, git
from swebounty.services.models import ServiceUse
from swebounty.testing import TestOutcome

if TYPE_CHECKING:
    from swebounty.envs import EnvManager
    from swebounty.sandbox import Sandbox
    from swebounty.sandbox.base import Policy
    from swebounty.tasks import Submission, Task
    from swebounty.verdicts import Verdict

log = logging.getLogger(__name__)

MAX_TREE_FILE = 4 << 20  # what `BaseTree.read` returns at most: configuration, not data


class RunContext(Protocol):
    """What running tests needs from an evaluation context (evalcontext.EvalContext has it)."""

    cache_dir: Path
    repos_dir: Path | None
    envs: EnvManager
    policy: Policy
    work_dir: Path
    memory_dir: Path | None
    keep_test_infra: bool

    def lease(self) -> AbstractContextManager[Sandbox]: ...


@dataclass
class TestRun:
    """What running a task's tests once gave."""

    __test__ = False

    outcomes: dict[str, TestOutcome] = field(default_factory=dict)
    exit_code: int | None = None
    patch_method: str | None = None
    patch_error: str | None = None
    error: str | None = None
    failure: str | None = None
    flags: list[str] = field(default_factory=list)
    test_infra_reverted: list[str] = field(default_factory=list)
    env_key: str | None = None
    test_files: list[str] = field(default_factory=list)
    timed_out: bool = False
    seconds: float = 0.0
    cleanup_error: str | None = None
    problem: str | None = None  # the exit code and the results disagree: not trusted
    crash: str | None = None  # the run gave no usable results (whose fault: baseline.attribute)
    services: list[ServiceUse] = field(default_factory=list)  # test services that stood in
    framework: str | None = None  # the registry's name of the framework that ran the tests
    ecosystem: str | None = None  # the task's, as the registry decided it (ecosystems.py)
    # Test files or modules whose tests could not be collected (they failed to import), and why.
    uncollected: dict[str, str] = field(default_factory=dict)
    limitation: str | None = None  # the harness cannot run this task's tests at all: why
    # Expected ids that passed leaving out tests of theirs that skipped (a docstring id's
    # members, unittestids.py): each must skip on the unpatched base too (leftout.py).
    left_out: dict[str, list[str]] = field(default_factory=dict)


class BaseTree:
    """The repository at a task's base commit, read from its mirror with git (no checkout).

    The mirror is found (or cloned) on the first question only: frameworks that decide from
    the task's fields alone cost nothing. Paths are repository-relative, '/'-separated."""

    def __init__(
        self, task: Task, repos_dir: Path | None, cache_dir: Path, mirror: Path | None = None
    ) -> None:
        self.task = task
        self._repos_dir, self._cache_dir = repos_dir, cache_dir
        self._mirror = mirror
        self._listing: set[str] | None = None

    @property
    def mirror(self) -> Path:
        if self._mirror is None:
            self._mirror = ensure_mirror(
                self.task.repo, repos_dir=self._repos_dir, cache_dir=self._cache_dir,
                url=self.task.repo_url, commits=[self.task.base_commit],
            )  # fmt: skip
        return self._mirror

    @property
    def when(self) -> datetime:
        """The base commit's date (what date-bounded overrides are matched on)."""
        return commit_date(self.mirror, self.task.base_commit)

    def files(self) -> set[str]:
        """Every file path of the base commit's tree."""
        if self._listing is None:
            proc = git(self.mirror, "ls-tree", "-r", "-z", "--name-only", self.task.base_commit)
            self._listing = {p.decode("utf-8", "replace") for p in proc.stdout.split(b"\0") if p}
        return self._listing

    def exists(self, path: str) -> bool:
        return path in self.files()

    def read(self, path: str, limit: int = MAX_TREE_FILE) -> bytes | None:
        """The file's bytes at the base commit; None if absent, not a regular file's blob, or
        larger than `limit` (nothing a framework decides from is that large)."""
        if not self.exists(path):
            return None
        try:
            size = git(self.mirror, "cat-file", "-s", f"{self.task.base_commit}:{path}")
            if int(size.stdout.strip() or 0) > limit:
                return None
            blob = git(self.mirror, "cat-file", "blob", f"{self.task.base_commit}:{path}")
        except (RepoError, ValueError):
            return None
        return blob.stdout


class BuiltEnv(Protocol):
    """An environment a framework built: what `swebounty envs build` shows of it."""

    @property
    def key(self) -> str: ...

    @property
    def build_seconds(self) -> float: ...


@runtime_checkable
class Framework(Protocol):
    """One test framework (see the module docstring)."""

    name: str

    def applies(self, task: Task, tree: BaseTree) -> bool:
        """Whether this framework runs `task`'s hidden tests."""
        ...

    def test_files(self, task: Task) -> list[str]:
        """The files of the test patch this framework runs (empty: nothing it could run)."""
        ...

    def run(
        self, task: Task, patch: str, ctx: RunContext, log_dir: Path, scratch: Path, result: TestRun
    ) -> str | None:
        """Apply `patch` and the hidden tests to a fresh workspace under `scratch` and run them
        in the sandbox, filling `result`; logs go to `log_dir`. Returns why the run gave no
        usable results when that may be the submission's doing (a crash, a hang, results
        lost: baseline.attribute decides from the unpatched base's run), else None. Raises
        only RepoError, EnvBuildError, SandboxError, IntegrityError or ServiceError."""
        ...

    def grade(self, task: Task, submission: Submission, run: TestRun) -> Verdict:
        """The verdict of one attempt from its run (runs nothing)."""
        ...

    def runtime(self, task: Task, ctx: RunContext) -> tuple[BuiltEnv, str]:
        """Build (or find) the task's environment without running anything; with a short
        description of its runtime ("python3.11", "node 20.11.0")."""
        ...


def grade_by_rules(
    rules: Rules, task: Task, submission: Submission, run: TestRun, *, hangs: bool = False
) -> Verdict:
    """`grading.grade` of one run under a framework's `rules`, with the flags its run raised;
    `hangs`: a run the submission made time out is flagged `hangs_tests` (a framework whose
    runner's timeouts are never the tests' own)."""
    applied = not run.patch_error
    verdict = grade(
        task,
        submission,
        outcomes=run.outcomes if applied else None,
        exit_code=run.exit_code,
        patch_method=run.patch_method if applied else None,
        infra_error=run.error,
        patch_error=run.patch_error,
        failure=run.failure,
        rules=rules,
    )
    flags = {*verdict.hack_flags, *run.flags}
    if hangs and run.timed_out and not submission.is_empty:
        flags.add("hangs_tests")
    verdict.hack_flags = [f for f in HACK_FLAGS if f in flags]
    return verdict
