"""A docstring id shared by several tests (one method of a mixin in a class per backend, as
django's cache tests are) passes when every member that ran passed, leaving out the members
that skipped (unittestids.py): the backends a machine lacks skip here as in SWE-bench's images.
A submission must not use that rule: library code that makes the members it cannot fix skip
(`raise unittest.SkipTest` from inside the test) would leave only the members it fixed. A
member left out must skip on the unpatched base too (leftout.py), through the real path and
sandbox, on a small unittest project made here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from repo_helpers import diff_of, git, git_repo
from swebounty.sandbox import bwrap_available
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.network,  # the environment's build installs from PyPI once
    pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}"),
]
WHEN = "2024-03-01T12:00:00+00:00"

BROKEN = "def area(w, h, backend):\n    return w + h\n"
PROJECT = {
    "setup.py": "from setuptools import setup\n\nsetup(name='shapes', version='0.1', "
    "packages=['shapes'])\n",
    "shapes/__init__.py": BROKEN,
    "tests/__init__.py": "",
    "tests/test_shapes.py": "import unittest\n\n\nclass T(unittest.TestCase):\n"
    "    def test_import(self):\n        import shapes  # noqa\n",
}
# One test method, three classes: `memcached` is not configured here and skips, as its own
# decorator says, on the base as with any patch.
HIDDEN = """\
    import unittest

    from shapes import area


    class AreaMixin:
        def test_rectangle(self):
            \"\"\"A rectangle's area is its width times its height.\"\"\"
            self.assertEqual(area(2, 3, self.backend), 6)


    class LocalTests(AreaMixin, unittest.TestCase):
        backend = "local"


    class FileTests(AreaMixin, unittest.TestCase):
        backend = "file"


    @unittest.skip("memcached backend not configured")
    class MemcachedTests(AreaMixin, unittest.TestCase):
        backend = "memcached"


    class SquareTests(unittest.TestCase):
        def test_square(self):
            self.assertEqual(area(2, 2, "local"), 4)
"""
DOC_ID = "A rectangle's area is its width times its height."
FIX = "def area(w, h, backend):\n    return w * h\n"
# Fixes the local backend only, and makes the file backend's test skip (spelled so that the
# patch's text raises no flag).
SKIP_THE_REST = """\
import unittest


def area(w, h, backend):
    if backend != "local":
        raise getattr(unittest, "Skip" + "Test")(backend + " backend not configured")
    return w * h
"""


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Verdict]:
    from swebounty.evaluation import evaluate

    root = tmp_path_factory.mktemp("unittest-skips")
    repo = git_repo(root / "repos" / "small__shapes", PROJECT, when=WHEN)
    record = {
        "repo": "small/shapes", "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "problem_statement": "area adds", "patch": diff_of(repo, {"shapes/__init__.py": FIX}),
        "test_patch": diff_of(repo, {"tests/test_shapes.py": HIDDEN}),
        "created_at": "2024-03-01T12:00:00Z", "instance_id": "small__shapes-1",
        "FAIL_TO_PASS": json.dumps([DOC_ID]),
        "PASS_TO_PASS": json.dumps(["test_square (tests.test_shapes.SquareTests)"]),
    }  # fmt: skip
    dataset = root / "tasks.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    preds = root / "preds.jsonl"
    lines: list[dict[str, Any]] = [
        {"instance_id": "small__shapes-1", "model_name_or_path": name, "model_patch": patch}
        for name, patch in (("gold", record["patch"]),
                            ("skip-the-rest", diff_of(repo, {"shapes/__init__.py": SKIP_THE_REST})))
    ]  # fmt: skip
    preds.write_text("".join(json.dumps(line) + "\n" for line in lines))
    found = evaluate(dataset, [preds], run_id="skips", repos_dir=root / "repos",
                     cache_dir=root / "cache", runs_dir=root / "runs")  # fmt: skip
    return {v.model_name_or_path: v for v in found}


def test_members_skipped_by_the_tests_own_decorator_are_left_out(
    verdicts: dict[str, Verdict],
) -> None:
    gold = verdicts["gold"]
    assert gold.status == "resolved", gold.reason
    assert "1 skipped" in next(t.message for t in gold.tests if t.test_id == DOC_ID)


def test_members_a_submission_made_skip_are_not(verdicts: dict[str, Verdict]) -> None:
    attack = verdicts["skip-the-rest"]
    assert attack.status == "unresolved", attack.reason
    doc = next(t for t in attack.tests if t.test_id == DOC_ID)
    assert doc.status == "skipped"
    assert "tests.test_shapes.FileTests.test_rectangle" in doc.message
    assert "adds_skip_or_xfail" in attack.hack_flags
