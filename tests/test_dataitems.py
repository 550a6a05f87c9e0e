"""Which folders pytest is handed, and what it ignores there, to run a test patch's data files."""

from __future__ import annotations

from pathlib import Path

import pytest

from swebounty import dataitems
from swebounty.dataitems import Targets, pytest_targets


def tree(root: Path, *files: str) -> Path:
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    return root


def test_the_data_files_folders_are_handed_with_everything_else_there_ignored(
    tmp_path: Path,
) -> None:
    ws = tree(
        tmp_path,
        "tests/examplefiles/php/test.php",
        "tests/examplefiles/php/test.php.output",
        "tests/examplefiles/php/other.php",
        "tests/examplefiles/php/conftest.py",
        "tests/snippets/python/a.txt",
        "tests/snippets/python/b.txt",
        "tests/snippets/python/deeper/c.txt",
        "tests/snippets/python/deeper/d.txt",
        "tests/snippets/python/elsewhere/e.txt",
        "tests/test_mod.py",
    )
    files = [
        "tests/examplefiles/php/test.php",
        "tests/examplefiles/php/test.php.output",  # claimed by no collector: found, not named
        "tests/snippets/python/a.txt",
        "tests/snippets/python/deeper/c.txt",
        "tests/test_mod.py",
    ]
    targets = pytest_targets(ws, files)
    assert targets.paths == ["tests/examplefiles/php", "tests/snippets/python", "tests/test_mod.py"]
    assert targets.companions == []
    assert targets.ignore == [
        "tests/examplefiles/php/other.php",  # conftest.py stays: collection reads it
        "tests/snippets/python/b.txt",
        "tests/snippets/python/deeper/d.txt",
        "tests/snippets/python/elsewhere",
    ]


@pytest.mark.parametrize(
    "files",
    [
        ["tests/link/a.txt"],  # a link on the way: not listed
        ["tests/test_m.py"],  # no data file
    ],
)
def test_the_files_are_handed_as_given_when_folders_will_not_do(
    tmp_path: Path, files: list[str]
) -> None:
    ws = tree(tmp_path, "tests/snippets/a.txt", "tests/snippets/b.txt", "tests/test_m.py")
    (ws / "tests/link").symlink_to(ws / "tests/snippets")
    assert pytest_targets(ws, files) == Targets(files)


def test_too_much_to_ignore_hands_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tree(tmp_path, "tests/s/a.txt", "tests/s/b.txt", "tests/s/c.txt")
    ignored = ["tests/s/b.txt", "tests/s/c.txt"]
    assert pytest_targets(ws, ["tests/s/a.txt"]) == Targets(["tests/s"], ignored)
    monkeypatch.setattr(dataitems, "MAX_IGNORED", 1)
    assert pytest_targets(ws, ["tests/s/a.txt"]) == Targets(["tests/s/a.txt"])


def test_the_input_a_changed_expected_output_is_named_after_runs_too(tmp_path: Path) -> None:
    ws = tree(
        tmp_path,
        "tests/examplefiles/lua/example.lua",
        "tests/examplefiles/lua/example.lua.output",
        "tests/examplefiles/lua/other.lua",
        "tests/examplefiles/lua/helper.py",
        "tests/examplefiles/lua/helper.py.out",
    )
    (ws / "tests/examplefiles/lua/linked").symlink_to(ws / "tests/examplefiles/lua/other.lua")
    files = [
        "tests/examplefiles/lua/example.lua.output",
        "tests/examplefiles/lua/helper.py.out",  # a module is never run for its output
        "tests/examplefiles/lua/linked.out",  # nor a link
    ]
    assert pytest_targets(ws, files) == Targets(
        paths=["tests/examplefiles/lua"],
        ignore=[
            "tests/examplefiles/lua/helper.py",
            "tests/examplefiles/lua/linked",
            "tests/examplefiles/lua/other.lua",
        ],
        companions=["tests/examplefiles/lua/example.lua"],
    )


def test_a_data_file_beside_a_module_run_is_left_out(tmp_path: Path) -> None:
    # A module the ids name beside the data it reads (issue 25's tasks): pytest 8 would stop at
    # the data file, and the folder would collect the module twice.
    ws = tree(tmp_path, "tests/test_a.py", "tests/cases.json", "tests/s/a.txt", "tests/s/b.txt")
    files = ["tests/test_a.py", "tests/cases.json", "tests/s/a.txt"]
    assert pytest_targets(ws, files) == Targets(["tests/s", "tests/test_a.py"], ["tests/s/b.txt"])
    assert pytest_targets(ws, files[:2]) == Targets(["tests/test_a.py"])
