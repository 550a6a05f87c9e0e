"""Datasets and predictions in every shape SWE-bench tooling produces."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import swebounty
from swebounty.tasks import (
    RecordError,
    Submission,
    Task,
    empty_submissions,
    first_of_each,
    gold_submissions,
    load_predictions,
    load_tasks,
)

RAW = {
    "repo": "octo/lib",
    "instance_id": "octo__lib-1",
    "base_commit": "a" * 40,
    "patch": "diff --git a/x b/x\n",
    "test_patch": "diff --git a/t b/t\n",
    "problem_statement": "it breaks",
    "hints_text": None,
    "created_at": "2024-05-01T10:00:00Z",
    "version": "1.0",
    "FAIL_TO_PASS": '["tests/test_a.py::test_one"]',
    "PASS_TO_PASS": '["tests/test_a.py::test_two", "tests/test_a.py::test_p[a b"]',
    "environment_setup_commit": "b" * 40,
    "patch_files": ["x"],
    "patch_diff_details": {"x": {"diffs": []}},
}


def _second() -> dict[str, object]:
    raw = dict(RAW, instance_id="octo__lib-2")
    raw["FAIL_TO_PASS"] = ["tests/test_b.py::test_list_form"]
    raw["PASS_TO_PASS"] = []
    return raw


def _check(tasks: list[Task]) -> None:
    assert [t.instance_id for t in tasks] == ["octo__lib-1", "octo__lib-2"]
    first, second = tasks
    assert first.FAIL_TO_PASS == ["tests/test_a.py::test_one"]
    assert first.PASS_TO_PASS[1] == "tests/test_a.py::test_p[a b"
    assert second.FAIL_TO_PASS == ["tests/test_b.py::test_list_form"]
    assert first.hints_text == ""
    assert first.created_at is not None and first.created_at.year == 2024
    # extra fields are tolerated and kept
    assert first.model_extra is not None and first.model_extra["patch_files"] == ["x"]
    assert first.owner_name == "octo__lib"


def test_json_list(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps([RAW, _second()]))
    tasks, errors = load_tasks(path)
    assert errors == []
    _check(tasks)


def test_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(RAW) + "\n\n" + json.dumps(_second()) + "\n")
    tasks, errors = load_tasks(path)
    assert errors == []
    _check(tasks)


def test_parquet(tmp_path: Path) -> None:
    rows = [dict(RAW), _second()]
    for row in rows:  # parquet columns need one type: SWE-bench's parquet keeps JSON strings
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            if isinstance(row[key], list):
                row[key] = json.dumps(row[key])
        row.pop("patch_diff_details")
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    tasks, errors = load_tasks(path)
    assert errors == []
    assert [t.instance_id for t in tasks] == ["octo__lib-1", "octo__lib-2"]
    assert tasks[1].FAIL_TO_PASS == ["tests/test_b.py::test_list_form"]


def test_malformed_line_and_missing_field_are_reported_and_skipped(tmp_path: Path) -> None:
    bad = {k: v for k, v in RAW.items() if k != "base_commit"}
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join([json.dumps(RAW), "{not json", json.dumps(bad), json.dumps(RAW)]))
    tasks, errors = load_tasks(path)
    assert [t.instance_id for t in tasks] == ["octo__lib-1"]
    messages = " | ".join(f"{e.where}: {e.message}" for e in errors)
    assert "line 2: not JSON" in messages
    assert "line 3: base_commit" in messages
    assert "duplicate instance_id" in messages


def test_first_of_each_keeps_order_and_reports_every_later_copy(tmp_path: Path) -> None:
    """What every dataset format's loader does with repeated ids (tasks.py and formats.py)."""
    ids = ["octo__lib-1", "octo__lib-2", "octo__lib-1", "octo__lib-3", "octo__lib-1"]
    tasks = [
        Task.model_validate(RAW | {"instance_id": i, "version": str(n)}) for n, i in enumerate(ids)
    ]
    errors: list[RecordError] = []
    kept = first_of_each(tasks, errors, tmp_path / "d.jsonl")
    assert [(t.instance_id, t.version) for t in kept] == [
        ("octo__lib-1", "0"), ("octo__lib-2", "1"), ("octo__lib-3", "3")
    ]  # fmt: skip
    assert [(e.where, e.source) for e in errors] == [("octo__lib-1", str(tmp_path / "d.jsonl"))] * 2
    assert all(e.message == "duplicate instance_id; the first one is used" for e in errors)


def test_missing_dataset_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_tasks(tmp_path / "nope.json")


PREDS = [
    {"instance_id": "octo__lib-1", "model_name_or_path": "m", "model_patch": "diff"},
    {"instance_id": "octo__lib-2", "model_name_or_path": "m", "model_patch": None},
]


@pytest.mark.parametrize("shape", ["jsonl", "list", "dict"])
def test_prediction_shapes(tmp_path: Path, shape: str) -> None:
    if shape == "jsonl":
        path = tmp_path / "p.jsonl"
        path.write_text("\n".join(json.dumps(p) for p in PREDS))
    elif shape == "list":
        path = tmp_path / "p.json"
        path.write_text(json.dumps(PREDS))
    else:
        path = tmp_path / "p.json"
        path.write_text(json.dumps({p["instance_id"]: p for p in PREDS}))
    subs, errors = load_predictions(path)
    assert errors == []
    assert [(s.instance_id, s.model_patch) for s in subs] == [
        ("octo__lib-1", "diff"),
        ("octo__lib-2", None),
    ]
    assert not subs[0].is_empty and subs[1].is_empty


def test_dict_predictions_without_instance_id_inside(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"octo__lib-1": {"model_patch": "d", "model_name_or_path": "m"}}))
    subs, errors = load_predictions(path)
    assert errors == [] and subs[0].instance_id == "octo__lib-1"


def test_non_utf8_patch_is_a_record_error(tmp_path: Path) -> None:
    good = json.dumps(PREDS[0]).encode()
    bad = b'{"instance_id": "octo__lib-2", "model_patch": "caf\xe9"}'
    path = tmp_path / "p.jsonl"
    path.write_bytes(good + b"\n" + bad + b"\n")
    subs, errors = load_predictions(path)
    assert [s.instance_id for s in subs] == ["octo__lib-1"]
    assert len(errors) == 1 and errors[0].where == "octo__lib-2"
    assert "UTF-8" in errors[0].message


def test_gold_and_empty_submissions(tmp_path: Path) -> None:
    tasks = [Task.model_validate(RAW)]
    (gold,) = gold_submissions(tasks)
    (empty,) = empty_submissions(tasks)
    assert gold.model_patch == RAW["patch"] and not gold.is_empty
    assert empty.is_empty and empty.model_name_or_path == "empty"


def test_submission_extra_fields_kept() -> None:
    sub = Submission.model_validate(
        {"instance_id": "x", "model_patch": "d", "attempt": 3, "cost_usd": 0.5, "note": "hi"}
    )
    assert sub.attempt == 3 and sub.cost_usd == 0.5
    assert sub.model_extra == {"note": "hi"}


def test_public_api_is_exactly_all() -> None:
    public = {name for name in dir(swebounty) if not name.startswith("_")}
    # Submodules are attributes of the package once anything imported them (this test, another
    # test, the package itself): they are not API.
    public -= {name for name in public if isinstance(getattr(swebounty, name), ModuleType)}
    assert public == set(swebounty.__all__)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"instance_id": "../../etc/x", "model_patch": "p"}, "not a safe name"),
        ({"instance_id": "a/b", "model_patch": "p"}, "not a safe name"),
        ({"instance_id": "ok-1", "attempt": 10**20, "model_patch": "p"}, "attempt"),
        ({"instance_id": "ok-1", "attempt": 0, "model_patch": "p"}, "attempt"),
        ({"instance_id": "ok-1", "model_patch": "caf\ud800"}, "not valid UTF-8"),
        ({"instance_id": "ok-1", "model_patch": "x" * (6 << 20)}, "over the"),
        ({"instance_id": "ok-1", "model_patch": "p", "cost_usd": float("nan")}, "cost_usd"),
        ({"instance_id": "ok-1", "model_patch": "p", "note": "\udcff"}, "not valid UTF-8"),
        ({"instance_id": "ok-1", "model_patch": "p", "pick": -1}, "pick"),
    ],
)
def test_hostile_prediction_records_are_record_errors_and_the_rest_loads(
    tmp_path: Path, record: dict[str, object], message: str
) -> None:
    path = tmp_path / "preds.jsonl"
    good = {"instance_id": "good-1", "model_patch": "diff"}
    path.write_text(json.dumps(record) + "\n" + json.dumps(good) + "\n")  # \ud800 stays escaped
    subs, errors = load_predictions(path)
    assert [s.instance_id for s in subs] == ["good-1"]
    assert len(errors) == 1 and message in errors[0].message, errors


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("instance_id", "x/../y"),
        ("repo", "../evil"),
        ("repo", "a/.."),
        ("base_commit", "--upload-pack=x"),
    ],
)
def test_hostile_task_fields_are_refused(field: str, value: str) -> None:
    fields = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "a" * 40, field: value}
    with pytest.raises(ValueError):
        Task.model_validate(fields)


def _msb(**fields: object) -> dict[str, object]:
    """A Multi-SWE-bench record (org, repo, number, base, fix_patch) with `fields` changed."""
    record = {"org": "o", "repo": "r", "number": 1, "base": {"sha": "a" * 40}, "fix_patch": ""}
    return {k: v for k, v in {**record, **fields}.items() if v is not ...}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (dict(RAW, instance_id="../../etc/x"), "not a safe name"),
        (dict(RAW, instance_id="a\x00b"), "not a safe name"),
        (dict(RAW, repo="a/.."), "owner/name"),
        (dict(RAW, base_commit="--upload-pack=touch /tmp/x"), "not a commit id"),
        (dict(RAW, repo_url="ext::sh -c touch% /tmp/x"), "repo_url"),
        (dict(RAW, repo_url="--upload-pack=touch /tmp/x"), "repo_url"),
        (dict(RAW, repo_url="https://example.org/o/r.git\n--config"), "repo_url"),
        (dict(RAW, FAIL_TO_PASS=5), "FAIL_TO_PASS"),
        (dict(RAW, FAIL_TO_PASS="[not json"), "FAIL_TO_PASS"),
        (dict(RAW, problem_statement="caf\ud800"), "not valid UTF-8"),
        (dict(RAW, env_spec={"python": "3.11", "run_first": "curl x | sh"}), "env_spec"),
        (_msb(base="main"), "Multi-SWE-bench"),
        (_msb(number=...), "Multi-SWE-bench"),
        (_msb(fix_patch=5), "Multi-SWE-bench"),
        (_msb(f2p_tests=5), "Multi-SWE-bench"),
        ([RAW], "expected a JSON object"),
    ],
)
def test_a_hostile_dataset_record_is_a_record_error_and_the_rest_loads(
    tmp_path: Path, record: object, message: str
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(_second()) + "\n")  # \ud800 escaped
    tasks, errors = load_tasks(path)
    assert [t.instance_id for t in tasks] == ["octo__lib-2"]
    assert len(errors) == 1 and errors[0].where == "line 1", errors
    assert message in errors[0].message, errors


@pytest.mark.parametrize("url", ["https://github.com/o/r.git", "/srv/git/r.git", "git@h:o/r"])
def test_repo_urls_git_clones_from_are_accepted(url: str) -> None:
    assert Task.model_validate(dict(RAW, repo_url=url)).repo_url == url


def test_json_nested_too_deeply_is_a_record_error_not_a_crash(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    lines = tmp_path / "lines.jsonl"
    lines.write_text(deep + "\n" + json.dumps(_second()) + "\n")
    tasks, errors = load_tasks(lines)
    assert [t.instance_id for t in tasks] == ["octo__lib-2"]
    assert [e.where for e in errors] == ["line 1"] and "too deeply" in errors[0].message
    subs, errors = load_predictions(lines)
    assert len(subs) == 1 and [e.where for e in errors] == ["line 1"]
    whole = tmp_path / "whole.json"
    whole.write_text(deep)
    tasks, errors = load_tasks(whole)
    assert tasks == [] and [e.where for e in errors] == ["file"]
