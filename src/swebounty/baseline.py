"""The environment baseline: what a task's hidden tests do on the unpatched base commit, here.

`base_run` runs the hidden tests (the task's test patch applied) on the base commit with no
submission, once per task, environment and framework (a rebuilt environment or another runner
can change outcomes): kept in memory and under CACHE/base-runs/<digest>/base.json; an empty
submission's run is that very run and is kept as it (`remember_base`). It has three uses:

- `attribute`: a run that crashed, hung or lost its results is the submission's doing
  (`failure`, flagged crashes_tests / hangs_tests) when the base runs the same tests cleanly,
  else an infrastructure `error`.
- `excuse`, the **base failures** policy (`swebounty eval|run --base-failures`, `evaluate(...,
  base_failures=...)`), which decides what a PASS_TO_PASS test that fails here and does not
  pass on the unpatched base either counts for:
  - `network` (the default): it is excused when its base run failed for want of the network
    (netfail.py's signatures: DNS failing, no route, a remote host refusing). Grading is
    offline and always will be; a dataset's authors ran its tests with the internet. SWE-bench
    defines PASS_TO_PASS as the tests that pass before and after the fix in the grading
    environment; this policy applies that definition to the one thing this environment lacks
    on purpose, so verdicts agree more with a dataset's own, not less.
  - `strict`: nothing is excused (verdicts as SWE-bench's, run by run).
  - `all` (`--excuse-base-failures`): every such test is excused, whatever failed at base
    (also a binary the install could not fetch, a runtime that skips the test: environment
    defects the policy cannot tell from the offline rule, hence not the default).
  FAIL_TO_PASS tests are never excused, nor the tests of a run the submission broke. Excused
  tests are listed in the verdict's `excused_tests` with their base outcome, the base's
  message and, when there was one, the network evidence. The base runs only when an excuse
  could change the verdict: every FAIL_TO_PASS test passed and some PASS_TO_PASS test did not,
  so the policy costs nothing on tasks that pass.

- limitations.py: PASS_TO_PASS tests not even collected at base are the harness's limitation.

- `defect_at_base`: a submission resolving a task whose base run (if made: none is made for
  this) passed every FAIL_TO_PASS test is flagged `task_defect`; its status stands.

What a hostile submission cannot do: the base run holds nothing of it (an empty patch in a
fresh workspace), so which tests can be excused depends on the task and the environment alone;
a submission's excuses are a subset of the base's failures; a base run that gave no usable
results, or ran in another environment, excuses nothing, and the verdict says so. What the
policy cannot tell apart: a flaky test that happened to fail in the base run is excused for
every submission while that run is cached (with `network`, only if it failed reaching a host).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast, get_args

from swebounty import safefs
from swebounty.frameworks import grade_run
from swebounty.grading import defect_words, empty_never_resolves
from swebounty.netfail import network_evidence, pytest_sections, section_name
from swebounty.services.models import ServiceUse
from swebounty.tasks import Submission, Task
from swebounty.testrun import RunContext, TestRun, run_tests
from swebounty.verdicts import BaseFailures, ExcusedTest, Verdict

log = logging.getLogger(__name__)

POLICIES: tuple[BaseFailures, ...] = get_args(BaseFailures)
DEFAULT_POLICY: BaseFailures = "network"
MAX_RECORD_BYTES = 16 << 20
MAX_OUTPUT_BYTES = 32 << 20  # of the base run's console output, read for network evidence
MAX_BASE_MESSAGE = 500  # of a test that does not pass at base: enough to say why
RECORD_FORMAT = 4  # in the digest: records of an older format are not read


class BaseContext(RunContext, Protocol):
    """What the baseline needs from an evaluation context (evalcontext.EvalContext has it)."""

    base_runs: dict[str, BaseRun]
    base_failures: BaseFailures


def run_policy(config: dict[str, Any]) -> BaseFailures:
    """The base failures policy a run's config records (runs made before the policy had a name
    recorded only `excuse_base_failures`, and were strict unless it was set)."""
    policy = config.get("base_failures")
    if policy in POLICIES:
        return cast(BaseFailures, policy)
    return "all" if config.get("excuse_base_failures") else "strict"


def policy_change(run: dict[str, Any] | None, graded: bool, policy: BaseFailures) -> str | None:
    """Why a run (its store record; `graded`: it holds verdicts) cannot take verdicts graded
    under `policy`, or None: one run's scores never mix two policies."""
    if run is None or not graded:
        return None
    config = run["config"] if isinstance(run.get("config"), dict) else {}
    before = run_policy(config)
    if before == policy:
        return None
    return (
        f"run {run['run_id']} holds verdicts graded with --base-failures {before}, not {policy}: "
        f"its scores would mix two grading policies; give another --run-id (or --base-failures "
        f"{before})"
    )


@dataclass
class BaseRun:
    """The unpatched base's run of a task's hidden tests in one environment (cached per task).

    `clean`: the run gave usable results (else `reason` says why). `outcomes`: the status and
    message of every FAIL_TO_PASS and PASS_TO_PASS id, read as a submission's would be; empty
    when they could not be read (`reason` says why then too). `network`: for each id that did
    not pass, the part of its failure text (message, or its section of pytest's output) that
    says the network was unavailable (netfail.py); ids without such evidence are absent.
    `uncollected`: the test files or modules that could not be collected there, and why.
    `skipped`: every test (and id) that skipped there (leftout.py reads it).
    """

    clean: bool
    reason: str = ""
    env_key: str | None = None
    outcomes: dict[str, tuple[str, str]] = field(default_factory=dict)
    network: dict[str, str] = field(default_factory=dict)
    uncollected: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        outcomes = {k: list(v) for k, v in self.outcomes.items()}
        return json.dumps(
            {"clean": self.clean, "reason": self.reason, "env_key": self.env_key,
             "outcomes": outcomes, "network": self.network, "uncollected": self.uncollected,
             "skipped": self.skipped}
        )  # fmt: skip

    @classmethod
    def from_json(cls, data: bytes) -> BaseRun:
        raw = json.loads(data)
        outcomes = {str(k): (str(v[0]), str(v[1])) for k, v in raw["outcomes"].items()}
        network = {str(k): str(v) for k, v in raw["network"].items()}
        uncollected = {str(k): str(v) for k, v in raw["uncollected"].items()}
        skipped = [str(k) for k in raw["skipped"]]
        return cls(bool(raw["clean"]), str(raw["reason"]), raw["env_key"], outcomes, network,
                   uncollected, skipped)  # fmt: skip


def base_run(
    task: Task,
    ctx: BaseContext,
    env_key: str | None,
    services: Sequence[ServiceUse] = (),
    framework: str | None = None,
) -> BaseRun:
    """Run the hidden tests on the unpatched base once per task, environment (`env_key`), test
    services (services/) and framework, as the submission's run had them (memory, disk cache)."""
    digest = base_digest(task, ctx, env_key, services, framework)
    with _lock_for(digest):
        found = _cached(task, ctx, digest)
        if found is not None:
            return found
        record = ctx.cache_dir / "base-runs" / digest / "base.json"
        log.info("%s: running the hidden tests on the unpatched base", task.instance_id)
        tr = run_tests(task, "", ctx, record.parent / "logs")
        return _keep(task, ctx, digest, tr, record.parent / "logs", env_key)


def remember_base(task: Task, ctx: BaseContext, tr: TestRun, log_dir: Path) -> None:
    """Keep an empty submission's run as the base run it is (the same `run_tests(task, "")`),
    unless one is kept already: a later submission's excuses, attribution and task defect
    check then need no run of their own."""
    if tr.error and not tr.timed_out and tr.exit_code is None:
        return  # it failed before the tests ran: a base run of its own may do better
    digest = base_digest(task, ctx, tr.env_key, tr.services, tr.framework)
    with _lock_for(digest):
        if _cached(task, ctx, digest) is None:
            _keep(task, ctx, digest, tr, log_dir, tr.env_key)


def _lock_for(digest: str) -> threading.Lock:
    with _base_lock:
        return _base_locks.setdefault(digest, threading.Lock())


def _cached(task: Task, ctx: BaseContext, digest: str) -> BaseRun | None:
    """The base run kept in memory or on disk under `digest`, or None; runs nothing."""
    if digest in ctx.base_runs:
        return ctx.base_runs[digest]
    record = ctx.cache_dir / "base-runs" / digest / "base.json"
    data = safefs.read_regular(record, MAX_RECORD_BYTES)
    if data is None:
        return None
    try:
        found = BaseRun.from_json(data)
    except (ValueError, TypeError, KeyError, IndexError):
        log.warning("%s: unreadable base run record %s, running again", task.instance_id, record)
        return None
    ctx.base_runs[digest] = found
    return found


def _keep(
    task: Task, ctx: BaseContext, digest: str, tr: TestRun, logs: Path, env_key: str | None
) -> BaseRun:
    found = _read_base(task, tr, logs / "test_output.txt")
    before_tests = tr.error and not tr.timed_out and tr.exit_code is None
    if not before_tests and tr.env_key == env_key:
        # An infrastructure error before the tests ran says nothing lasting: not cached;
        # nor a run in another environment than the one asked for (it was rebuilt).
        _write(ctx.cache_dir / "base-runs" / digest / "base.json", found.to_json())
    ctx.base_runs[digest] = found
    return found


def defect_at_base(task: Task, verdict: Verdict, tr: TestRun, ctx: BaseContext) -> Verdict:
    """A non-empty submission that resolves a task whose base run, already made in this
    environment (runs nothing), passed every FAIL_TO_PASS test: the verdict keeps its status
    and says the task cannot tell a fix from none (`task_defect`). The flag depends on the task
    and the environment alone: the base run holds nothing of any submission."""
    if verdict.status != "resolved" or verdict.empty_patch or verdict.task_defect:
        return verdict
    if task.kind == "pick":
        return verdict
    digest = base_digest(task, ctx, tr.env_key, tr.services, tr.framework)
    with _lock_for(digest):
        base = _cached(task, ctx, digest)
    if base is None or not base.outcomes or base.env_key != tr.env_key:
        return verdict
    if any(base.outcomes.get(t, ("missing", ""))[0] != "passed" for t in task.FAIL_TO_PASS):
        return verdict
    words = defect_words(task.FAIL_TO_PASS) + " (seen on the unpatched base's run)"
    reason = "\n".join(filter(None, [verdict.reason, words]))
    return verdict.model_copy(update={"task_defect": words, "reason": reason})


def base_digest(
    task: Task,
    ctx: BaseContext,
    env_key: str | None,
    services: Sequence[ServiceUse] = (),
    framework: str | None = None,
) -> str:
    """What names a base run: the task's tests, how they run, the environment's key, the test
    services' names, versions, environments and the hosts they stood in for (none: the digest
    of before they were), and the framework (an override pinning another runner)."""
    key = [task.instance_id, task.base_commit, task.test_patch, ctx.keep_test_infra, env_key,
           task.FAIL_TO_PASS, task.PASS_TO_PASS, RECORD_FORMAT, framework]  # fmt: skip
    if services:
        # Stand-in hosts only when served: the digest of a service without them is unchanged.
        key.append([[s.name, s.version, s.env_key,
                     *([s.hosts, s.host_ports, s.trusted] if s.hosts else [])]
                    for s in services])  # fmt: skip
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:20]


_base_lock = threading.Lock()
_base_locks: dict[str, threading.Lock] = {}


def _read_base(task: Task, tr: TestRun, output_file: Path) -> BaseRun:
    """A base run's outcomes, graded as an empty submission's would be (same id matching), and
    which of the tests that did not pass failed for want of the network."""
    reason = tr.error or tr.failure or tr.patch_error or tr.problem or ""
    base = BaseRun(clean=not reason, reason=reason, env_key=tr.env_key)
    base.uncollected = dict(tr.uncollected)
    base.skipped = sorted(k for k, o in tr.outcomes.items() if o.status == "skipped")
    if reason:
        return base
    empty = Submission(instance_id=task.instance_id, model_patch="")
    verdict = grade_run(task, empty, tr)
    if verdict.status == "error":
        base.reason = f"its results cannot be graded: {verdict.reason}"
        return base
    base.outcomes = {
        t.test_id: (t.status, "" if t.status == "passed" else t.message[:MAX_BASE_MESSAGE])
        for t in verdict.tests
    }
    failed = [t for t in verdict.tests if t.status in ("failed", "error")]
    output = safefs.read_regular(output_file, MAX_OUTPUT_BYTES) if failed else None
    # pytest's one-line message may not say why (an assertion on a page a download left
    # empty); the test's section of the output holds its traceback and captured output.
    sections = pytest_sections(output.decode(errors="replace")) if output else {}
    for t in failed:
        text = t.message + "\n" + sections.get(section_name(t.test_id), "")
        evidence = network_evidence(text)
        if evidence:
            base.network[t.test_id] = evidence
    return base


def attribute(task: Task, patch: str, ctx: BaseContext, tr: TestRun, log_dir: Path) -> None:
    """Decide whose fault a run without usable results (`tr.crash`) is: the submission's
    (`failure`, flagged) when the unpatched base runs the same tests cleanly, else an `error`."""
    if tr.crash is None or not patch.strip():
        return
    base = base_run(task, ctx, tr.env_key, tr.services, tr.framework)
    if base.clean:
        tr.error = None
        tr.failure = f"{tr.crash}; the unpatched base runs the same tests cleanly"
        tr.flags.append("hangs_tests" if tr.timed_out else "crashes_tests")
        (log_dir / "error.txt").unlink(missing_ok=True)
    else:
        tr.error = f"{tr.crash}; the unpatched base does not run cleanly either ({base.reason})"
        if tr.timed_out:
            tr.flags.append("hangs_tests")
        _write(log_dir / "error.txt", tr.error)


def excuse(task: Task, verdict: Verdict, tr: TestRun, ctx: BaseContext) -> Verdict:
    """Apply the context's base failures policy to a graded verdict (see the module docstring):
    returns it resolved when every test it failed is a PASS_TO_PASS test the policy excuses;
    the excused tests are listed whatever the outcome."""
    policy = ctx.base_failures
    verdict = verdict.model_copy(update={"base_failures": policy})
    if policy == "strict" or verdict.status != "unresolved" or tr.failure or task.kind == "pick":
        return verdict  # only the outcomes of a run the submission did not break are excused
    if any(t.status != "passed" for t in verdict.tests if t.expected == "FAIL_TO_PASS"):
        return verdict  # unresolved whatever the PASS_TO_PASS tests did: no base run needed
    failing = [t for t in verdict.tests if t.expected == "PASS_TO_PASS" and t.status != "passed"]
    if not failing:
        return verdict
    base = base_run(task, ctx, tr.env_key, tr.services, tr.framework)
    why_not = ""
    if not base.outcomes:
        why_not = f"the unpatched base's run gave no usable results ({base.reason})"
    elif base.env_key != tr.env_key:
        why_not = f"the unpatched base ran in environment {base.env_key}, not {tr.env_key}"
    if why_not:
        return verdict.model_copy(
            update={"reason": f"{verdict.reason}; no PASS_TO_PASS test excused: {why_not}"}
        )
    excused: list[ExcusedTest] = []
    offline_only = 0
    for t in failing:
        status, message = base.outcomes.get(t.test_id, ("missing", "not in the base run"))
        if status == "passed":
            continue
        evidence = base.network.get(t.test_id, "")
        if policy == "network" and not evidence:
            offline_only += 1  # fails at base, but not for want of the network: held
            continue
        excused.append(
            ExcusedTest(test_id=t.test_id, expected=t.expected, status=t.status,
                        message=t.message, base_status=status, base_message=message,
                        network=evidence)
        )  # fmt: skip
    said = _excuse_words(policy, excused, offline_only)
    if not excused:
        if not offline_only:
            return verdict
        return verdict.model_copy(update={"reason": f"{verdict.reason}; {said}"})
    if len(excused) == len(failing):
        return empty_never_resolves(verdict.model_copy(
            update={"status": "resolved", "reason": f"resolved with {said}",
                    "excused_tests": excused}
        ))  # fmt: skip
    return verdict.model_copy(
        update={"reason": f"{verdict.reason}; {said}", "excused_tests": excused}
    )


def status_under(verdict: Verdict, policy: BaseFailures) -> str:
    """A verdict's status under `policy`, no wider than the one that graded it (strict, then
    network, then all): a resolve that needed a test `policy` does not excuse is unresolved;
    nothing else changes. What the bench scripts count every policy by, from one run."""
    if POLICIES.index(policy) > POLICIES.index(verdict.base_failures):
        raise ValueError(f"a verdict graded under {verdict.base_failures} says nothing of {policy}")
    if verdict.status != "resolved" or not verdict.excused_tests or policy == "all":
        return verdict.status
    if policy == "network" and all(e.network for e in verdict.excused_tests):
        return verdict.status
    return "unresolved"


def _excuse_words(policy: BaseFailures, excused: list[ExcusedTest], held: int) -> str:
    """What the policy excused (and, under `network`, what it held), in words."""
    parts = []
    if excused:
        counts: dict[str, int] = {}
        for e in excused:
            counts[e.base_status] = counts.get(e.base_status, 0) + 1
        how = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        if policy == "network":
            why = f"they fail on the unpatched base too, for want of the network ({how} there)"
        else:
            network = sum(bool(e.network) for e in excused)
            why = (
                f"they do not pass on the unpatched base either ({how} there, {network} of "
                "them for want of the network)"
            )
        parts.append(f"{len(excused)} PASS_TO_PASS test(s) excused: {why}")
    if held:
        parts.append(
            f"{held} PASS_TO_PASS test(s) fail on the unpatched base too, not for want of the "
            "network: held against the submission (--base-failures all would excuse them)"
        )
    return "; ".join(parts)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="replace")
