"""frameworks/unittest.py: which tasks plain unittest takes, the exit-status cross-check, and a
`python -m unittest` project graded end to end through the real path and sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repo_helpers import diff_of, git, git_repo
from swebounty.frameworks import BaseTree
from swebounty.frameworks.unittest import Unittest, disagreement, uncollected, with_runner
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Task
from swebounty.testing import TestOutcome
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
WHEN = "2024-03-01T12:00:00+00:00"

PROJECT = {
    "setup.py": "from setuptools import setup\n\nsetup(name='shapes', version='0.1', "
    "packages=['shapes'])\n",
    "shapes/__init__.py": "def area(w, h):\n    return w + h\n",
    "tests/__init__.py": "",
    "tests/test_shapes.py": "import unittest\n\n\nclass T(unittest.TestCase):\n"
    "    def test_import(self):\n        import shapes  # noqa\n",
}
HIDDEN = """\
    import unittest

    from shapes import area


    class AreaTests(unittest.TestCase):
        def test_square(self):
            self.assertEqual(area(2, 2), 4)

        def test_rectangle(self):
            \"\"\"A rectangle's area is its width times its height.\"\"\"
            self.assertEqual(area(2, 3), 6)

        def test_zero(self):
            self.assertEqual(area(0, 5), 0)

        def test_crash(self):
            area(None, 1)

        @unittest.skipIf(True, "not on this platform")
        def test_platform(self):
            pass
"""
F2P = ["test_rectangle (tests.test_shapes.AreaTests)", "tests.test_shapes.AreaTests.test_zero"]
P2P = ["test_square (tests.test_shapes.AreaTests.test_square)"]


def _task(**fields: Any) -> Task:
    return Task(instance_id="o__p-1", repo="o/p", base_commit="HEAD", ecosystem="python", **fields)


def _tree(tmp: Path, files: dict[str, str]) -> BaseTree:
    git_repo(tmp / "o__p", files)
    return BaseTree(_task(), tmp, tmp / "cache")


def test_unittest_takes_unittest_ids_in_a_repository_without_pytest_configuration(
    tmp_path: Path,
) -> None:
    plain = _tree(tmp_path / "a", PROJECT)
    assert Unittest().applies(_task(FAIL_TO_PASS=F2P), plain)
    assert not Unittest().applies(_task(FAIL_TO_PASS=["tests/t.py::test_a"]), plain)
    configured = _tree(tmp_path / "b", {**PROJECT, "setup.cfg": "[tool:pytest]\naddopts = -q\n"})
    assert not Unittest().applies(_task(FAIL_TO_PASS=F2P), configured)
    with_conftest = _tree(tmp_path / "c", {**PROJECT, "tests/conftest.py": ""})
    assert not Unittest().applies(_task(FAIL_TO_PASS=F2P), with_conftest)


def test_a_new_task_without_ids_is_unittests_when_its_tests_import_unittest_only(
    tmp_path: Path,
) -> None:
    plain = _tree(tmp_path, PROJECT)
    patch = "diff --git a/tests/test_n.py b/tests/test_n.py\n--- /dev/null\n+++ b/tests/test_n.py\n"
    uses = patch + "@@ -0,0 +1,2 @@\n+import unittest\n+class T(unittest.TestCase): pass\n"
    assert Unittest().applies(_task(test_patch=uses), plain)
    both = patch + "@@ -0,0 +1,2 @@\n+import unittest\n+import pytest\n"
    assert not Unittest().applies(_task(test_patch=both), plain)


def test_the_environment_records_the_runner_so_its_build_does_not_probe_pytest() -> None:
    from swebounty.envs import ResolvedSpec
    from swebounty.envs.candidate import probing
    from swebounty.tasks import EnvSpec

    task = with_runner(_task(), ["python", "-m", "unittest"])
    assert task.env_spec is not None and task.env_spec.test_cmd == ["python", "-m", "unittest"]
    assert task.env_spec.model_fields_set == {"test_cmd"}  # everything else still inferred
    assert not probing(ResolvedSpec(test_cmd=task.env_spec.test_cmd))
    own = _task(env_spec=EnvSpec(test_cmd=["python", "run.py"]))
    assert with_runner(own, ["python", "-m", "unittest"]) is own


def test_modules_that_did_not_import_are_uncollected_with_their_error() -> None:
    records: dict[str, dict[str, str | None]] = {
        "tests": {"status": "error", "kind": "import", "message": "Traceback\nImportError: x"},
        "foo.tests.T.test_a": {"status": "passed", "kind": "test"},
    }
    # django's labels, named from its tests/ folder
    labels = {"tests/foo/tests.py": "foo.tests", "tests/bar/tests.py": "bar.tests",
              "tests/baz/test_q.py": "baz.test_q"}  # fmt: skip
    assert uncollected(labels, records) == {"tests/bar/tests.py": "ImportError: x"}
    assert uncollected(labels, {"foo.tests.T.test_a": records["foo.tests.T.test_a"]}) == {}


def test_grading_takes_the_ids_read_with_the_run_and_checks_the_exit_status() -> None:
    rules = Unittest()
    ok, bad = TestOutcome("passed"), TestOutcome("failed")
    outcomes = {"m.C.test_a": ok, "A docstring.": bad, "m.C.test_b": bad}
    got = rules.match(["test_a (m.C)", "A docstring.", "m.C.test_z"], outcomes)
    assert [o.status for o in got.values()] == ["passed", "failed", "missing"]
    assert rules.check(1, outcomes) == (None, None)
    assert rules.check(0, outcomes)[1] == "the runner exited 0, but 2 tests failed or errored"
    assert "no test ran" in (rules.check(1, {"x": TestOutcome("missing")})[1] or "")


def test_the_exit_status_must_agree_with_the_records() -> None:
    ok, bad = TestOutcome("passed"), TestOutcome("failed")
    assert disagreement(0, {"a": ok}) is None
    assert disagreement(1, {"a": ok, "b": bad}) is None
    assert (
        disagreement(0, {"a": ok, "b": bad}) == "the runner exited 0, but 1 tests failed or errored"
    )
    assert "every test it ran passed" in (disagreement(1, {"a": ok}) or "")
    assert "no test ran" in (disagreement(0, {}) or "")
    assert "signal 9" in (disagreement(-9, {"a": ok}) or "")


# ------------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("unittest")
    repo = git_repo(root / "repos" / "small__shapes", PROJECT, when=WHEN)
    base = git(repo, "rev-parse", "HEAD").strip()
    gold = diff_of(repo, {"shapes/__init__.py": "def area(w, h):\n    return w * h\n"})
    record = {
        "repo": "small/shapes", "base_commit": base, "problem_statement": "area adds",
        "patch": gold, "test_patch": diff_of(repo, {"tests/test_shapes.py": HIDDEN}),
        "created_at": "2024-03-01T12:00:00Z", "instance_id": "small__shapes-1",
        "FAIL_TO_PASS": json.dumps(F2P), "PASS_TO_PASS": json.dumps(P2P),
    }  # fmt: skip
    crash = {**record, "instance_id": "small__shapes-2",
             "PASS_TO_PASS": json.dumps([*P2P, "test_crash (tests.test_shapes.AreaTests)"])}  # fmt: skip
    dataset = root / "tasks.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in (record, crash)))
    return {"dataset": dataset, "repos": root / "repos", "cache": root / "cache",
            "runs": root / "runs"}  # fmt: skip


def evaluate(project: dict[str, Any], subs: Any, run_id: str) -> dict[str, Verdict]:
    from swebounty.evaluation import evaluate

    verdicts = evaluate(project["dataset"], subs, run_id=run_id, repos_dir=project["repos"],
                        cache_dir=project["cache"], runs_dir=project["runs"])  # fmt: skip
    return {v.instance_id: v for v in verdicts}


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_a_unittest_project_is_graded_by_python_m_unittest(project: dict[str, Any]) -> None:
    gold = evaluate(project, "gold", "gold")
    assert gold["small__shapes-1"].status == "resolved", gold["small__shapes-1"].reason
    crashing = gold["small__shapes-2"]  # a test that errors is not a pass
    assert crashing.status == "unresolved"
    crash = next(t for t in crashing.tests if "test_crash" in t.test_id)
    assert crash.status == "error" and "TypeError" in crash.message
    empty = evaluate(project, "empty", "empty")["small__shapes-1"]
    assert empty.status == "unresolved"
    assert {t.test_id: t.status for t in empty.tests} == {
        F2P[0]: "failed", F2P[1]: "failed", P2P[0]: "passed",
    }  # fmt: skip
