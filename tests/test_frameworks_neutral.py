"""The evaluation path names no test framework: runs.py, testrun.py and grading.py ask the
registry (frameworks/), so a new framework is a new module, never an `if` in them.

Read from the source: every import, every name, attribute, argument and function name, and
every string that is not a docstring. `Verdict.node` / `EvalContext.node` name the cluster
node an attempt ran on (executors/), not Node.js: the one attribute allowed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "swebounty"
EVALUATION_PATH = ("runs.py", "testrun.py", "grading.py")
# Words that name a framework, an ecosystem or what only one of them has (the hack flags'
# names, `modifies_conftest` among them, are the verdicts' vocabulary: not a branch).
FRAMEWORK_WORDS = re.compile(
    r"pytest|py\.test|\bnode\b|node_|_node|nodejs|e2e|jest|mocha|vitest|jasmine|playwright"
    r"|django|unittest|junit|runtests|ecosystem|test_kind",
    re.IGNORECASE,
)
ALLOWED_IMPORTS = ("swebounty.frameworks",)  # the registry itself, never one framework
FRAMEWORK_MODULES = ("swebounty.node", "swebounty.pytest_guard", "swebounty.frameworks.")
CLUSTER_NODE = "node"  # Verdict.node, EvalContext.node: the cluster's node


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def framework_words(path: Path) -> list[str]:
    """Every place `path` names a framework: (line, what) as text."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        words: list[str] = []
        if isinstance(node, ast.Import):
            words = [a.name for a in node.names if a.name.startswith(FRAMEWORK_MODULES)]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.startswith(FRAMEWORK_MODULES) or (
                module not in ALLOWED_IMPORTS and FRAMEWORK_WORDS.search(module)
            ):
                words = [module]
            words += [a.name for a in node.names if FRAMEWORK_WORDS.search(a.name)]
        elif isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute) and node.attr != CLUSTER_NODE:
            words = [node.attr]
        elif isinstance(node, ast.arg):
            words = [node.arg]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            words = [node.name]
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
        ):
            words = [node.value]
        found += [f"{path.name}:{line}: {w!r}" for w in words if FRAMEWORK_WORDS.search(w)]
    return found


@pytest.mark.parametrize("name", EVALUATION_PATH)
def test_the_evaluation_path_names_no_framework(name: str) -> None:
    assert framework_words(PACKAGE / name) == []


def test_the_check_finds_a_framework_branch(tmp_path: Path) -> None:
    branchy = tmp_path / "branchy.py"
    branchy.write_text(
        '"""Docs may say pytest."""\n'
        "from swebounty.node.grading import grade_node\n"
        "from swebounty.testing import pytest_command\n"
        "def grade(task, ctx):\n"
        "    if task.ecosystem == 'node':\n"
        "        return grade_node(task)\n"
        "    return ctx.node, 'no JUnit XML'\n"
    )
    found = "\n".join(framework_words(branchy))
    for expected in ("swebounty.node.grading", "pytest_command", "ecosystem", "'node'",
                     "grade_node", "no JUnit XML"):  # fmt: skip
        assert expected in found
    assert "Docs may say" not in found and "ctx" not in found
