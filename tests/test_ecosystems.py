"""A task that names no ecosystem is decided by its repository at the base commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repo_helpers import git_repo
from swebounty.ecosystems import EcosystemError, code_ecosystem, decide, resolve
from swebounty.tasks import EnvSpec, Task


def _diff(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"


@pytest.mark.parametrize(
    ("root", "paths", "expected"),
    [
        (["package.json", "src", "test"], [], "node"),
        (["package.json", "yarn.lock", "README.md"], ["setup.py"], "node"),  # the root decides
        (["pyproject.toml", "src"], ["a.js"], "python"),
        (["setup.cfg", "setup.py"], [], "python"),
        # django keeps a package.json for its JavaScript tests: its patches say Python.
        (["package.json", "setup.py", "django"], ["tests/a/tests.py", "django/a.py"], "python"),
        (["package.json", "pyproject.toml"], ["test/a.test.ts", "src/a.ts", "x.py"], "node"),
        (["README.md", "lib"], ["lib/a.mjs", "test/a.spec.jsx"], "node"),
        (["README.md"], ["README.md", "docs/a.rst"], None),
        (["package.json", "setup.py"], ["a.py", "b.js"], None),
    ],
)
def test_decide(root: list[str], paths: list[str], expected: str | None) -> None:
    assert decide(root, paths) == expected


def test_code_ecosystem_counts_code_only() -> None:
    assert code_ecosystem(["a.vue", "b.svelte", "c.py", "d.json"]) == "node"
    assert code_ecosystem(["a.pyi", "b.md"]) == "python"
    assert code_ecosystem([]) is None


def _task(repo: Path, **kw: object) -> Task:
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    return Task(instance_id="o__r-1", repo="o/r", base_commit=head, **kw)  # type: ignore[arg-type]


def test_a_swe_bench_row_of_a_javascript_repository_is_a_node_task(tmp_path: Path) -> None:
    repos = tmp_path / "repos"
    git_repo(repos / "o__r", {"package.json": '{"name": "r"}\n', "index.js": "exports.a = 1\n"})
    task = _task(repos / "o__r", test_patch=_diff("test/a.test.js"))
    assert task.ecosystem is None  # the row has no such field
    found = resolve(task, repos_dir=repos, cache_dir=tmp_path / "cache")
    assert found.ecosystem == "node" and found.instance_id == task.instance_id
    # As given, a task's own ecosystem stands.
    said = task.model_copy(update={"ecosystem": "python"})
    assert resolve(said, repos_dir=repos, cache_dir=tmp_path / "cache") is said


def test_a_repository_that_does_not_say_asks_for_the_field(tmp_path: Path) -> None:
    repos = tmp_path / "repos"
    git_repo(repos / "o__r", {"README.md": "notes\n"})
    task = _task(repos / "o__r", patch=_diff("README.md"), FAIL_TO_PASS=["it works"])
    with pytest.raises(EcosystemError, match=r'add "ecosystem": "python" or "ecosystem": "node"'):
        resolve(task, repos_dir=repos, cache_dir=tmp_path / "cache")
    # What the task itself says is enough: the files its test ids name, its environment spec.
    by_id = task.model_copy(update={"FAIL_TO_PASS": ["tests/test_a.py::test_b[x-y]"]})
    assert resolve(by_id, repos_dir=repos, cache_dir=tmp_path / "cache").ecosystem == "python"
    by_id = task.model_copy(update={"FAIL_TO_PASS": ["test/a.test.ts:suite title"]})
    assert resolve(by_id, repos_dir=repos, cache_dir=tmp_path / "cache").ecosystem == "node"
    spec = EnvSpec(node="20")
    by_spec = task.model_copy(update={"env_spec": spec, "repo": "gone/nowhere"})
    assert resolve(by_spec, repos_dir=repos, cache_dir=tmp_path / "cache").ecosystem == "node"
