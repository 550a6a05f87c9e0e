"""Splitting a fix into patch and test_patch by path rules."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from collect_helpers import GitRepo
from swebounty.collect.split import SplitDiff, SplitRules, diff_lines, files_in, split_diff


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("tests/test_x.py", "test"),
        ("pkg/tests/helpers.py", "test"),
        ("pint/testsuite/helpers.py", "test"),
        ("test_thing.py", "test"),
        ("pkg/thing_test.py", "test"),
        ("conftest.py", "test"),
        ("pkg/conftest.py", "test"),
        ("web/__tests__/app.js", "test"),
        ("web/src/app.spec.ts", "test"),
        ("e2e/login.ts", "test"),
        ("go/thing_test.go", "test"),
        ("testing/test_pytest_thing.py", "test"),
        ("mod/src/test/java/FooTest.java", "test"),
        ("numpy/testing/utils.py", "code"),
        ("src/pkg/core.py", "code"),
        ("web/src/app.ts", "code"),
        ("docs/index.rst", "other"),
        ("CHANGELOG.md", "other"),
        ("changelog.d/123.change.md", "other"),
        ("pyproject.toml", "other"),
        # docs, examples, CI and packaging scripts are not the library
        ("docs/conf.py", "other"),
        ("doc/source/ext/plugin.py", "other"),
        ("examples/demo.py", "other"),
        (".github/scripts/release.py", "other"),
        ("setup.py", "other"),
        ("noxfile.py", "other"),
        ("scripts/bump.py", "other"),
        # ... but only at the root: a module called setup.py or tasks.py inside a package is code
        ("pkg/setup.py", "code"),
        ("src/celery/app/tasks.py", "code"),
    ],
)
def test_default_rules(path: str, kind: str) -> None:
    assert SplitRules().classify(path) == kind


def test_rules_are_configurable() -> None:
    rules = SplitRules(test_globs=["checks/*"], test_dirs=[])
    assert rules.classify("checks/a.py") == "test"
    assert rules.classify("tests/test_a.py") == "code"


def _diff(tmp_path: Path, files: dict[str, bytes]) -> bytes:
    repo = GitRepo(tmp_path / "r")
    repo.commit("init", {"README": "x\n", "src/a.py": "a = 1\n"}, "2024-01-01T00:00:00Z")
    for rel, data in files.items():
        (repo.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / rel).write_bytes(data)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "change", date="2024-01-02T00:00:00Z")
    return subprocess.run(
        ["git", "-C", str(repo.path), "diff", "--no-renames", "HEAD~1", "HEAD"],
        capture_output=True,
        check=True,
    ).stdout


def _fix_with(tmp_path: Path, files: dict[str, bytes]) -> tuple[bytes, SplitDiff]:
    """A diff that fixes src/a.py and changes `files` too, and its split."""
    raw = _diff(tmp_path, {"src/a.py": b"a = 2\n", **files})
    return raw, split_diff(raw)


def test_split_puts_tests_aside_and_keeps_docs_with_the_fix(tmp_path: Path) -> None:
    raw, split = _fix_with(
        tmp_path,
        {"tests/test_a.py": b"def test_a():\n    assert True\n", "docs/x y.md": b"# notes\n"},
    )
    assert split.rejection is None
    assert files_in(split.test_patch) == ["tests/test_a.py"]
    assert sorted(files_in(split.patch)) == ["docs/x y.md", "src/a.py"]
    assert split.code_lines == 2
    # The two halves are the whole diff, byte for byte.
    assert len(split.patch) + len(split.test_patch) == len(raw.decode())
    added, old = diff_lines(split.patch)
    assert "a = 2" in added and "a = 1" in old


def test_a_helper_in_a_testsuite_folder_stays_with_the_tests(tmp_path: Path) -> None:
    # pint's layout: pint/testsuite/helpers.py is imported by the test modules beside it. In
    # the reference patch it left the tests unable to import before the fix (pint-2264).
    _, split = _fix_with(
        tmp_path,
        {
            "src/testsuite/helpers.py": b"def helper():\n    return 2\n",
            "src/testsuite/test_a.py": b"from .helpers import helper\n",
        },
    )
    assert sorted(files_in(split.test_patch)) == [
        "src/testsuite/helpers.py",
        "src/testsuite/test_a.py",
    ]
    assert files_in(split.patch) == ["src/a.py"]


def test_binary_and_non_utf8_files_are_recorded_not_pasted(tmp_path: Path) -> None:
    _, split = _fix_with(
        tmp_path,
        {
            "tests/test_a.py": b"def test_a(): pass\n",
            "data/blob.bin": b"\x00\x01\x02",
            "src/latin1.py": "s = 'caf\xe9'\n".encode("latin-1"),
        },
    )
    assert sorted(split.binary_files) == ["data/blob.bin", "src/latin1.py"]
    assert "blob.bin" not in split.patch and "latin1" not in split.patch


def test_rejections(tmp_path: Path) -> None:
    only_code = split_diff(_diff(tmp_path / "1", {"src/a.py": b"a = 3\n"}))
    assert only_code.rejection == "no test change"
    only_tests = split_diff(_diff(tmp_path / "2", {"tests/test_b.py": b"def test(): pass\n"}))
    assert only_tests.rejection == "no code change (only tests, docs or packaging)"
    docs_and_tests = split_diff(
        _diff(tmp_path / "3", {"tests/test_b.py": b"x = 1\n", "README": b"y\n"})
    )
    assert docs_and_tests.rejection == "no code change (only tests, docs or packaging)"
    packaging_docs_and_tests = split_diff(
        _diff(
            tmp_path / "4",
            {"tests/test_b.py": b"x = 1\n", "setup.py": b"v = 2\n", "docs/conf.py": b"z\n"},
        )
    )
    assert packaging_docs_and_tests.rejection == "no code change (only tests, docs or packaging)"


def test_empty_diff() -> None:
    split = split_diff(b"")
    assert split.patch == split.test_patch == "" and split.rejection == "no test change"


def test_plain_unified_diff_without_git_headers() -> None:
    plain = (
        "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
        "--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    )
    split = split_diff(plain)
    assert split.paths("code") == ["src/a.py"] and split.paths("test") == ["tests/test_a.py"]
    assert "+a = 2" in split.patch and "+x = 2" in split.test_patch
