"""The bundled demo: a deterministic history, and tasks whose patches really behave.

Each task is checked without the harness: a plain `git archive` checkout of the base commit,
`git apply`, and pytest run directly on the FAIL_TO_PASS and PASS_TO_PASS ids.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from swebounty.demo import DEMO_REPO, MIRROR_NAME, build_demo, parse_history
from swebounty.repos import commit_date, find_mirror, make_workspace
from swebounty.tasks import Task


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Task]]:
    return build_demo(tmp_path_factory.mktemp("demo"))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def checkout(mirror: Path, commit: str, dest: Path) -> Path:
    dest.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(mirror), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def apply(workdir: Path, patch: str) -> None:
    # The ceiling stops git from treating an enclosing repository as the patch's root.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(workdir.parent)}
    subprocess.run(["git", "apply", "-"], cwd=workdir, input=patch.encode(), env=env, check=True)


def pytest_statuses(workdir: Path, test_ids: list[str]) -> dict[str, str]:
    """Run pytest on `test_ids` in `workdir`; map each id to passed/failed/error/missing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q", *test_ids],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    found = dict(
        (m.group(2), m.group(1).lower())
        for m in re.finditer(r"^(PASSED|FAILED|ERROR) (\S+)", proc.stdout, re.MULTILINE)
    )
    return {test_id: found.get(test_id, "missing") for test_id in test_ids}


def test_tasks_are_complete(demo: tuple[Path, list[Task]]) -> None:
    mirror, tasks = demo
    assert [t.instance_id for t in tasks] == [f"demo__tinytext-{i}" for i in range(1, 5)]
    for task in tasks:
        assert task.repo == DEMO_REPO
        assert task.problem_statement and task.patch and task.test_patch
        assert task.FAIL_TO_PASS and task.PASS_TO_PASS
        assert task.value_usd and task.value_usd > 0 and task.value_source == "demo estimate"
        assert task.created_at is not None and task.created_at.tzinfo is not None
        assert task.env_spec is not None
        assert task.env_spec.install == ["pytest"]
        # one spec for every task (so one shared environment), resolved before any base commit
        assert task.env_spec == tasks[0].env_spec
        assert task.env_spec.cutoff is not None
        assert commit_date(mirror, task.base_commit) > task.env_spec.cutoff
        # The gold patch never touches tests; the test patch touches nothing else.
        assert "tests/" not in "".join(re.findall(r"^diff --git .*$", task.patch, re.M))
        test_files = re.findall(r"^diff --git a/(\S+)", task.test_patch, re.M)
        assert test_files and all(p.startswith("tests/") for p in test_files)


def test_the_fixes_are_later_in_the_history(demo: tuple[Path, list[Task]]) -> None:
    mirror, tasks = demo
    assert find_mirror(DEMO_REPO, mirror.parent) == mirror
    for task in tasks:
        later = git(mirror, "rev-list", f"{task.base_commit}..main").split()
        fix = [c for c in later if git(mirror, "rev-parse", f"{c}^") == task.base_commit]
        assert len(fix) == 1, "the fix commit is the base's child in the history"
        # Gold and test patch together change exactly what that commit changed.
        changed = git(mirror, "diff", "--name-only", task.base_commit, fix[0]).split()
        patched = re.findall(r"^diff --git a/(\S+)", task.patch + task.test_patch, re.M)
        assert sorted(changed) == sorted(patched)
    assert git(mirror, "tag") == "v0.1.0\nv0.2.0"


def test_workspace_hides_the_fix(demo: tuple[Path, list[Task]], tmp_path: Path) -> None:
    mirror, tasks = demo
    task = tasks[0]
    fix = git(mirror, "rev-list", "--reverse", f"{task.base_commit}..main").split()[0]
    ws = make_workspace(mirror, task.base_commit, tmp_path / "ws")
    assert subprocess.run(["git", "-C", str(ws), "cat-file", "-e", fix]).returncode != 0
    assert git(ws, "log", "--all", "--oneline").count("\n") == 0


def test_variety(demo: tuple[Path, list[Task]]) -> None:
    _, tasks = demo
    f2p = [i for t in tasks for i in t.FAIL_TO_PASS]
    assert any("[" in i for i in f2p), "a parametrized FAIL_TO_PASS test"
    assert any(re.search(r"::Test\w+::", i) for i in f2p), "a test in a class"
    assert any(t.patch.count("diff --git") >= 2 for t in tasks), "a fix touching two files"
    assert any("new file mode" in t.patch for t in tasks)
    for t in tasks:
        f2p_files = {i.split("::")[0] for i in t.FAIL_TO_PASS}
        assert f2p_files & {i.split("::")[0] for i in t.PASS_TO_PASS}, t.instance_id


def test_build_is_deterministic_and_reused(demo: tuple[Path, list[Task]], tmp_path: Path) -> None:
    _, tasks = demo
    other_mirror, other = build_demo(tmp_path)
    assert other_mirror == tmp_path / MIRROR_NAME
    assert [t.model_dump() for t in other] == [t.model_dump() for t in tasks]

    marker = other_mirror / ".git" / "swebounty-demo.json"
    before = marker.stat().st_mtime_ns
    build_demo(tmp_path)
    assert marker.stat().st_mtime_ns == before, "an up-to-date demo repo is reused"
    marker.write_text('{"digest": "stale", "commits": {}}')
    _, again = build_demo(tmp_path)
    assert [t.base_commit for t in again] == [t.base_commit for t in tasks]
    assert "stale" not in marker.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".{MIRROR_NAME}.lock", MIRROR_NAME]


def test_parse_history_rejects_unknown_directives() -> None:
    with pytest.raises(ValueError, match="line 2: unknown directive 'frobnicate'"):
        parse_history("%%% commit a\n%%% frobnicate x\n")
    [commit] = parse_history("%%% commit a\n%%% message one\n%%% file f.txt\nx\n\n\n")
    assert commit.files == {"f.txt": "x\n"} and commit.message == "one\n"


@pytest.mark.parametrize("index", range(4), ids=lambda i: f"demo__tinytext-{i + 1}")
def test_gold_resolves_and_empty_does_not(
    demo: tuple[Path, list[Task]], tmp_path: Path, index: int
) -> None:
    mirror, tasks = demo
    task = tasks[index]
    ids = task.FAIL_TO_PASS + task.PASS_TO_PASS

    empty = checkout(mirror, task.base_commit, tmp_path / "empty")
    apply(empty, task.test_patch)
    got = pytest_statuses(empty, ids)
    assert {i: got[i] for i in task.FAIL_TO_PASS} == dict.fromkeys(task.FAIL_TO_PASS, "failed")
    assert {i: got[i] for i in task.PASS_TO_PASS} == dict.fromkeys(task.PASS_TO_PASS, "passed")

    gold = checkout(mirror, task.base_commit, tmp_path / "gold")
    apply(gold, task.patch)
    apply(gold, task.test_patch)
    assert pytest_statuses(gold, ids) == dict.fromkeys(ids, "passed")
