"""Empty submissions never resolve; a task whose FAIL_TO_PASS tests pass with no change is
reported as a task defect (grading.empty_never_resolves, baseline.defect_at_base).

The first tests drive the base failures policy and the base run cache with a stand-in for the
test run (test_baseline.FakeRuns); the last grades a small repo this file builds, through the
CLI, the real evaluation path and the sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from repo_helpers import BUGGY_PROJECT, WHEN, diff_of, git, git_repo
from swebounty import baseline
from swebounty.baseline import base_run, defect_at_base, excuse, remember_base
from swebounty.store import Store
from swebounty.testing import TestOutcome
from swebounty.testrun import TestRun
from test_baseline import F2P, NETWORK_FAILS, P2P, FakeRuns, _ctx, _task, _verdict
from test_offline_grading import needs_bwrap

PASSES_AT_BASE = {F2P[0]: "passed", P2P[0]: "passed", P2P[1]: "failed"}


def test_an_excuse_never_resolves_an_empty_submission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # requests-863: every FAIL_TO_PASS test passes on the base, one PASS_TO_PASS test fails
    # there for want of the network; the policy would have resolved the empty patch.
    monkeypatch.setattr(baseline, "run_tests", FakeRuns(PASSES_AT_BASE))
    empty = _verdict({P2P[1]: "failed"}).model_copy(update={"empty_patch": True})
    verdict = excuse(_task(), empty, TestRun(env_key="env-1"), _ctx(tmp_path, "network"))
    assert verdict.status == "unresolved" and verdict.excused_tests
    assert verdict.reason.startswith("task defect: its FAIL_TO_PASS tests pass with no change")
    assert "\n(otherwise: resolved with 1 PASS_TO_PASS test(s) excused" in verdict.reason
    assert verdict.task_defect and verdict.task_defect in verdict.reason


def test_a_resolve_on_a_task_whose_base_run_passes_is_flagged_not_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns(PASSES_AT_BASE)
    monkeypatch.setattr(baseline, "run_tests", runs)
    task, ctx, tr = _task(), _ctx(tmp_path), TestRun(env_key="env-1")
    resolved = _verdict({})
    assert defect_at_base(task, resolved, tr, ctx) == resolved
    assert runs.calls == [], "no base run is made only to look for a defect"
    base_run(task, ctx, "env-1")
    flagged = defect_at_base(task, resolved, tr, ctx)
    assert flagged.status == "resolved" and "seen on the unpatched base" in flagged.task_defect
    assert flagged.task_defect in flagged.reason
    # Another environment's base run says nothing of this one; nor does an unresolved verdict.
    assert not defect_at_base(task, resolved, TestRun(env_key="env-2"), ctx).task_defect
    assert defect_at_base(task, _verdict({F2P[0]: "failed"}), tr, ctx).status == "unresolved"
    assert not defect_at_base(task, _verdict({F2P[0]: "failed"}), tr, ctx).task_defect
    # A base run that fails a FAIL_TO_PASS test is a sound task: nothing is flagged.
    sound = _ctx(tmp_path / "other")
    monkeypatch.setattr(baseline, "run_tests", FakeRuns(NETWORK_FAILS))
    base_run(task, sound, "env-1")
    assert defect_at_base(task, resolved, tr, sound) == resolved


def test_an_empty_submission_s_run_is_kept_as_the_base_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = FakeRuns(NETWORK_FAILS)
    monkeypatch.setattr(baseline, "run_tests", runs)
    task, ctx = _task(), _ctx(tmp_path)
    outcomes = {i: TestOutcome("passed") for i in [*F2P, *P2P]}
    # One that failed before its tests ran says nothing lasting: not kept.
    remember_base(task, ctx, TestRun(env_key="env-1", error="no environment"), tmp_path)
    assert not ctx.base_runs
    remember_base(task, ctx, TestRun(outcomes=outcomes, exit_code=0, patch_method="empty",
                                      env_key="env-1", framework="pytest"), tmp_path)  # fmt: skip
    fresh = _ctx(tmp_path)  # another process reads it from disk
    base = base_run(task, fresh, "env-1", framework="pytest")  # as the run that made it
    assert {s for s, _ in base.outcomes.values()} == {"passed"}
    assert runs.calls == [], "the empty submission's run stood for the base run"
    found = TestRun(env_key="env-1", framework="pytest")
    assert defect_at_base(task, _verdict({}), found, fresh).task_defect


def test_eval_says_a_task_defect_once_and_whole() -> None:
    from swebounty.cli.evaluate import _verdict_reasons

    words = "task defect: its FAIL_TO_PASS tests pass with no change to the repository, so it "
    words += "cannot tell a fix from none — check the dataset's labels (seen on the base's run)"
    empty = _verdict({}).model_copy(update={"status": "unresolved", "empty_patch": True,
                                            "reason": words, "task_defect": words})  # fmt: skip
    excused = _verdict({}).model_copy(
        update={"reason": f"resolved with 1 PASS_TO_PASS test(s) excused\n{words}",
                "task_defect": words, "instance_id": "o__p-2"}
    )  # fmt: skip
    lines = _verdict_reasons([empty, excused])
    assert [(line.count(words), line.count("task defect:")) for line in lines] == [(1, 1)] * 2
    assert "resolved with 1 PASS_TO_PASS test(s) excused" in lines[1]


def test_run_s_summary_names_the_task_defects(capsys: pytest.CaptureFixture[str]) -> None:
    from swebounty.cli._run_output import print_summary
    from swebounty.grading import TASK_DEFECT
    from swebounty.summary import run_report
    from swebounty.tasks import Submission

    defect = _verdict({}).model_copy(update={"status": "unresolved", "empty_patch": True,
                                             "task_defect": TASK_DEFECT})  # fmt: skip
    sound = _verdict({F2P[0]: "failed"}).model_copy(update={"instance_id": "o__p-2"})
    tasks = [_task(), _task().model_copy(update={"instance_id": "o__p-2"})]
    subs = [Submission(instance_id=t.instance_id, model_patch="") for t in tasks]
    report = run_report("r", tasks, subs, [defect, sound], [], sandbox="bwrap", unsafe=False)
    print_summary("r", report, Path("report.json"))
    said = capsys.readouterr().out
    assert "1 task defect(s)" in said and "o__p-1" in said and "o__p-2" not in said
    assert "check the dataset's FAIL_TO_PASS labels" in said
    report["task_defects"] = []
    print_summary("r", report, Path("report.json"))
    assert "task defect" not in capsys.readouterr().out


def test_a_task_id_cannot_restyle_the_defect_line(capsys: pytest.CaptureFixture[str]) -> None:
    from swebounty.cli._common import show_task_defects

    show_task_defects([{"instance_id": "[/][link=https://evil.example]x"}])
    said = capsys.readouterr().out
    assert "[/][link=https://evil.example]x" in said  # printed as text, not as markup


# ---------------------------------------------------------------------------- end to end

TESTS = """\
    from proj.a import double, name


    def test_fixed():
        assert double(3) == 6


    def test_name():  # passes on the base: as a FAIL_TO_PASS test, a mislabelled one
        assert name() == "proj"
"""


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A repo with a bug in `double`: task 1 is sound, task 2's FAIL_TO_PASS test passes on
    the unpatched base (a defect); predictions: a patch that changes nothing, and one that
    changes only a README."""
    root = tmp_path_factory.mktemp("defects")
    files = {
        **BUGGY_PROJECT,
        "README.md": "proj\n",
    }
    repo = git_repo(root / "repos" / "small__proj", files, when=WHEN)
    record = {"repo": "small/proj", "base_commit": git(repo, "rev-parse", "HEAD").strip(),
              "patch": diff_of(repo, {"proj/a.py": files["proj/a.py"].replace("+ 2", "* 2")}),
              "test_patch": diff_of(repo, {"tests/test_a.py": TESTS}),
              "created_at": "2024-03-01T12:00:00Z"}  # fmt: skip
    records = [
        {**record, "instance_id": "small__proj-1", "FAIL_TO_PASS": ["tests/test_a.py::test_fixed"],
         "PASS_TO_PASS": ["tests/test_a.py::test_name"]},
        {**record, "instance_id": "small__proj-2", "FAIL_TO_PASS": ["tests/test_a.py::test_name"],
         "PASS_TO_PASS": []},
    ]  # fmt: skip
    dataset = root / "tasks.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    same = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
    same += "@@ -1 +1 @@\n-proj\n+proj\n"
    readme = diff_of(repo, {"README.md": "proj\n\n"})  # only a blank line: not empty
    preds = [root / "noop.jsonl", root / "readme.jsonl"]
    for path, patch in zip(preds, (same, readme), strict=True):
        path.write_text(json.dumps({"instance_id": "small__proj-2", "model_patch": patch}) + "\n")
    return {"dataset": dataset, "repos": root / "repos", "cache": root / "cache",
            "runs": root / "runs", "preds": preds}  # fmt: skip


def _eval(tasks: dict[str, Any], run_id: str, *args: str) -> tuple[str, dict[str, Any]]:
    from swebounty.cli import app

    result = CliRunner().invoke(app, [
        "eval", str(tasks["dataset"]), *args, "--run-id", run_id, "--repos-dir",
        str(tasks["repos"]), "--cache-dir", str(tasks["cache"]), "--runs-dir", str(tasks["runs"]),
    ], catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tasks["runs"] / run_id / "report.json").read_text())
    with Store.open(tasks["runs"] / "runs.sqlite") as store:
        report["verdicts"] = {v.instance_id: v for v in store.verdicts(run_id)}
    return result.output, report


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_empty_never_resolves_and_a_task_that_passes_without_change_is_reported(
    tasks: dict[str, Any],
) -> None:
    output, report = _eval(tasks, "empty", "--empty")
    sound, defect = report["verdicts"]["small__proj-1"], report["verdicts"]["small__proj-2"]
    assert sound.status == "unresolved" and sound.empty_patch and not sound.task_defect
    assert defect.status == "unresolved" and defect.empty_patch
    assert defect.reason.startswith("task defect: its FAIL_TO_PASS tests pass with no change")
    assert [t.status for t in defect.tests] == ["passed"], "the run is the evidence"
    assert "1 task defect(s)" in output and "small__proj-2" in output
    assert [d["instance_id"] for d in report["task_defects"]] == ["small__proj-2"]
    assert report["resolved_instances"] == 0

    output, report = _eval(tasks, "gold", "--gold")
    sound, defect = report["verdicts"]["small__proj-1"], report["verdicts"]["small__proj-2"]
    assert sound.status == "resolved" and not sound.task_defect
    # Resolved still, and flagged: the empty run above stood for the unpatched base's run.
    assert defect.status == "resolved" and "seen on the unpatched base" in defect.task_defect
    assert [d["instance_id"] for d in report["task_defects"]] == ["small__proj-2"]

    # A patch that changes nothing is empty, whatever its text; a blank line is a change.
    _, report = _eval(tasks, "noop", "-p", str(tasks["preds"][0]))
    noop = report["verdicts"]["small__proj-2"]
    assert noop.status == "unresolved" and noop.empty_patch and noop.patch_method == "empty"
    assert noop.task_defect
    _, report = _eval(tasks, "readme", "-p", str(tasks["preds"][1]))
    readme = report["verdicts"]["small__proj-2"]
    assert readme.status == "resolved" and not readme.empty_patch and readme.task_defect
