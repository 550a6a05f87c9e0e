"""The environment baseline (baseline.py): the unpatched base's run, and the opt-in policy that
excuses PASS_TO_PASS tests failing there.

The first tests drive `excuse` and `base_run` with a stand-in for the test run (no sandbox):
what is excused, when the base runs at all, what it is given, what is cached. The end-to-end
tests (`network`: environments come from the package index) grade small repos this file builds,
and the JavaScript demo, through the real evaluation path and sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from swebounty import baseline
from swebounty.baseline import BaseRun, base_digest, base_run, excuse
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Task, TestResult, Verdict
from swebounty.testing import TestOutcome
from swebounty.testrun import TestRun

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")

F2P = ["tests/test_a.py::test_fixed"]
P2P = ["tests/test_a.py::test_other", "tests/test_a.py::test_network"]


def _task(**extra: Any) -> Task:
    return Task(instance_id="o__p-1", repo="o/p", base_commit="a" * 40, test_patch="t",
                FAIL_TO_PASS=F2P, PASS_TO_PASS=P2P, **extra)  # fmt: skip


def _ctx(tmp_path: Path) -> Any:
    return SimpleNamespace(cache_dir=tmp_path, keep_test_infra=False, base_runs={})


def _verdict(statuses: dict[str, str]) -> Verdict:
    tests = [
        TestResult(test_id=i, expected=kind, status=statuses.get(i, "passed"))  # type: ignore[arg-type]
        for kind, ids in (("FAIL_TO_PASS", F2P), ("PASS_TO_PASS", P2P))
        for i in ids
    ]
    bad = any(t.status != "passed" for t in tests)
    return Verdict(instance_id="o__p-1", status="unresolved" if bad else "resolved", tests=tests,
                   reason="PASS_TO_PASS: 1 of 2 not passing (1 failed)" if bad else "")  # fmt: skip


class FakeRuns:
    """Stands in for `testrun.run_tests`: records what it was asked, returns a canned run."""

    def __init__(self, outcomes: dict[str, str], env_key: str = "env-1", **fields: Any) -> None:
        self.calls: list[str] = []
        self.outcomes, self.env_key, self.fields = outcomes, env_key, fields

    def __call__(self, task: Task, patch: str, ctx: Any, log_dir: Path) -> TestRun:
        self.calls.append(patch)
        outcomes = {i: TestOutcome(s, f"{s} at base") for i, s in self.outcomes.items()}  # type: ignore[arg-type]
        return TestRun(outcomes=outcomes, exit_code=1, patch_method="empty",
                       env_key=self.env_key, **self.fields)  # fmt: skip


NETWORK_FAILS = {F2P[0]: "failed", P2P[0]: "passed", P2P[1]: "failed"}


def test_a_pass_to_pass_test_failing_at_base_is_excused_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns(NETWORK_FAILS)
    monkeypatch.setattr(baseline, "run_tests", runs)
    task, ctx = _task(), _ctx(tmp_path)
    verdict = excuse(task, _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"), ctx)
    assert verdict.status == "resolved" and verdict.excuse_base_failures
    assert [(e.test_id, e.status, e.base_status) for e in verdict.excused_tests] == [
        (P2P[1], "failed", "failed")
    ]
    assert "failed at base" in verdict.excused_tests[0].base_message
    assert "1 PASS_TO_PASS test(s) excused" in verdict.reason
    assert runs.calls == [""], "the base run gets nothing of the submission"
    # The base's outcomes are kept on disk, under a name that covers the environment.
    record = tmp_path / "base-runs" / base_digest(task, ctx, "env-1") / "base.json"
    assert json.loads(record.read_text())["outcomes"][P2P[1]][0] == "failed"
    assert base_digest(task, ctx, "env-2") != base_digest(task, ctx, "env-1")
    # Another process (a fresh context) reads it instead of running the tests again.
    again = excuse(task, _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"), _ctx(tmp_path))
    assert again.status == "resolved" and runs.calls == [""]


def test_fail_to_pass_tests_are_never_excused_and_need_no_base_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns(NETWORK_FAILS)
    monkeypatch.setattr(baseline, "run_tests", runs)
    verdict = excuse(_task(), _verdict({F2P[0]: "failed", P2P[1]: "failed"}),
                     TestRun(env_key="env-1"), _ctx(tmp_path))  # fmt: skip
    assert verdict.status == "unresolved" and not verdict.excused_tests
    assert verdict.excuse_base_failures, "the verdict still says which policy graded it"
    assert runs.calls == [], "no base run when no excuse could change the verdict"
    passed = excuse(_task(), _verdict({}), TestRun(env_key="env-1"), _ctx(tmp_path))
    assert passed.status == "resolved" and not passed.excused_tests and runs.calls == []


def test_a_test_that_passes_at_base_still_counts_against_the_submission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(baseline, "run_tests", FakeRuns(NETWORK_FAILS))
    verdict = excuse(_task(), _verdict({P2P[0]: "failed", P2P[1]: "failed"}),
                     TestRun(env_key="env-1"), _ctx(tmp_path))  # fmt: skip
    assert verdict.status == "unresolved"
    assert [e.test_id for e in verdict.excused_tests] == [P2P[1]]  # listed, not enough
    assert "excused" in verdict.reason


@pytest.mark.parametrize(
    ("fields", "env_key", "why"),
    [
        ({"error": "tests timed out after 10 s", "timed_out": True}, "env-1", "no usable results"),
        ({"failure": "the tests' reporting was tampered with"}, "env-1", "no usable results"),
        ({}, "env-rebuilt", "ran in environment env-rebuilt"),
    ],
)
def test_a_base_run_that_errored_or_ran_elsewhere_excuses_nothing_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any], env_key: str, why: str
) -> None:
    monkeypatch.setattr(baseline, "run_tests", FakeRuns(NETWORK_FAILS, env_key, **fields))
    verdict = excuse(_task(), _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"),
                     _ctx(tmp_path))  # fmt: skip
    assert verdict.status == "unresolved" and not verdict.excused_tests
    assert "no PASS_TO_PASS test excused" in verdict.reason and why in verdict.reason
    if env_key != "env-1":  # a base run in another environment is not cached as this one's
        assert not list((tmp_path / "base-runs").glob("*/base.json"))


def test_a_run_the_submission_broke_is_never_excused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns(NETWORK_FAILS)
    monkeypatch.setattr(baseline, "run_tests", runs)
    broken = TestRun(env_key="env-1", failure="the tests' reporting was tampered with")
    verdict = excuse(_task(), _verdict({P2P[1]: "failed"}), broken, _ctx(tmp_path))
    assert verdict.status == "unresolved" and runs.calls == []


def test_base_run_records_every_expected_id_as_a_submission_would_be_graded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the second P2P test ran at base (the first is "missing": it never ran there).
    monkeypatch.setattr(baseline, "run_tests", FakeRuns({F2P[0]: "failed", P2P[1]: "skipped"}))
    found = base_run(_task(), _ctx(tmp_path), "env-1")
    assert found.clean and found.env_key == "env-1"
    assert {i: s for i, (s, _) in found.outcomes.items()} == {
        F2P[0]: "failed",
        P2P[0]: "missing",
        P2P[1]: "skipped",
    }
    assert BaseRun.from_json(found.to_json().encode()) == found


def test_scores_the_table_and_the_report_say_what_was_excused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from swebounty.report import render_table, write_report
    from swebounty.scoring import score_run
    from swebounty.tasks import Submission

    monkeypatch.setattr(baseline, "run_tests", FakeRuns(NETWORK_FAILS))
    task, sub = _task(), Submission(instance_id="o__p-1", model_patch="diff")
    graded = excuse(task, _verdict({P2P[1]: "failed"}), TestRun(env_key="env-1"), _ctx(tmp_path))
    score = score_run([task], [sub], [graded], run_id="excused", estimate=None)
    assert score.excused is not None and score.excused.resolved_with_excuse == 1
    assert score.excused.instance_ids == ["o__p-1"] and score.excused.other_verdicts == 0
    plain = score_run([task], [sub], [_verdict({})], run_id="strict", estimate=None)
    assert plain.excused is None
    console = Console(width=300, record=True)
    console.print(render_table([score, plain], width=300))
    assert "excused base failures on: 1 resolved" in console.export_text()
    info = {"run_id": "excused", "dataset": "d"}
    html = write_report([(score, info, [task], [graded], [sub])], tmp_path / "r.html").read_text()
    assert "excused base failures" in html and "excused tests" in html
    assert "failed at base" in html  # the base run's own message


# ---------------------------------------------------------------------------- end to end


def git(repo: Path, *argv: str) -> str:
    when = "2024-03-01T12:00:00+00:00"
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv]
    return subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def diff_of(repo: Path, files: dict[str, str]) -> str:
    """The patch that writes `files` (path -> text), made with git and undone."""
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(textwrap.dedent(text))
    git(repo, "add", "-N", ".")
    patch = git(repo, "diff")
    git(repo, "reset", "-q")
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "clean", "-qfd")
    return patch


TESTS = """\
    import socket
    from proj.a import double, name


    def test_fixed():
        assert double(3) == 6


    def test_other():
        assert name() == "proj"


    def test_network():  # as axios's tests reach postman-echo.com: no network in the sandbox
        socket.create_connection(("203.0.113.1", 80), timeout=2).close()
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A repo with a bug (`double`), its tasks and a few submissions."""
    root = tmp_path_factory.mktemp("baseline")
    repo = root / "repos" / "small__proj"
    repo.mkdir(parents=True)
    files = {
        "pyproject.toml": '[project]\nname = "proj"\nversion = "0.1"\n'
        'requires-python = ">=3.8"\n[project.optional-dependencies]\ntest = ["pytest"]\n',
        "proj/__init__.py": "",
        "proj/a.py": "def double(x):\n    return x + 2\n\n\ndef name():\n    return 'proj'\n",
        "tests/__init__.py": "",
    }
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    fix = "def double(x):\n    return x * 2\n\n\ndef name():\n    return 'proj'\n"
    gold = diff_of(repo, {"proj/a.py": fix})
    test_patch = diff_of(repo, {"tests/test_a.py": TESTS})
    # Its base run dies before reporting anything (the fix makes the module import).
    crashing = diff_of(repo, {"tests/test_a.py": "import os\nfrom proj.a import double\n"
                              "if double(3) != 6:\n    os._exit(3)\n" + textwrap.dedent(TESTS)})  # fmt: skip
    record = {"repo": "small/proj", "base_commit": base, "problem_statement": "double adds",
              "patch": gold, "FAIL_TO_PASS": json.dumps(F2P), "PASS_TO_PASS": json.dumps(P2P),
              "created_at": "2024-03-01T12:00:00Z"}  # fmt: skip
    dataset = root / "tasks.jsonl"
    dataset.write_text(
        json.dumps({**record, "instance_id": "small__proj-1", "test_patch": test_patch}) + "\n"
        + json.dumps({**record, "instance_id": "small__proj-2", "test_patch": crashing}) + "\n"
    )  # fmt: skip
    preds = root / "preds.jsonl"
    breaks_other = diff_of(repo, {"proj/a.py": fix.replace("'proj'", "'other'")})
    unrelated = diff_of(repo, {"README.md": "nothing to see\n"})
    preds.write_text("".join(
        json.dumps({"instance_id": "small__proj-1", "model_name_or_path": m, "model_patch": p})
        + "\n" for m, p in (("breaks-other", breaks_other), ("unrelated", unrelated))
    ))  # fmt: skip
    return {"root": root, "dataset": dataset, "preds": preds, "repos": root / "repos",
            "cache": root / "cache", "runs": root / "runs"}  # fmt: skip


def _evaluate(small: dict[str, Any], subs: Any, run_id: str, **kw: Any) -> dict[str, Verdict]:
    from swebounty.evaluation import evaluate

    verdicts = evaluate(small["dataset"], subs, run_id=run_id, repos_dir=small["repos"],
                        cache_dir=small["cache"], runs_dir=small["runs"], **kw)  # fmt: skip
    return {v.instance_id: v for v in verdicts}


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_python_tasks_strict_and_with_excused_base_failures(small: dict[str, Any]) -> None:
    from swebounty.evalinputs import EvalInputError
    from swebounty.store import Store

    strict = _evaluate(small, "gold", "gold-strict")
    assert strict["small__proj-1"].status == "unresolved", strict["small__proj-1"].reason
    assert not strict["small__proj-1"].excuse_base_failures
    assert not strict["small__proj-1"].excused_tests

    gold = _evaluate(small, "gold", "gold-excused", excuse_base_failures=True)
    one = gold["small__proj-1"]
    assert one.status == "resolved", one.reason
    assert [(e.test_id, e.base_status) for e in one.excused_tests] == [(P2P[1], "failed")]
    assert "excused" in one.reason
    # A base run that died excuses nothing, and the verdict says so.
    two = gold["small__proj-2"]
    assert two.status == "unresolved" and not two.excused_tests
    assert "no PASS_TO_PASS test excused" in two.reason

    empty = _evaluate(small, "empty", "empty-excused", excuse_base_failures=True)
    assert (
        empty["small__proj-1"].status == "unresolved" and not empty["small__proj-1"].excused_tests
    )
    assert empty["small__proj-2"].status == "error"  # the tests die before reporting: no grade
    _evaluate(small, [small["preds"]], "preds-excused", excuse_base_failures=True,
              instance_ids=["small__proj-1"])  # fmt: skip
    verdicts = _by_model(small, "preds-excused")
    assert len(verdicts) == 2, verdicts
    # The F2P test fails: unresolved, whatever fails at base.
    assert verdicts["unrelated"].status == "unresolved"
    assert not verdicts["unrelated"].excused_tests
    # A P2P test that passes at base, broken by the submission: still unresolved.
    broke = verdicts["breaks-other"]
    assert broke.status == "unresolved" and [e.test_id for e in broke.excused_tests] == [P2P[1]]

    with Store.open(small["runs"]) as store:
        assert store.run("gold-excused")["config"]["excuse_base_failures"] is True  # type: ignore[index]
        assert store.run("gold-strict")["config"]["excuse_base_failures"] is False  # type: ignore[index]
    report = json.loads((small["runs"] / "gold-excused" / "report.json").read_text())
    assert report["swebounty"]["excused"]["resolved_with_excuse"] == 1
    assert report["swebounty"]["excused"]["instance_ids"] == ["small__proj-1"]
    strict_report = json.loads((small["runs"] / "gold-strict" / "report.json").read_text())
    assert strict_report["swebounty"]["excused"] is None
    # A run's verdicts are never graded under two policies.
    with pytest.raises(EvalInputError, match="mix two grading policies"):
        _evaluate(small, "gold", "gold-strict", excuse_base_failures=True)


def _by_model(small: dict[str, Any], run_id: str) -> dict[str, Verdict]:
    from swebounty.store import Store

    with Store.open(small["runs"]) as store:
        return {v.model_name_or_path: v for v in store.verdicts(run_id)}


OFFLINE_JS = """\
const net = require('net')

describe('offline', function () {
  it('reaches the network', function (done) {
    const socket = net.connect(80, '203.0.113.1')
    socket.on('connect', () => { socket.destroy(); done() })
    socket.on('error', done)
  })
})
"""


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_a_node_task_s_network_test_is_excused_only_with_the_policy(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from swebounty.demo import build_demo
    from swebounty.evalcontext import EvalContext
    from swebounty.runs import evaluate_run
    from swebounty.store import Store
    from swebounty.tasks import empty_submissions, gold_submissions

    cache, runs = tmp_path_factory.mktemp("cache"), tmp_path_factory.mktemp("runs")
    mirror, tasks = build_demo(cache / "demo", "js")
    lines = OFFLINE_JS.splitlines()
    offline = (
        "diff --git a/test/offline.test.js b/test/offline.test.js\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/test/offline.test.js\n@@ -0,0 +1,{len(lines)} @@\n"
        + "".join(f"+{line}\n" for line in lines)
    )
    network = "test/offline.test.js:offline reaches the network"
    task = tasks[0].model_copy(
        update={"test_patch": tasks[0].test_patch + offline,
                "PASS_TO_PASS": [*tasks[0].PASS_TO_PASS, network]}
    )  # fmt: skip
    found: dict[str, Verdict] = {}
    with Store.open(runs / "runs.sqlite") as store:
        for policy in (False, True):
            ctx = EvalContext.create(cache_dir=cache, runs_dir=runs, repos_dir=mirror.parent,
                                     excuse_base_failures=policy)  # fmt: skip
            for kind, subs in (("gold", gold_submissions([task])),
                               ("empty", empty_submissions([task]))):  # fmt: skip
                run_id = f"{kind}-{policy}"
                store.ensure_run(
                    run_id, dataset="demo:js", config={}, sandbox="bwrap", unsafe=False
                )
                [found[run_id]] = evaluate_run(run_id, [(task, subs[0])], ctx, store)
    assert found["gold-False"].status == "unresolved", found["gold-False"].reason
    gold = found["gold-True"]
    assert gold.status == "resolved", gold.reason
    assert [(e.test_id, e.status, e.base_status) for e in gold.excused_tests] == [
        (network, "failed", "failed")
    ]
    assert found["empty-True"].status == "unresolved" and not found["empty-True"].excused_tests
