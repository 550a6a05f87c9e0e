"""Quality filters: each one rejects what it should, can be switched off, and is counted."""

from __future__ import annotations

import pytest

from swebounty.collect.filters import FILTERS, FilterConfig, apply_filters, check, leaked
from swebounty.tasks import Task


def _diff(path: str, removed: list[str], added: list[str]) -> str:
    body = "".join(f"-{line}\n" for line in removed) + "".join(f"+{line}\n" for line in added)
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,{len(removed)} +1,{len(added)} @@\n{body}"
    )


PATCH = _diff("pkg/core.py", ["    return a"], ["    return normalise_value(a, strict=True)"])
TEST_PATCH = _diff("tests/test_core.py", [], ["def test_it():", "    assert f(1) == 2"])
STATEMENT = "f() returns the wrong value for odd inputs; it should normalise them first."


def _task(**kw: object) -> Task:
    fields: dict[str, object] = {
        "instance_id": "o__r-1",
        "repo": "o/r",
        "base_commit": "abc",
        "problem_statement": STATEMENT,
        "patch": PATCH,
        "test_patch": TEST_PATCH,
    }
    fields.update(kw)
    return Task.model_validate(fields)


def test_a_good_task_passes_every_filter() -> None:
    assert check(_task(), FilterConfig()) is None


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"problem_statement": "fix"}, "problem_length"),
        ({"problem_statement": "x" * 30000}, "problem_length"),
        ({"binary_files": ["img.png"]}, "binary"),
        (
            {"patch": _diff("pkg/core.py", ["a"] * 300, ["b"] * 300)},
            "patch_size",
        ),
        (
            {"patch": "".join(_diff(f"pkg/m{i}.py", ["a"], ["b"]) for i in range(12))},
            "patch_size",
        ),
        (
            {"problem_statement": STATEMENT + "\nDo `return normalise_value(a, strict=True)`."},
            "leak",
        ),
        (
            {
                "test_patch": _diff(
                    "tests/test_core.py",
                    [],
                    [
                        "def test_it():",
                        '    with pytest.raises(ValueError, match="must be odd"):',
                        "        f(2)",
                        '    assert str(excinfo.value) == "must be odd"',
                    ],
                )
            },
            "error_message_only",
        ),
    ],
)
def test_each_filter_rejects_and_can_be_switched_off(kw: dict[str, object], name: str) -> None:
    task = _task(**kw)
    rejected = check(task, FilterConfig())
    assert rejected is not None and rejected[0] == name
    assert check(task, FilterConfig(enabled=[f for f in FILTERS if f != name])) is None


def test_new_identifiers_named_in_the_statement_are_a_leak() -> None:
    patch = _diff(
        "pkg/core.py",
        ["x = 1"],
        ["def frobnicate_input(a):", "class WidgetCache:", "DEFAULT_LIMIT_VALUE = 3"],
    )
    names = "Add frobnicate_input, a WidgetCache and DEFAULT_LIMIT_VALUE to the package please."
    task = _task(patch=patch, problem_statement=names)
    assert leaked(task, FilterConfig())[1] == [
        "DEFAULT_LIMIT_VALUE",
        "WidgetCache",
        "frobnicate_input",
    ]
    rejected = check(task, FilterConfig())
    assert rejected is not None and rejected[0] == "leak"
    # Naming the one function a feature request asks for is not a leak.
    one = _task(patch=patch, problem_statement="Please add a frobnicate_input helper to the pkg.")
    assert check(one, FilterConfig()) is None


def test_mixed_assertions_are_not_message_only() -> None:
    tp = _diff(
        "tests/test_core.py",
        [],
        ['    with pytest.raises(ValueError, match="odd"):', "    assert f(3) == 4"],
    )
    assert check(_task(test_patch=tp), FilterConfig()) is None


def test_summary_counts_each_filter() -> None:
    tasks = [_task(), _task(problem_statement="x"), _task(binary_files=["a.png"])]
    kept, rejects, summary = apply_filters(tasks)
    assert len(kept) == 1 and summary.seen == 3 and summary.kept == 1
    assert summary.rejected == {"problem_length": 1, "binary": 1}
    assert [r[1] for r in rejects] == ["problem_length", "binary"]


def test_unknown_filter_name() -> None:
    with pytest.raises(ValueError, match="unknown filters"):
        check(_task(), FilterConfig(enabled=["nope"]))


def test_new_test_data_next_to_a_message_check_is_not_message_only() -> None:
    tp = _diff(
        "tests/test_core.py",
        [],
        [
            '@pytest.mark.parametrize("value", ["", "banana", -1, 256])',
            "def test_invalid(value):",
            '    with pytest.raises(ValueError, match="Unknown color"):',
            "        style(value)",
        ],
    )
    assert check(_task(test_patch=tp), FilterConfig()) is None


def test_a_changelog_line_repeated_in_the_statement_is_not_a_leak() -> None:
    entry = "Parsing now uses regex matching instead of string prefix matching."
    patch = PATCH + _diff("CHANGELOG.md", [], [entry])
    task = _task(patch=patch, problem_statement=f"Use regex matching.\n\n{entry}")
    assert check(task, FilterConfig()) is None
