"""A whole-dataset run a user can leave alone (issue 25): one task whose environment cannot be
built is an `error` verdict for that task only, the others are evaluated beside it, and the
run's summary puts the miss in its class. On small repos this file builds, through the real
evaluation path and sandbox (`network`: environments come from the package index)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repo_helpers import BUGGY_PROJECT, diff_of, git, git_repo
from swebounty.cli import app
from swebounty.sandbox import bwrap_available

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
WHEN = "2024-03-01T12:00:00+00:00"
TESTS = "from proj.a import double\n\n\ndef test_fixed():\n    assert double(3) == 6\n"
FIX = "def double(x):\n    return x * 2\n\n\ndef name():\n    return 'proj'\n"


def task(repos: Path, name: str, files: dict[str, str]) -> dict[str, str]:
    repo = git_repo(repos / f"small__{name}", files, when=WHEN)
    return {
        "instance_id": f"small__{name}-1",
        "repo": f"small/{name}",
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "problem_statement": "double adds",
        "patch": diff_of(repo, {"proj/a.py": FIX}),
        "test_patch": diff_of(repo, {"tests/test_a.py": TESTS}),
        "FAIL_TO_PASS": json.dumps(["tests/test_a.py::test_fixed"]),
        "PASS_TO_PASS": "[]",
        "created_at": "2024-03-01T12:00:00Z",
    }


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_a_build_that_fails_stops_only_its_own_task(tmp_path: Path) -> None:
    repos = tmp_path / "repos"
    broken = dict(BUGGY_PROJECT)
    # The project itself needs a package no index has: in every plan, nothing to drop.
    broken["pyproject.toml"] = broken["pyproject.toml"].replace(
        'requires-python = ">=3.8"\n',
        'requires-python = ">=3.8"\ndependencies = ["zz-swebounty-no-such-package>=1"]\n',
    )
    records = [task(repos, "fine", BUGGY_PROJECT), task(repos, "broken", broken)]
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    argv = ["eval", str(data), "--gold", "--run-id", "g", "--workers", "2"]
    argv += ["--repos-dir", str(repos), "--home", str(tmp_path / "home")]
    result = CliRunner().invoke(app, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "home" / "runs" / "g" / "report.json").read_text())
    assert report["resolved_ids"] == ["small__fine-1"]
    assert report["error_ids"] == ["small__broken-1"]
    assert report["misses"] == [
        {"class": "environment not built (resolve)", "count": 1, "instances": ["small__broken-1"]}
    ]
    assert "not resolved, by class" in result.output
