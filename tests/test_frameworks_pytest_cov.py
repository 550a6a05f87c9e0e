"""A repository whose pytest configuration adds `--cov ... --cov-fail-under=N`: coverage fails a
run whose tests all pass (pytest exits 1), so the harness turns pytest-cov off (`--no-cov`) and
grades the tests. Which environments get `--no-cov`, and a project graded end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repo_helpers import diff_of, git, git_repo
from swebounty.frameworks.pytest import coverage_plugin
from swebounty.sandbox import bwrap_available

BWRAP_OK, BWRAP_WHY = bwrap_available()
WHEN = "2024-03-01T12:00:00+00:00"

PROJECT = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = '
    '"setuptools.build_meta"\n\n[project]\nname = "calc"\nversion = "0.1"\n'
    'requires-python = ">=3.9"\n\n[project.optional-dependencies]\n'
    'test = ["pytest", "pytest-cov"]\n\n[tool.setuptools]\npackages = ["calc"]\n\n'
    "[tool.pytest.ini_options]\n"
    'addopts = "--cov=calc --cov-report=term --cov-fail-under=100"\n',
    # Half of it is never tested: coverage stays under 100 whatever the fix.
    "calc/__init__.py": "def double(x):\n    return x + 2\n\n\ndef unused(x):\n"
    "    if x:\n        return 1\n    return 2\n",
    "tests/test_double.py": "def test_true():\n    assert True\n",
}
HIDDEN = (
    "from calc import double\n\n\ndef test_true():\n    assert True\n\n\n"
    "def test_double():\n    assert double(3) == 6\n"
)


def test_no_cov_only_where_pytest_cov_has_it(tmp_path: Path) -> None:
    assert coverage_plugin("pytest==8.0.0\npytest-cov==4.1.0\n", tmp_path)
    assert coverage_plugin("Pytest_Cov==2.4.0\n", tmp_path)
    assert not coverage_plugin("pytest-cov==2.3.1\n", tmp_path)  # no --no-cov yet
    assert not coverage_plugin("pytest==8.0.0\npytest-covx==1.0\n", tmp_path)
    site = tmp_path / "lib" / "python3.11" / "site-packages" / "pytest_cov"
    assert not coverage_plugin("", tmp_path)
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    assert coverage_plugin("", tmp_path)  # an environment without a lock


@pytest.mark.sandbox
@pytest.mark.network  # pytest and pytest-cov come from the package index
@pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
def test_a_coverage_threshold_in_the_configuration_does_not_fail_a_passing_run(
    tmp_path: Path,
) -> None:
    from swebounty.evaluation import evaluate

    repo = git_repo(tmp_path / "repos" / "small__calc", PROJECT, when=WHEN)
    record = {
        "repo": "small/calc", "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "problem_statement": "double adds", "instance_id": "small__calc-1",
        "patch": diff_of(repo, {"calc/__init__.py": PROJECT["calc/__init__.py"].replace(
            "x + 2", "x * 2")}),
        "test_patch": diff_of(repo, {"tests/test_double.py": HIDDEN}),
        "created_at": "2024-03-01T12:00:00Z",
        "FAIL_TO_PASS": json.dumps(["tests/test_double.py::test_double"]),
        "PASS_TO_PASS": json.dumps(["tests/test_double.py::test_true"]),
    }  # fmt: skip
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    found = {}
    for subs in ("gold", "empty"):
        (verdict,) = evaluate(dataset, subs, run_id=subs, repos_dir=tmp_path / "repos",
                              cache_dir=tmp_path / "cache", runs_dir=tmp_path / "runs")  # fmt: skip
        found[subs] = verdict
    assert found["gold"].status == "resolved", found["gold"].reason
    assert found["gold"].exit_code == 0
    assert found["empty"].status == "unresolved", found["empty"].reason
