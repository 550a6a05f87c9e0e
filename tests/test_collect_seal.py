"""Sealing a dataset and verifying a reveal against its commitment."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from collect_helpers import assert_public_file_hides_the_answers
from swebounty.cli.collect import register
from swebounty.collect.seal import (
    CANARY_PREFIX,
    HIDDEN_FIELDS,
    Manifest,
    SealError,
    seal,
    verify_seal,
)
from swebounty.records import write_jsonl
from swebounty.tasks import Task


def _tasks() -> list[Task]:
    return [
        Task(
            instance_id=f"{repo.replace('/', '__')}-{n}",
            repo=repo,
            base_commit="c" * 40,
            problem_statement=f"problem {n} ✓",
            patch=f"patch {n}",
            test_patch=f"tests {n}",
            FAIL_TO_PASS=[f"t.py::test_{n}"],
            PASS_TO_PASS=["t.py::test_ok"],
            created_at=datetime(2024, 3, n, tzinfo=timezone.utc),
            value_usd=100.0 * n,
            value_source="estimate",
        )
        for repo, n in [("b/two", 3), ("a/one", 1), ("a/one", 2)]
    ]


@pytest.fixture
def sealed(tmp_path: Path) -> tuple[Manifest, Path]:
    manifest = seal(_tasks(), tmp_path, "march", since=datetime(2024, 3, 1, tzinfo=timezone.utc))
    return manifest, tmp_path


def test_seal_writes_commitment_public_file_and_canary(sealed: tuple[Manifest, Path]) -> None:
    manifest, d = sealed
    assert manifest.tasks == 3 and manifest.counts_per_repo == {"a/one": 2, "b/two": 1}
    assert manifest.value_usd_total == 600.0
    assert manifest.first_created_at == datetime(2024, 3, 1, tzinfo=timezone.utc)
    assert manifest.since == datetime(2024, 3, 1, tzinfo=timezone.utc)
    on_disk = Manifest.model_validate_json((d / "march.manifest.json").read_text())
    assert on_disk.sha256 == manifest.sha256 and len(manifest.sha256) == 64
    sealed_lines = [json.loads(x) for x in (d / "march.sealed.jsonl").read_text().splitlines()]
    assert [r["instance_id"] for r in sealed_lines] == ["a__one-1", "a__one-2", "b__two-3"]
    assert all(r["canary"] == CANARY_PREFIX + manifest.canary for r in sealed_lines)
    public = [json.loads(x) for x in (d / "march.public.jsonl").read_text().splitlines()]
    assert all(not (set(HIDDEN_FIELDS) & set(r)) for r in public)
    assert all(r["canary"].endswith(manifest.canary) for r in public)
    assert public[0]["problem_statement"] == "problem 1 ✓"
    assert verify_seal(d / "march.manifest.json") == []


def test_public_file_holds_only_what_an_agent_may_see(tmp_path: Path) -> None:
    # Shaped like the collect pipeline's tasks: everything that points at the fix included.
    tasks = [
        t.model_copy(
            update={
                "fix_commit": f"{n}" * 40,
                "pr_number": 4200 + n,
                "issue_numbers": [17 + n],
                "code_files": [f"src/module_{n}.py"],
                "test_files": [f"tests/test_module_{n}.py"],
                "repo_url": f"/home/someone/clones/{t.repo}",
                "environment_setup_commit": "e" * 40,
                "merged_at": "2024-03-09T10:00:00+00:00",
                "hints_text": "try the parser",
            }
        )
        for n, t in enumerate(_tasks(), 1)
    ]
    seal(tasks, tmp_path, "x")
    assert_public_file_hides_the_answers(tmp_path / "x.public.jsonl", tmp_path / "x.sealed.jsonl")
    public = [json.loads(line) for line in (tmp_path / "x.public.jsonl").read_text().splitlines()]
    assert public[0]["hints_text"] == "try the parser"
    assert {"problem_statement", "repo", "base_commit", "created_at", "value_usd"} <= set(public[0])
    assert verify_seal(tmp_path / "x.manifest.json") == []


def test_reformatted_reveal_still_verifies(sealed: tuple[Manifest, Path], tmp_path: Path) -> None:
    _, d = sealed
    records = [json.loads(x) for x in (d / "march.sealed.jsonl").read_text().splitlines()]
    revealed = tmp_path / "revealed.jsonl"
    revealed.write_text("".join(json.dumps(r, indent=None) + "\n" for r in reversed(records)))
    assert verify_seal(d / "march.manifest.json", revealed) == []


def test_tampering_is_detected(sealed: tuple[Manifest, Path], tmp_path: Path) -> None:
    _, d = sealed
    records = [json.loads(x) for x in (d / "march.sealed.jsonl").read_text().splitlines()]
    records[0]["FAIL_TO_PASS"] = []
    del records[1]["canary"]
    revealed = tmp_path / "tampered.jsonl"
    revealed.write_text("".join(json.dumps(r) + "\n" for r in records))
    problems = verify_seal(d / "march.manifest.json", revealed)
    assert any("commitment" in p for p in problems)
    assert any("lack the canary" in p for p in problems)
    assert any("minus hidden fields" in p for p in problems)
    short = tmp_path / "short.jsonl"
    short.write_text(json.dumps(records[2]) + "\n")
    assert any(
        "1 tasks revealed, 3 sealed" in p for p in verify_seal(d / "march.manifest.json", short)
    )


def test_a_public_file_with_hidden_fields_is_reported(sealed: tuple[Manifest, Path]) -> None:
    _, d = sealed
    public = d / "march.public.jsonl"
    lines = public.read_text().splitlines()
    first = json.loads(lines[0])
    first["patch"] = "leaked"
    first["fix_commit"] = "f" * 40
    public.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    problems = verify_seal(d / "march.manifest.json")
    assert any("contains hidden fields (fix_commit, patch)" in p for p in problems)


def test_seal_refuses_empty_and_duplicate_datasets(tmp_path: Path) -> None:
    with pytest.raises(SealError, match="no tasks"):
        seal([], tmp_path, "x")
    with pytest.raises(SealError, match="duplicate"):
        seal(_tasks() + _tasks()[:1], tmp_path, "x")


def test_cli_seal_and_verify(tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)
    tasks_file = tmp_path / "tasks.jsonl"
    write_jsonl(tasks_file, _tasks())
    runner = CliRunner()
    result = runner.invoke(app, ["seal", str(tasks_file), "--since", "2024-03-01"])
    assert result.exit_code == 0, result.output
    manifest = tmp_path / "tasks.manifest.json"
    assert runner.invoke(app, ["verify-seal", str(manifest)]).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text((tmp_path / "tasks.sealed.jsonl").read_text().replace("problem 1", "problem 9"))
    result = runner.invoke(app, ["verify-seal", str(manifest), str(bad)])
    assert result.exit_code == 1 and "commitment" in result.output
    assert runner.invoke(app, ["seal", str(tmp_path / "none.jsonl")]).exit_code == 2
