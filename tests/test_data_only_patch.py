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


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One cache for the module: both tests' projects have the same environment, built once.
    return tmp_path_factory.mktemp("cache")


def patch_of(repo: Path, rel: str, text: str) -> str:
    (repo / rel).write_text(text)
    diff = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    return diff


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_a_test_patch_of_data_only_runs_the_tests_fail_to_pass_names(
    tmp_path: Path, cache_dir: Path
) -> None:
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
    kw = {"repos_dir": tmp_path / "repos", "cache_dir": cache_dir}
    gold = evaluate(dataset, "gold", run_id="gold", runs_dir=tmp_path / "runs", **kw)
    assert [v.status for v in gold] == ["resolved"], gold[0].reason
    empty = evaluate(dataset, "empty", run_id="empty", runs_dir=tmp_path / "runs", **kw)
    assert [v.status for v in empty] == ["unresolved"], empty[0].reason


# A conftest.py that collects the `.txt` files of tests/snippets as test items without a name of
# their own, as pygments' does: each file holds `x want`, and its item checks double(x) == want.
SNIPPETS_CONFTEST = """\
import pytest

from proj.a import double


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".txt" and file_path.parent.name == "snippets":
        return Snippet.from_parent(parent, path=file_path)


class Snippet(pytest.File):
    def collect(self):
        yield Case.from_parent(self, name="")


class Case(pytest.Item):
    def runtest(self):
        x, want = self.path.read_text().split()[:2]
        assert double(int(x)) == int(want)

    def reportinfo(self):
        return self.path, None, ""
"""


def change(repo: Path, files: dict[str, str], links: dict[str, str] | None = None) -> str:
    """The diff (new files and links included) that writes `files` and `links` into `repo`,
    which is left as it was."""
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    for rel, target in (links or {}).items():
        (repo / rel).symlink_to(target)
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "--binary")
    git(repo, "reset", "-q", "--hard")
    return diff


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_a_test_patch_of_snippets_a_conftest_collects_validates_and_grades(
    tmp_path: Path, cache_dir: Path
) -> None:
    from swebounty.collect.validate import validate_one
    from swebounty.evalcontext import EvalContext
    from swebounty.evaluation import evaluate
    from swebounty.tasks import Task

    files = {
        **BUGGY_PROJECT,
        "tests/conftest.py": SNIPPETS_CONFTEST,
        "tests/snippets/old.txt": "2 4\n",
    }
    repo = git_repo(tmp_path / "repos" / "small__proj", files, when=WHEN)
    fix = "def double(x):\n    return x * 2\n\n\ndef name():\n    return 'proj'\n"
    # No test module: two snippets, one the fix makes pass, one that passes either way, a file
    # no collector claims (pytest 8 would stop at it, named on its command line), and a link
    # (not a regular file: never handed to pytest). old.txt, in the same folder, is not run.
    snippets = {"tests/snippets/new.txt": "1 2\n", "tests/snippets/same.txt": "2 4\n"}
    snippets["tests/snippets/new.out"] = "expected output, read by no collector\n"
    candidate = Task(
        instance_id="small__proj-1",
        repo="small/proj",
        base_commit=git(repo, "rev-parse", "HEAD").strip(),
        problem_statement="double adds",
        patch=change(repo, {"proj/a.py": fix}),
        test_patch=change(repo, snippets, links={"tests/snippets/link.txt": "same.txt"}),
        created_at="2024-03-01T12:00:00Z",
    )
    kw = {"repos_dir": tmp_path / "repos", "cache_dir": cache_dir}
    ctx = EvalContext.create(runs_dir=tmp_path / "runs", **kw)
    task = validate_one(candidate, ctx, tmp_path / "validate", runs=2)
    assert task.FAIL_TO_PASS == ["tests/snippets/new.txt::"]
    assert task.PASS_TO_PASS == ["tests/snippets/same.txt::"]

    # Hostile submissions: a conftest.py that passes every snippet (put back as the base's),
    # and library code that stops the session as a success before any result is written
    # (pytest's bare testcase is no test).
    passing = SNIPPETS_CONFTEST.replace("assert double", "assert True or double")
    stop = fix.replace("return x * 2", "import pytest\n    pytest.exit('done', returncode=0)")
    hostile = {
        "-2": change(repo, {"tests/conftest.py": passing}),
        "-3": change(repo, {"proj/a.py": stop}),
    }
    ids = [task.instance_id + s for s in hostile]
    dataset = tmp_path / "tasks.jsonl"
    lines = [
        task.model_copy(update={"instance_id": i}).model_dump_json()
        for i in [task.instance_id, *ids]
    ]
    dataset.write_text("\n".join(lines) + "\n")
    predictions = tmp_path / "hostile.jsonl"
    predictions.write_text("".join(
        json.dumps({"instance_id": task.instance_id + s, "model_name_or_path": "x", "model_patch": p}) + "\n"
        for s, p in hostile.items()
    ))  # fmt: skip
    only = [task.instance_id]
    gold = evaluate(
        dataset, "gold", run_id="gold", runs_dir=tmp_path / "runs", instance_ids=only, **kw
    )
    assert [v.status for v in gold] == ["resolved"], gold[0].reason
    empty = evaluate(
        dataset, "empty", run_id="empty", runs_dir=tmp_path / "runs", instance_ids=only, **kw
    )
    assert [v.status for v in empty] == ["unresolved"], empty[0].reason
    bad = evaluate(
        dataset, predictions, run_id="bad", runs_dir=tmp_path / "runs", instance_ids=ids, **kw
    )
    assert {v.instance_id: v.status for v in bad} == dict.fromkeys(ids, "unresolved")
