"""An evaluation's inputs: submissions from objects or files, numbered into attempts; datasets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swebounty.evalinputs import EvalInputError, load_dataset, load_submissions, number_attempts
from swebounty.tasks import Submission


def test_predictions_without_an_attempt_are_numbered_per_task() -> None:
    subs = [
        Submission(instance_id="a"),
        Submission(instance_id="b"),
        Submission(instance_id="a", attempt=2),  # explicit: kept, and skipped by the numbering
        Submission(instance_id="a"),
    ]
    assert [(s.instance_id, s.attempt) for s in number_attempts(subs)] == [
        ("a", 1),
        ("b", 1),
        ("a", 2),
        ("a", 3),
    ]


def test_submissions_from_files_keep_their_source_and_name_the_kind(tmp_path: Path) -> None:
    first, second = tmp_path / "model-x.jsonl", tmp_path / "more.jsonl"
    first.write_text(json.dumps({"instance_id": "a", "model_patch": ""}) + "\n")
    second.write_text(json.dumps({"instance_id": "a", "model_patch": ""}) + "\nnot json\n")
    subs, errors, by_file, kind = load_submissions([], [first, second])
    assert [s.attempt for s in subs] == [1, 2]
    assert [source for source, _ in by_file] == [str(first), str(second)]
    assert kind == "model-x"
    assert [e.source for e in errors] == [str(second)]


def test_submissions_that_cannot_work_are_one_input_error(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="not both"):
        load_submissions([], [Submission(instance_id="a"), tmp_path / "p.jsonl"])
    with pytest.raises(EvalInputError, match="no submissions"):
        load_submissions([], [])
    with pytest.raises(EvalInputError, match="does not exist"):
        load_submissions([], tmp_path / "missing.jsonl")


def test_a_missing_dataset_file_says_what_a_dataset_can_be(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="Hugging Face name"):
        load_dataset(str(tmp_path / "nope.jsonl"), tmp_path)
