"""Honest when the harness cannot run a task (limitations.py): an `error` that says so.

A small repo this file builds, graded through the CLI, the real evaluation path and the
sandbox: a test module that needs settings only its own runner gives (as django's do) cannot
be collected on the unpatched base, so its PASS_TO_PASS tests never run there either: every
submission's verdict is an error naming the harness's limitation, not `unresolved`. A module
that imports what only the fix adds is the submission's business as before; a task whose
ecosystem nothing decides is a limitation too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from repo_helpers import BUGGY_PROJECT, WHEN, diff_of, git, git_repo
from swebounty.misses import miss_class
from swebounty.store import Store
from test_offline_grading import needs_bwrap

NEEDS_SETTINGS = """\
    import os

    if "PROJ_SETTINGS" not in os.environ:
        raise RuntimeError("Requested setting NAME, but settings are not configured")

    from proj.a import double, name


    def test_fixed():
        assert double(3) == 6


    def test_name():
        assert name() == "proj"
"""
NEEDS_THE_FIX = """\
    from proj.a import triple


    def test_triple():
        assert triple(2) == 6
"""
OLD_TESTS = """\
    from proj.a import name


    def test_name():
        assert name() == "proj"
"""


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("limits")
    files = {**BUGGY_PROJECT, "tests/test_old.py": OLD_TESTS}
    repo = git_repo(root / "repos" / "small__proj", files, when=WHEN)
    fixed = files["proj/a.py"].replace("+ 2", "* 2") + "\n\ndef triple(x):\n    return 3 * x\n"
    record = {"repo": "small/proj", "base_commit": git(repo, "rev-parse", "HEAD").strip(),
              "patch": diff_of(repo, {"proj/a.py": fixed}), "ecosystem": "python",
              "created_at": "2024-03-01T12:00:00Z"}  # fmt: skip
    bare = git_repo(root / "repos" / "small__bare", {"NOTES.txt": "x\n"}, when=WHEN)
    records = [
        {**record, "instance_id": "small__proj-1",
         "test_patch": diff_of(repo, {"tests/test_settings.py": NEEDS_SETTINGS}),
         "FAIL_TO_PASS": ["tests/test_settings.py::test_fixed"],
         "PASS_TO_PASS": ["tests/test_settings.py::test_name"]},
        {**record, "instance_id": "small__proj-2",
         "test_patch": diff_of(repo, {"tests/test_new.py": NEEDS_THE_FIX,
                                      "tests/test_old.py": OLD_TESTS + "\n\n    def test_more():\n"
                                      "        assert name()\n"}),
         "FAIL_TO_PASS": ["tests/test_new.py::test_triple"],
         "PASS_TO_PASS": ["tests/test_old.py::test_name"]},
        {"instance_id": "small__bare-1", "repo": "small/bare",
         "base_commit": git(bare, "rev-parse", "HEAD").strip(),
         "patch": diff_of(bare, {"NOTES.txt": "y\n"}),
         "test_patch": diff_of(bare, {"CHECKS.txt": "z\n"}),
         "FAIL_TO_PASS": ["check"], "created_at": "2024-03-01T12:00:00Z"},
    ]  # fmt: skip
    dataset = root / "tasks.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    return {"dataset": dataset, "repos": root / "repos", "cache": root / "cache",
            "runs": root / "runs"}  # fmt: skip


def _eval(tasks: dict[str, Any], run_id: str, *args: str) -> tuple[str, dict[str, Any]]:
    from swebounty.cli import app

    result = CliRunner().invoke(app, [
        "eval", str(tasks["dataset"]), *args, "--run-id", run_id, "--repos-dir",
        str(tasks["repos"]), "--cache-dir", str(tasks["cache"]), "--runs-dir", str(tasks["runs"]),
    ], catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    with Store.open(tasks["runs"] / "runs.sqlite") as store:
        return result.output, {v.instance_id: v for v in store.verdicts(run_id)}


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_tests_that_do_not_collect_on_the_base_are_a_harness_limitation(
    tasks: dict[str, Any],
) -> None:
    for kind in ("empty", "gold"):
        output, verdicts = _eval(tasks, kind, f"--{kind}")
        limited, sound, bare = (verdicts[i] for i in ("small__proj-1", "small__proj-2",
                                                      "small__bare-1"))  # fmt: skip
        assert limited.status == "error", limited.reason
        assert limited.harness_limitation.startswith(
            "harness limitation: tests/test_settings.py cannot be collected on the unpatched base"
            " either (RuntimeError: Requested setting NAME, but settings are not configured); 1 "
            "PASS_TO_PASS test module(s) do not"
        )
        assert "settings are not configured" in limited.harness_limitation
        assert limited.reason.startswith(limited.harness_limitation)
        assert miss_class(limited) == miss_class(bare) == "harness limitation"
        # What only the fix adds failing to import is the submission's doing: graded as ever.
        assert sound.status == ("resolved" if kind == "gold" else "unresolved"), sound.reason
        assert not sound.harness_limitation
        assert bare.status == "error" and "ecosystem" in bare.harness_limitation
        assert "2 task(s) the harness cannot run (harness limitation" in output
        assert "small__bare-1, small__proj-1" in output
        assert "(error): harness limitation:" in output


@pytest.mark.parametrize(
    ("test_id", "found"),
    [
        ("tests/test_utils/tests.py::test_a", "tests/test_utils/tests.py"),
        ("test_a (test_utils.tests.TestClass)", "tests/test_utils/tests.py"),  # django, old
        ("test_utils.tests.TestClass.test_a", "tests/test_utils/tests.py"),  # django, 3.11+
        ("test_a (pkg.tests.test_b.Case)", "pkg/tests/test_b.py"),
        ("tests/test_other.py::test_a", None),
        ("test_a (test_other.tests.TestClass)", None),
        ("test_a (utils.TestClass)", None),  # test_utils is not utils
        ("test_a", None),
    ],
)
def test_a_test_id_is_placed_in_the_module_that_holds_it(test_id: str, found: str | None) -> None:
    from swebounty.limitations import _module_of

    modules = {"tests/test_utils/tests.py": "boom", "pkg/tests/test_b.py": "boom"}
    assert _module_of(test_id, modules) == found
