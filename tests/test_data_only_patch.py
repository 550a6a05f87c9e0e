"""A test patch that only changes the data a test reads (issue 25): the tests FAIL_TO_PASS
names are run, on a small repo this file builds, through the real evaluation path and sandbox
(`network`: the environment comes from the package index)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from repo_helpers import BUGGY_PROJECT, git_env, git_repo
from swebounty.sandbox import bwrap_available

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
WHEN = "2024-03-01T12:00:00+00:00"

TESTS = """\
import json
import pathlib

from proj.a import double

CASES = json.loads((pathlib.Path(__file__).parent / "data" / "cases.json").read_text())


def test_cases():
    for x, want in CASES:
        assert double(x) == want


def test_zero():
    assert double(0) == 0 or True
"""


def git(repo: Path, *argv: str) -> str:
    return subprocess.run(
        ["git", *argv], cwd=repo, env=git_env(WHEN), check=True, capture_output=True, text=True
    ).stdout


def patch_of(repo: Path, rel: str, text: str) -> str:
    (repo / rel).write_text(text)
    diff = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    return diff


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_a_test_patch_of_data_only_runs_the_tests_fail_to_pass_names(tmp_path: Path) -> None:
    from swebounty.evaluation import evaluate

    files = {**BUGGY_PROJECT, "tests/test_a.py": TESTS, "tests/data/cases.json": "[[1, 3]]\n"}
    repo = git_repo(tmp_path / "repos" / "small__proj", files, when=WHEN)
    fix = "def double(x):\n    return x * 2\n\n\ndef name():\n    return 'proj'\n"
    record = {
        "instance_id": "small__proj-1",
        "repo": "small/proj",
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "problem_statement": "double adds",
        "patch": patch_of(repo, "proj/a.py", fix),
        # The fix changes what the old case expected: only the data file changes.
        "test_patch": patch_of(repo, "tests/data/cases.json", "[[1, 2], [3, 6]]\n"),
        "FAIL_TO_PASS": json.dumps(["tests/test_a.py::test_cases"]),
        "PASS_TO_PASS": json.dumps(["tests/test_a.py::test_zero"]),
        "created_at": "2024-03-01T12:00:00Z",
    }
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    kw = {"repos_dir": tmp_path / "repos", "cache_dir": tmp_path / "cache"}
    gold = evaluate(dataset, "gold", run_id="gold", runs_dir=tmp_path / "runs", **kw)
    assert [v.status for v in gold] == ["resolved"], gold[0].reason
    empty = evaluate(dataset, "empty", run_id="empty", runs_dir=tmp_path / "runs", **kw)
    assert [v.status for v in empty] == ["unresolved"], empty[0].reason
