"""Records: read one at a time with their locations, checked field by field, written back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swebounty.records import bounded_text, read_records, safe_id, undecodable_ids, write_jsonl
from swebounty.tasks import Submission


def test_each_shape_yields_records_with_where_they_came_from(tmp_path: Path) -> None:
    listed = tmp_path / "a.json"
    listed.write_text(json.dumps([{"x": 1}, {"x": 2}]))
    keyed = tmp_path / "b.json"
    keyed.write_text(json.dumps({"t-1": {"model_patch": "p"}}))
    lines = tmp_path / "c.jsonl"
    lines.write_text('{"x": 1}\n\nnot json\n')
    assert list(read_records(listed)) == [("item 0", {"x": 1}), ("item 1", {"x": 2})]
    assert list(read_records(keyed)) == [("key 't-1'", {"instance_id": "t-1", "model_patch": "p"})]
    [first, (where, bad)] = list(read_records(lines))
    assert first == ("line 1", {"x": 1})
    assert where == "line 3" and isinstance(bad, json.JSONDecodeError)  # reported, not raised


def test_undecodable_lines_are_named_by_their_instance_id() -> None:
    raw = b'{"instance_id": "ok"}\n{"instance_id": "bad", "model_patch": "\xff"}\n\xfe\n'
    assert undecodable_ids(raw) == ["bad", "?"]
    assert undecodable_ids(b'{"instance_id": "ok"}\n') == []


def test_fields_are_checked() -> None:
    assert safe_id("a-1.2_b+c") == "a-1.2_b+c"
    with pytest.raises(ValueError, match="not a safe name"):
        safe_id("../x")
    with pytest.raises(ValueError, match="over the 3-byte limit"):
        bounded_text("ééé", 3, "title")
    with pytest.raises(ValueError, match="not valid UTF-8"):
        bounded_text("\ud800", 10, "title")


def test_written_records_read_back(tmp_path: Path) -> None:
    path = tmp_path / "subs.jsonl"
    subs = [Submission(instance_id="t-1", model_patch="p"), Submission(instance_id="t-2")]
    write_jsonl(path, subs)
    back = [Submission.model_validate(raw) for _, raw in read_records(path)]
    assert back == subs
