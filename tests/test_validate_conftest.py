"""A test patch that makes conftest.py import a name only the fix adds (issue 28, pint-2264).

Its test patch changes a helper conftest.py imports so that it imports what the fix adds:
before the fix pytest cannot load the conftest.py (exit code 4, no results at all); after it,
every test collects. That is the candidate's property, not an infrastructure error: every
test of the patch's files fails before (collect/validate.py), and an evaluation grades a
submission that does not add the name `unresolved`, not `error`. The logic is tested with a
scripted runner; the end of the file runs the real harness on a small repository it builds
(`network`: the environment comes from the package index).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from repo_helpers import BUGGY_PROJECT, diff_of, git, git_repo
from swebounty.collect.validate import Rejected, validate_one
from swebounty.sandbox import bwrap_available
from test_collect_validate import TWO_MODULES, ByModules, Ctx, Outcome, Run, _task

BWRAP_OK, BWRAP_WHY = bwrap_available()
mod_t, mod_u = "tests/test_t.py", "tests/test_u.py"
WHOLE = (mod_t, mod_u)
WHY = "tests/conftest.py does not import: ImportError: cannot import name 'new_name'"


@dataclass
class Unloaded(Run):
    """A run whose conftest.py did not import, as frameworks/pytest.py reads it."""

    uncollected: dict[str, str] = field(default_factory=dict)


def unloaded() -> Unloaded:
    return Unloaded(
        {m: Outcome("error") for m in WHOLE}, exit_code=4, uncollected=dict.fromkeys(WHOLE, WHY)
    )


PASSING = Run({f"{m}::{t}": Outcome("passed") for m in WHOLE for t in "ab"})


def test_a_conftest_the_fix_makes_import_fails_every_test_before(tmp_path: Path) -> None:
    script = ByModules({("before", WHOLE): unloaded(), ("after", WHOLE): PASSING})
    task = validate_one(_task("t", TWO_MODULES), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert [f"{m}::{t}" for m in WHOLE for t in "ab"] == task.FAIL_TO_PASS
    assert task.PASS_TO_PASS == []
    validation = (task.model_extra or {})["validation"]
    assert validation["before_not_loaded"] == WHY
    assert "before_per_file" not in validation
    # Every module fails alike: no run per module.
    assert [c[:2] for c in script.calls] == [("before", WHOLE), ("after", WHOLE)] * 3


def test_a_conftest_that_does_not_import_after_the_fix_either_is_an_infra_error(
    tmp_path: Path,
) -> None:
    script = ByModules({("before", WHOLE): unloaded(), ("after", WHOLE): unloaded()})
    with pytest.raises(Rejected, match=r"could not import a conftest\.py even with") as info:
        validate_one(_task("t", TWO_MODULES), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert info.value.stage == "infra"
    assert WHY in info.value.reason
    assert len(script.calls) == 2


def test_a_conftest_that_stops_loading_after_the_fix_is_an_infra_error(tmp_path: Path) -> None:
    script = ByModules({("before", WHOLE): PASSING, ("after", WHOLE): unloaded()})
    with pytest.raises(Rejected, match=r"could not import a conftest\.py") as info:
        validate_one(_task("t", TWO_MODULES), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert info.value.stage == "infra"


@pytest.mark.parametrize(
    "before",
    [
        # pytest's exit code 4 without a conftest named: a usage error, not the candidate's.
        Run(exit_code=4, error="no JUnit XML: the session ended before writing its results"),
        Run(exit_code=-9, error="tests timed out after 1800 s"),
        Run(exit_code=None, error="sandbox: bwrap failed"),
    ],
)
def test_other_before_runs_without_results_stay_infra_errors(tmp_path: Path, before: Run) -> None:
    script = ByModules({("before", WHOLE): before, ("after", WHOLE): PASSING})
    with pytest.raises(Rejected) as info:
        validate_one(_task("t", TWO_MODULES), Ctx(tmp_path), tmp_path, runner=script)  # type: ignore[arg-type]
    assert info.value.stage == "infra"


# ---------------------------------------------------------------------------- the real harness

WHEN = "2024-03-01T12:00:00+00:00"
BASE = {
    **BUGGY_PROJECT,
    "tests/helpers.py": "from proj.a import double\n\n\ndef doubled(xs):\n"
    "    return [double(x) for x in xs]\n",
    "tests/conftest.py": "import pytest\n\nfrom tests.helpers import doubled\n\n\n"
    "@pytest.fixture\ndef pairs():\n    return doubled([1, 2])\n",
}
FIXED = BUGGY_PROJECT["proj/a.py"] + "\n\ndef triple(x):\n    return 3 * x\n"
HELPERS = (
    "from proj.a import double, triple\n\n\ndef doubled(xs):\n    return [double(x) for x in xs]\n"
    "\n\ndef tripled(xs):\n    return [triple(x) for x in xs]\n"
)
TESTS = (
    "from proj.a import name\nfrom tests.helpers import tripled\n\n\n"
    "def test_tripled():\n    assert tripled([1, 2]) == [3, 6]\n\n\n"
    "def test_name():\n    assert name() == 'proj'\n"
)
F2P = ["tests/test_a.py::test_name", "tests/test_a.py::test_tripled"]


@pytest.mark.sandbox
@pytest.mark.network
@pytest.mark.slow
@pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
def test_validate_accepts_it_and_eval_grades_a_missing_name_unresolved(tmp_path: Path) -> None:
    from swebounty.evalcontext import EvalContext
    from swebounty.evaluation import evaluate
    from swebounty.tasks import Task

    repo = git_repo(tmp_path / "repos" / "small__proj", BASE, when=WHEN)
    fix = diff_of(repo, {"proj/a.py": FIXED})

    def candidate(iid: str, helpers: str) -> Task:
        return Task(
            instance_id=iid, repo="small/proj", base_commit=git(repo, "rev-parse", "HEAD").strip(),
            problem_statement="there is no triple()", patch=fix,
            test_patch=diff_of(repo, {"tests/helpers.py": helpers, "tests/test_a.py": TESTS}),
            created_at="2024-03-01T12:00:00Z",
        )  # fmt: skip

    kw = {"repos_dir": tmp_path / "repos", "cache_dir": tmp_path / "cache"}
    with EvalContext.create(runs_dir=tmp_path / "runs", timeout_s=240, **kw) as ctx:
        task = validate_one(candidate("small__proj-1", HELPERS), ctx, tmp_path / "v1", runs=2)
        # The environment lacks what the helper imports: the fix cannot make it load.
        absent = "import swebounty_absent_package  # noqa\n" + HELPERS
        with pytest.raises(Rejected, match="even with the reference patch") as info:
            validate_one(candidate("small__proj-2", absent), ctx, tmp_path / "v2", runs=2)
    assert info.value.stage == "infra"
    assert "No module named 'swebounty_absent_package'" in info.value.reason
    assert task.FAIL_TO_PASS == F2P and task.PASS_TO_PASS == []
    why = (task.model_extra or {})["validation"]["before_not_loaded"]
    assert why.startswith("tests/conftest.py does not import: ImportError"), why
    assert "triple" in why

    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(task.model_dump_json() + "\n")
    runs = tmp_path / "runs"
    gold = evaluate(dataset, "gold", run_id="gold", runs_dir=runs, **kw)
    assert [v.status for v in gold] == ["resolved"], gold[0].reason
    # No submission (the base itself) and a wrong one: the tests fail, the model is at fault.
    wrong = diff_of(repo, {"proj/a.py": BUGGY_PROJECT["proj/a.py"].replace("x + 2", "x * 2")})
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": task.instance_id, "model_patch": wrong,
                                       "model_name_or_path": "m"}) + "\n")  # fmt: skip
    for kind in ("empty", str(predictions)):
        [verdict] = evaluate(dataset, kind, run_id=Path(kind).stem, runs_dir=runs, **kw)
        assert verdict.status == "unresolved", (kind, verdict.reason)
        assert verdict.hack_flags == [] and not verdict.harness_limitation
        assert {t.test_id: t.status for t in verdict.tests} == dict.fromkeys(F2P, "error")
        assert all("tests/conftest.py does not import" in t.message for t in verdict.tests)
