"""SWE-Lancer's CSV task files load as they are published: Manager rows as pick tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swebounty.evalinputs import load_dataset
from swebounty.formats import format_of, load_file
from swebounty.tasks import Task
from swelancer_helpers import (
    COMMIT,
    NEW_HEADER,
    OLD_HEADER,
    manager_data,
    manager_row,
    write_csv,
)


def test_manager_rows_are_pick_tasks(tmp_path: Path) -> None:
    rows = [
        manager_row("15193-manager-0", "4000.0", manager_data(["0", "1", 2], 2)),
        # ids need not start at 0 nor be contiguous; a pick is an index in id order
        manager_row("15784-manager-0", "1000.0", manager_data([5, 3, 8], "8")),
    ]
    path = write_csv(tmp_path / "swelancer_tasks_lite.csv", OLD_HEADER, rows)
    assert format_of(path) is not None
    tasks, errors = load_file(path)
    assert errors == []
    first, second = tasks
    assert first.instance_id == "15193-manager-0" and first.kind == "pick"
    assert first.repo == "Expensify/App" and first.base_commit == f"{COMMIT}^"
    assert first.proposals == ["proposal 0", "proposal 1", "proposal 2"]
    assert first.accepted_proposal == 2
    assert (first.value_usd, first.value_source) == (4000.0, "swelancer")
    assert first.problem_statement.startswith("Bold code block\n\n## Action Performed")
    extra = first.model_extra or {}
    assert extra["split"] == "lite" and extra["swelancer_variant"] == "swe_manager"
    assert second.proposals == ["proposal 3", "proposal 5", "proposal 8"]
    assert second.accepted_proposal == 2 and (second.model_extra or {})["proposal_ids"] == [3, 5, 8]


def test_newer_layout_keeps_its_set_and_columns(tmp_path: Path) -> None:
    data = manager_data([0, 1], 1)
    row = manager_row("28565-manager-0", "500", data, set="diamond", title="Cursor",
                      description="Menu item shows a pointer", proposals="Proposal: 0: ...")  # fmt: skip
    path = write_csv(tmp_path / "all_swelancer_tasks.csv", NEW_HEADER, [row])
    (task,), errors = load_file(path)
    assert not errors
    assert (task.model_extra or {})["split"] == "diamond"
    assert task.problem_statement == "Cursor\n\nMenu item shows a pointer"
    assert task.accepted_proposal == 1


def test_manager_data_as_json_and_issue_from_the_prompt(tmp_path: Path) -> None:
    data = manager_data([0, 1], 0)
    del data["title"], data["html_description"], data["issue_repo_steps"]
    row = manager_row("1-manager-0", "250", None)
    row["manager_data"] = json.dumps(data)
    path = write_csv(tmp_path / "swelancer_tasks.csv", OLD_HEADER, [row])
    (task,), errors = load_file(path)
    assert not errors and task.problem_statement == "the issue"
    assert (task.model_extra or {})["split"] == "all"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"manager_data": ""}, "needs manager_data"),
        ({"manager_data": "__import__('os').system('true')"}, "not a Python or JSON literal"),
        ({"manager_commit": ""}, "needs manager_commit"),
        ({"manager_commit": "--upload-pack=evil"}, "is not a commit id"),
        ({"price": "lots"}, "is not a number"),
        ({"price": "-5"}, "is not a dollar amount"),
        ({"question_id": "../../etc"}, "is not a safe name"),
        ({"variant": "other"}, "is not one of swe_manager, ic_swe"),
        ({"manager_data": repr(manager_data([0, 1], 7))}, "correct proposal 7 is not among"),
        ({"manager_data": repr(manager_data([0, 0], 0))}, "two proposals have the id 0"),
        ({"manager_data": repr(manager_data([0], 0))}, "not a list of 2+ proposals"),
        ({"manager_data": repr(manager_data(["x", 1], 1))}, "is not a proposal number"),
    ],
)
def test_a_bad_row_is_a_record_error_and_the_rest_load(
    tmp_path: Path, change: dict[str, str], message: str
) -> None:
    good = manager_row("2-manager-0", "1000", manager_data([0, 1], 1))
    bad = manager_row("3-manager-0", "1000", manager_data([0, 1], 1)) | change
    path = write_csv(tmp_path / "swelancer_tasks.csv", OLD_HEADER, [bad, good])
    tasks, errors = load_file(path)
    assert [t.instance_id for t in tasks] == ["2-manager-0"]
    assert len(errors) == 1 and message in errors[0].message, errors
    assert errors[0].where.startswith("line 2")


def test_duplicates_keep_the_first_and_other_files_are_not_claimed(tmp_path: Path) -> None:
    rows = [manager_row("2-manager-0", p, manager_data([0, 1], 1)) for p in ("1", "2")]
    path = write_csv(tmp_path / "swelancer_tasks.csv", OLD_HEADER, rows)
    tasks, errors = load_file(path)
    assert [t.value_usd for t in tasks] == [1.0] and "duplicate" in errors[0].message
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    assert format_of(other) is None
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_text(json.dumps({"instance_id": "a__b-1", "repo": "a/b", "base_commit": "c"}))
    assert format_of(jsonl) is None and len(load_file(jsonl)[0]) == 1


def test_eval_inputs_read_a_swelancer_file(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "swelancer_tasks_lite.csv",
        OLD_HEADER,
        [manager_row("2-manager-0", "1000", manager_data([0, 1], 1))],
    )
    tasks, errors, repos, label = load_dataset(str(path), tmp_path / "cache")
    assert [t.kind for t in tasks] == ["pick"] and not errors
    assert label == str(path.resolve()) and repos is None


@pytest.mark.parametrize("base", [f"{COMMIT}^", f"{COMMIT}~2", f"{COMMIT}^^", "v1.0^"])
def test_a_base_commit_may_be_an_ancestor(base: str) -> None:
    assert Task(instance_id="a", repo="a/b", base_commit=base).base_commit == base


@pytest.mark.parametrize("base", [f"{COMMIT}^{{tree}}", "^", f"{COMMIT}^..x", f"{COMMIT}@{{1}}"])
def test_other_revisions_are_refused(base: str) -> None:
    with pytest.raises(ValueError, match="is not a commit id"):
        Task(instance_id="a", repo="a/b", base_commit=base)


def test_scores_give_dollars_per_split(tmp_path: Path) -> None:
    from swebounty.report.table import render_breakdowns
    from swebounty.scoring import score_run
    from swebounty.tasks import Submission

    rows = [manager_row(f"{n}-manager-0", price, manager_data([0, 1], correct), set=split)
            for n, price, correct, split in ((1, "1000", 0, "diamond"), (2, "4000", 1, "diamond"),
                                             (3, "500", 0, "nondiamond"))]  # fmt: skip
    tasks, _ = load_file(write_csv(tmp_path / "all_swelancer_tasks.csv", NEW_HEADER, rows))
    first = [Submission(instance_id=t.instance_id, model_name_or_path="first", pick=0)
             for t in tasks]  # fmt: skip
    from swebounty.grading import grade

    verdicts = [grade(t, s, outcomes=None, exit_code=None, patch_method=None)
                for t, s in zip(tasks, first, strict=True)]  # fmt: skip
    score = score_run(tasks, first, verdicts, resamples=10)
    diamond, nondiamond = score.by_split["diamond"], score.by_split["nondiamond"]
    assert (diamond.dollars.earned_usd, diamond.dollars.available_usd) == (1000.0, 5000.0)
    assert (nondiamond.dollars.earned_usd, nondiamond.dollars.available_usd) == (500.0, 500.0)
    titles = [str(t.title) for t in render_breakdowns([score])]
    assert any("split" in t for t in titles)
