"""unittest: projects whose tests run under `python -m unittest`, and what every runner built on
unittest's result object shares (django.py runs its runtests.py through the same steps).

After the shared Python steps (python.py), the guarded runner (pytest_guard/run_unittest.py)
starts the program as `__main__` in the sandbox; the guard inside the test process records
each test as unittest's own code reported it (unittest_guard.py) and sends the records with the
program's exit status on the sandbox's result channel, signed with a key only it was given.
The harness believes nothing else: a tampered channel or reporting is the submission's failure
(`tampers_with_test_runner`); records that contradict the exit status, or no records at all,
are a run without usable results (`crash`: baseline.py decides whose fault). SWE-bench's ids
(`test_x (module.Class)`, `module.Class.test_x`, docstring first lines) are matched onto the
records by unittestids.py when the run is read, so `TestRun.outcomes` holds every test by its
dotted id and every expected id by itself.

Applies to a Python task whose repository has no pytest configuration at the base commit and
whose tests are unittest's: SWE-bench ids in unittest's format, or test files that import
unittest and not pytest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from swebounty import fontcache, safefs
from swebounty.diffs import files_in_patch, parse_patch
from swebounty.frameworks.base import BaseTree, BuiltEnv, RunContext, TestRun, grade_by_rules
from swebounty.frameworks.pyflags import hack_flags
from swebounty.frameworks.python import ExtraInfra, prepare, python_runtime
from swebounty.integrity import infra_manifest
from swebounty.pytest_guard import (
    GUARD_DIR,
    UNITTEST_RUNNER,
    ChannelTampered,
    GuardResult,
    new_key,
    read_channel,
    runner_argv,
    write_config,
)
from swebounty.sandbox import Sandbox
from swebounty.sandbox.base import Mount
from swebounty.tasks import EnvSpec, Submission, Task
from swebounty.testing import MESSAGE_CHARS, TestOutcome, test_files
from swebounty.unittestids import canonical, left_out, match_unittest, outcomes_of
from swebounty.verdicts import Verdict

# (task, the guard's message, the run, the run's timeout, labels) -> why it gave no results
Reader = Callable[[Task, GuardResult | None, TestRun, float, Mapping[str, str]], str | None]
MAX_TEST_FILE = 8 << 20  # a hidden test module larger than this is not pinned (genuine.py)
_PAREN_ID = re.compile(r"^\w+ \([\w.]+\)$")
_PYTEST_CONFIG = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml")
_PYTEST_SECTIONS = {
    "setup.cfg": b"[tool:pytest]",
    "tox.ini": b"[pytest]",
    "pyproject.toml": b"[tool.pytest",
}


class UnittestRules:
    """What every unittest-based framework grades by (grading.Rules), and its `grade`."""

    def test_files(self, task: Task) -> list[str]:
        return unittest_files(task, root="")

    def grade(self, task: Task, submission: Submission, run: TestRun) -> Verdict:
        return grade_by_rules(self, task, submission, run)

    def hack_flags(self, task: Task, patch: str) -> list[str]:
        return hack_flags(patch, self.test_files(task), task=task)

    def check(
        self, exit_code: int | None, outcomes: dict[str, TestOutcome] | None
    ) -> tuple[str | None, str | None]:
        if outcomes is None:
            return None, "no test result was read"
        ran = {k: o for k, o in outcomes.items() if o.status != "missing"}
        return None, disagreement(exit_code, ran)

    def match(
        self, expected: list[str], outcomes: dict[str, TestOutcome]
    ) -> dict[str, TestOutcome]:
        """read_records matched every expected id when the run was read (the docstring ids
        need the guard's records); an id it did not see is looked up by its dotted form."""
        never = TestOutcome("missing", "never ran")
        return {i: outcomes.get(i) or outcomes.get(canonical(i) or i) or never for i in expected}


class Unittest(UnittestRules):
    """`python -m unittest -v MODULES`, the test patch's modules named from the repository root."""

    name = "unittest"

    def applies(self, task: Task, tree: BaseTree) -> bool:
        if task.ecosystem != "python" or _has_pytest_config(tree):
            return False
        ids = task.FAIL_TO_PASS + task.PASS_TO_PASS
        if ids:
            return all("::" not in i for i in ids) and any(_PAREN_ID.match(i) for i in ids)
        files = set(self.test_files(task))
        added = ["\n".join(d.added) for d in parse_patch(task.test_patch) if d.path in files]
        text = "\n".join(added)
        return bool(added) and "unittest" in text and "pytest" not in text

    def run(
        self, task: Task, patch: str, ctx: RunContext, log_dir: Path, scratch: Path, result: TestRun
    ) -> str | None:
        labels = {f: module_name(f, "") for f in result.test_files}
        task = with_runner(task, RUNNER)
        with ctx.lease() as sandbox:
            return run_program(task, patch, ctx, sandbox, log_dir, scratch, result,
                               {"module": "unittest"}, ["-v"], labels)  # fmt: skip

    def runtime(self, task: Task, ctx: RunContext) -> tuple[BuiltEnv, str]:
        return python_runtime(with_runner(task, RUNNER), ctx)


RUNNER = ["python", "-m", "unittest"]


def with_runner(task: Task, argv: list[str]) -> Task:
    """`task` with the command that runs its tests as its environment's `test_cmd`, unless its
    own EnvSpec names one: the environment then says what runs its tests, and its build does
    not check that pytest collects them (envs/candidate.probing; django's tests do not)."""
    spec = task.env_spec or EnvSpec()
    if spec.test_cmd:
        return task
    return task.model_copy(update={"env_spec": spec.model_copy(update={"test_cmd": argv})})


def _has_pytest_config(tree: BaseTree) -> bool:
    files = tree.files()
    if any(PurePosixPath(f).name in ("conftest.py", *_PYTEST_CONFIG) for f in files):
        return True
    for name, section in _PYTEST_SECTIONS.items():
        data = tree.read(name) if name in files else None
        if data is not None and section in data:
            return True
    return False


# ------------------------------------------------------------------ shared with django.py


def module_name(path: str, root: str) -> str:
    """`tests/foo/tests.py` -> `foo.tests` under root `tests`: the label unittest imports."""
    rel = path[len(root) + 1 :] if root else path
    return rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def unittest_files(task: Task, root: str) -> list[str]:
    """The test patch's test modules under `root` (testing.test_files' rules), and any of its
    Python files whose module an expected id names (the dataset says tests live there)."""
    expected = task.FAIL_TO_PASS + task.PASS_TO_PASS
    found = [f for f in test_files(task.test_patch) if not root or f.startswith(root + "/")]
    named = {c.rsplit(".", 2)[0] for c in map(canonical, expected) if c and c.count(".") >= 2}
    for path in files_in_patch(task.test_patch):
        inside = not root or path.startswith(root + "/")
        module = module_name(path, root)
        if inside and path.endswith(".py") and any(_names(n, module) for n in named):
            found.append(path)
    return list(dict.fromkeys(found))


def _names(dotted: str, module: str) -> bool:
    """Whether an id's module is `module`, named from the runner's folder (`foo.tests` for
    `tests.foo.tests` named from the root)."""
    return module == dotted or module.endswith("." + dotted)


def run_program(
    task: Task,
    patch: str,
    ctx: RunContext,
    sandbox: Sandbox,
    log_dir: Path,
    scratch: Path,
    result: TestRun,
    program: Mapping[str, object],
    options: list[str],
    labels: Mapping[str, str],
    extra_infra: ExtraInfra | None = None,
    *,
    runner: Path = UNITTEST_RUNNER,
    reader: Reader | None = None,
    pinned: Sequence[str] = (),
) -> str | None:
    """Prepare the workspace (python.prepare) and run `program` (run_unittest.py's `script` or
    `module`) with `options` on `labels` (test file -> the name unittest loads it by) guarded
    in `sandbox`, from the workspace's root. `runner`: the guarded runner to start (another
    runner's: run_sympy.py), `reader` what fills `result` from its message (read_records);
    `pinned`: more base files the guard gets the bytes of and trusts (a runner's own)."""
    ready = prepare(task, patch, ctx, sandbox, scratch, result, extra_infra)
    if ready is None:
        return None
    workspace, env = ready.workspace, ready.env
    task_env = ctx.envs.for_task(env, workspace, scratch / "layer")
    seeded = fontcache.seeds(env, sandbox, ctx.policy, task_env.env)
    # Read without following a link (what the hidden tests hold is the harness's to know).
    found = {p: safefs.read_beneath(workspace, p, MAX_TEST_FILE) for p in result.test_files}
    found.update({p: safefs.read_beneath(workspace, p, MAX_TEST_FILE) for p in pinned})
    hidden = {p: data.hex() for p, data in found.items() if data is not None}
    kept = {*ready.test_paths, *pinned}
    untrusted = [str(workspace / p) for p in files_in_patch(patch) if p not in kept]
    config: dict[str, object] = {
        **program,
        "args": [*options, *dict.fromkeys(labels.values())],
        "workspace": str(workspace),
        "infra": infra_manifest(workspace),
        "untrusted_files": untrusted,
        "pinned_files": hidden,  # the hidden tests as applied: a pass is theirs (genuine.py)
        "trusted_dirs": [str(p) for p in [*task_env.ro_paths, GUARD_DIR]],
        "setup": task_env.setup_argv,
        "setup_may_fail": False,
        "tmp_files": seeded,
    }
    guard_dir = scratch / "guard"
    guard_dir.mkdir(mode=0o755)
    write_config(guard_dir / "config.json", config)
    for path in (workspace, scratch / "layer"):
        sandbox.prepare_workdir(path)
    mounts = [Mount(path=p) for p in [*task_env.ro_paths, GUARD_DIR, guard_dir]]
    mounts += [Mount(path=p) for p in sorted({Path(s).parent for s in seeded.values()})]
    mounts += [Mount(path=p, ephemeral=True) for p in [workspace, *task_env.rw_paths]]
    key = new_key()
    python = task_env.test_prefix[0]
    argv = runner_argv(python, guard_dir / "config.json", runner)
    argv, variables = ready.services.attach(sandbox, argv, task_env.env, mounts)
    policy = ctx.policy.model_copy(update={"env": variables, **ready.services.network()})
    run = sandbox.run(
        argv, workdir=workspace, mounts=mounts, policy=policy, stdin=key, result_channel=True,
    )  # fmt: skip
    (log_dir / "test_output.txt").write_text(
        run.stdout + "\n--- stderr ---\n" + run.stderr, encoding="utf-8", errors="replace"
    )
    result.exit_code = run.returncode
    ready.services.keep_logs(log_dir)
    result.services = ready.services.uses()  # after the run: what the services' logs said
    if run.timed_out:
        result.timed_out = True
    try:
        guard = read_channel(run.channel, key, run.channel_truncated)
    except ChannelTampered as exc:
        _tampered(result, [str(exc)])
        return None
    why = (reader or read_records)(task, guard, result, ctx.policy.timeout_s, labels)
    return ready.services.explain(why, run)


def read_records(
    task: Task,
    guard: GuardResult | None,
    result: TestRun,
    timeout_s: float,
    labels: Mapping[str, str],
) -> str | None:
    """Fill `result` from what the guard sent; why the run gave no usable results, or None."""
    guard, why = received(guard, result, timeout_s)
    if guard is None:
        return why
    expected = task.FAIL_TO_PASS + task.PASS_TO_PASS
    result.outcomes = {**outcomes_of(guard.tests), **match_unittest(expected, guard.tests)}
    result.left_out = left_out(expected, guard.tests)
    result.uncollected = uncollected(labels, guard.tests)
    if result.timed_out:
        return f"tests timed out after {timeout_s:.0f} s"
    return disagreement(guard.exitstatus, outcomes_of(guard.tests))


def received(
    guard: GuardResult | None, result: TestRun, timeout_s: float
) -> tuple[GuardResult | None, str | None]:
    """(the guard's message, when its records are to be read; why the run gave no usable
    results). What every guarded runner's message says before its records: no message, a
    failed install, the infrastructure put back after it, the guard's own error, tampering
    (`result` says so), and the exit status the guard saw."""
    if guard is None:
        return None, f"tests timed out after {timeout_s:.0f} s" if result.timed_out else (
            f"the test process ended without sending results (exit code {result.exit_code})"
        )  # fmt: skip
    if guard.setup_exit is not None:
        return None, (
            f"installing the workspace failed (exit {guard.setup_exit}); see test_output.txt"
        )
    if guard.infra_restored:
        result.test_infra_reverted += [f"{p} (after the install)" for p in guard.infra_restored]
    if guard.errors:  # before its problems: a guard that broke may see false ones after
        return None, "; ".join(guard.errors[:3])
    if guard.problems:
        _tampered(result, guard.problems)
        return None, None
    result.exit_code = guard.exitstatus
    return guard, None


def uncollected(
    labels: Mapping[str, str], records: Mapping[str, Mapping[str, str | None]]
) -> dict[str, str]:
    """The test files whose module unittest could not import (limitations.py asks whether the
    base fails the same way), each with the import error. unittest's loader names such a
    module by the part of its label it failed on (`tests` for `foo.tests`), so a file counts
    when that part is in its label and none of its tests ran."""
    failed = {k: r.get("message") or "" for k, r in records.items() if r.get("kind") == "import"}
    ran = {k.rsplit(".", 2)[0] for k, r in records.items() if r.get("kind") == "test"}
    found: dict[str, str] = {}
    for path, label in labels.items():
        if label in ran:
            continue
        for name, message in failed.items():
            if name in label.split("."):
                found[path] = message.strip().splitlines()[-1][:MESSAGE_CHARS] if message else ""
    return found


def disagreement(exit_code: int | None, records: dict[str, TestOutcome]) -> str | None:
    """Why a unittest program's exit status and its records cannot both be true, or None."""
    bad = sum(1 for o in records.values() if o.status in ("failed", "error"))
    if not records:
        return f"no test ran (exit code {exit_code}); see test_output.txt"
    if exit_code == 0 and bad:
        return f"the runner exited 0, but {bad} tests failed or errored"
    if exit_code == 1 and not bad:
        return "the runner exited 1 (a failure), but every test it ran passed or was skipped"
    if exit_code not in (0, 1):
        if exit_code is not None and (exit_code < 0 or exit_code > 128):
            signal = -exit_code if exit_code < 0 else exit_code - 128
            return f"the test process was killed by signal {signal} (exit code {exit_code})"
        return f"unexpected exit code {exit_code} from the test runner"
    return None


def _tampered(result: TestRun, problems: list[str]) -> None:
    """Not a crash to attribute: the reporting itself cannot be trusted, so never resolved."""
    result.failure = "the tests' reporting was tampered with: " + "; ".join(problems[:5])
    result.flags.append("tampers_with_test_runner")
