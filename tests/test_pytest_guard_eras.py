"""The guard on the test runners of older eras, through the real evaluation path.

A 2014 project gets the tools of its interpreter's first year: pytest 3.3, which kept its
report classes in `_pytest.runner` (`_pytest.reports` came with 3.7). The guard must grade it,
not end the run without results. Needs the package index (marked `network`) and bwrap.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import httpx
import pytest

from swebounty.evaluation import evaluate
from swebounty.sandbox import bwrap_available

BASE = {
    "setup.py": """
        from setuptools import setup
        setup(
            name="oldproj",
            version="2.3.0",
            packages=["oldproj"],
            classifiers=["Programming Language :: Python :: 3.3"],
        )
        """,
    "requirements.txt": "pytest==2.3.4\n",
    "oldproj/__init__.py": "VALUE = 2\nOTHER = 1\n",
    "tests/test_old.py": "import oldproj\n\n\ndef test_other():\n    assert oldproj.OTHER == 1\n",
}
NEW_TEST = BASE["tests/test_old.py"] + "\n\ndef test_three():\n    assert oldproj.VALUE == 3\n"
WHEN = "2014-03-12T12:00:00+00:00"


def git(repo: Path, *argv: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": WHEN, "GIT_COMMITTER_DATE": WHEN}
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv]
    return subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def diff_of(repo: Path, rel: str, text: str) -> str:
    """The patch that writes `text` to the tracked file `rel`, made with git and undone."""
    (repo / rel).write_text(text)
    patch = git(repo, "diff", "--", rel)
    git(repo, "checkout", "-q", "--", ".")
    return patch


@pytest.mark.network
@pytest.mark.skipif(not bwrap_available(), reason="bwrap cannot run here")
def test_a_2014_project_is_graded_on_pytest_before_3_7(tmp_path: Path) -> None:
    try:
        httpx.head("https://pypi.org/simple/pip/", timeout=10, follow_redirects=True)
    except httpx.HTTPError as exc:
        pytest.skip(f"the package index is unreachable here: {exc}")
    repo = tmp_path / "repos" / "old__proj"
    for rel, text in BASE.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(textwrap.dedent(text))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    task = {
        "instance_id": "old__proj-1",
        "repo": "old/proj",
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "problem_statement": "VALUE should be 3",
        "created_at": WHEN,
        "patch": diff_of(repo, "oldproj/__init__.py", "VALUE = 3\nOTHER = 1\n"),
        "test_patch": diff_of(repo, "tests/test_old.py", NEW_TEST),
        "FAIL_TO_PASS": json.dumps(["tests/test_old.py::test_three"]),
        "PASS_TO_PASS": json.dumps(["tests/test_old.py::test_other"]),
    }
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    where = {"repos_dir": repo.parent, "cache_dir": tmp_path / "cache"}
    gold = evaluate(dataset, "gold", runs_dir=tmp_path / "runs", **where)  # type: ignore[arg-type]
    assert [v.status for v in gold] == ["resolved"], gold[0].reason
    output = (Path(str(gold[0].log_dir)) / "test_output.txt").read_text()
    assert "pytest-3." in output and "pytest-3.7" not in output  # the era this test is about
    empty = evaluate(dataset, "empty", runs_dir=tmp_path / "runs", **where)  # type: ignore[arg-type]
    assert [v.status for v in empty] == ["unresolved"], empty[0].reason
