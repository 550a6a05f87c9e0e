"""Where a run could differ from SWE-bench's Docker harness, on small repos the tests build,
through the real evaluation path (`evaluate`, bwrap). Needs the package index (`network`).

- A 2014 project gets the tools of its interpreter's first year: pytest 3.3, which kept its
  report classes in `_pytest.runner` (`_pytest.reports` came with 3.7). The guard must grade
  it, not end the run without results.
- SWE-bench's tests ran in /testbed with their temp files in /tmp: the two share no top-level
  directory, which some tests depend on (docutils then writes an included file's path as an
  absolute one, not as ../../../pytest-of-USER/...).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
import uuid
from pathlib import Path

import pytest

from repo_helpers import git_env
from swebounty.evaluation import evaluate
from swebounty.sandbox import bwrap_available
from swebounty.verdicts import Verdict

pytestmark = [
    pytest.mark.network,
    pytest.mark.usefixtures("index_reachable"),  # tests/conftest.py
    pytest.mark.skipif(not bwrap_available(), reason="bwrap cannot run here"),
]


def git(repo: Path, when: str, *argv: str) -> str:
    return subprocess.run(
        ["git", *argv], cwd=repo, env=git_env(when), check=True, capture_output=True, text=True
    ).stdout


def diff_of(repo: Path, rel: str, text: str) -> str:
    """The patch that writes `text` to the tracked file `rel`, made with git and undone."""
    (repo / rel).write_text(text)
    patch = git(repo, "", "diff", "--", rel)
    git(repo, "", "checkout", "-q", "--", ".")
    return patch


def run_task(
    tmp_path: Path,
    when: str,
    base: dict[str, str],
    fix: tuple[str, str],
    tests: str,
    f2p: str,
    cache_dir: Path | None = None,
) -> tuple[Verdict, Verdict]:
    """(gold, empty) verdicts of a task: `base` committed at `when`, the gold patch writes
    `fix` (path, text), the test patch rewrites tests/test_a.py to `tests`, whose `f2p` must
    go from failing to passing and test_other keep passing."""
    repo = tmp_path / "repos" / "small__proj"
    for rel, text in base.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(textwrap.dedent(text))
    git(repo, when, "init", "-q")
    git(repo, when, "add", "-A")
    git(repo, when, "commit", "-qm", "base")
    task = {
        "instance_id": "small__proj-1",
        "repo": "small/proj",
        "base_commit": git(repo, when, "rev-parse", "HEAD").strip(),
        "problem_statement": "p",
        "created_at": when,
        "patch": diff_of(repo, *fix),
        "test_patch": diff_of(repo, "tests/test_a.py", tests),
        "FAIL_TO_PASS": json.dumps([f"tests/test_a.py::{f2p}"]),
        "PASS_TO_PASS": json.dumps(["tests/test_a.py::test_other"]),
    }
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(task) + "\n")
    cache_dir = cache_dir or tmp_path / "cache"
    where = {"repos_dir": repo.parent, "cache_dir": cache_dir, "runs_dir": tmp_path / "r"}
    gold = evaluate(dataset, "gold", **where)  # type: ignore[arg-type]
    empty = evaluate(dataset, "empty", **where)  # type: ignore[arg-type]
    return gold[0], empty[0]


OLD_BASE = {
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
    "tests/test_a.py": "import oldproj\n\n\ndef test_other():\n    assert oldproj.OTHER == 1\n",
}


def test_a_2014_project_is_graded_on_pytest_before_3_7(tmp_path: Path) -> None:
    tests = OLD_BASE["tests/test_a.py"] + "\n\ndef test_three():\n    assert oldproj.VALUE == 3\n"
    fix = ("oldproj/__init__.py", "VALUE = 3\nOTHER = 1\n")
    gold, empty = run_task(
        tmp_path, "2014-03-12T12:00:00+00:00", OLD_BASE, fix, tests, "test_three"
    )
    assert gold.status == "resolved", gold.reason
    assert empty.status == "unresolved", empty.reason
    output = (Path(str(gold.log_dir)) / "test_output.txt").read_text()
    assert "pytest-3." in output and "pytest-3.7" not in output  # the era this test is about


APART = """
    import os
    import tempfile

    from proj import top


    def test_other():
        assert top("/a/b") == "a"


    def test_apart():
        # What docutils' relative_path checks before writing a path relative to the cwd.
        assert top(os.getcwd()) != top(tempfile.gettempdir())
    """


def test_the_workspace_and_the_temp_dir_share_no_top_level_directory(tmp_path: Path) -> None:
    base = {
        "pyproject.toml": """
            [project]
            name = "proj"
            version = "1.0"
            """,
        "proj/__init__.py": "def top(path):\n    return None\n",
        "tests/test_a.py": "",
    }
    fix = ("proj/__init__.py", "def top(path):\n    return path.split('/')[1]\n")
    # The default cache is in the user's home; this test's tmp_path is in the temp directory.
    cache = Path.home() / ".cache" / f"swebounty-test-{uuid.uuid4().hex[:8]}"
    try:
        gold, empty = run_task(
            tmp_path, "2024-03-12T12:00:00+00:00", base, fix, textwrap.dedent(APART), "test_apart",
            cache_dir=cache,
        )  # fmt: skip
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", str(cache)], check=False)  # read-only envs
        shutil.rmtree(cache)
    assert gold.status == "resolved", gold.reason
    assert empty.status == "unresolved", empty.reason
