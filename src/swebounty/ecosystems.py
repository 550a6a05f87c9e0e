"""A task's ecosystem (`Task.ecosystem`): Python, or JavaScript/TypeScript ("node").

A task that names none — a SWE-bench-format row, which has no such field — is decided by its
repository at the base commit: a `package.json` at the root and no Python packaging there is a
Node project, Python packaging and no `package.json` a Python one. A root with both (django
keeps a package.json for its JavaScript tests) or neither is decided by the code the task's
patches change and its test ids name. A task whose environment spec says (a Python version, a
Node version) needs no look. When nothing says, the task is refused with the field to add.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Literal

from swebounty.repos import ensure_mirror, git
from swebounty.tasks import Task

Ecosystem = Literal["python", "node"]

NODE_MARKERS = frozenset({"package.json"})
PYTHON_MARKERS = frozenset(
    {"pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "tox.ini", "requirements.txt"}
)
_JS_CODE = re.compile(r"\.(?:[cm]?[jt]sx?|vue|svelte)$")
_DIFF_PATH = re.compile(r"^diff --git a/(\S+)", re.M)
_ID_PATH = re.compile(r"^([\w@.+/-]+\.(?:pyi?|[cm]?[jt]sx?))(?:::|:|$)")


class EcosystemError(ValueError):
    """The repository does not say which ecosystem a task belongs to: the task must."""


def code_ecosystem(paths: Iterable[str]) -> Ecosystem | None:
    """The language most of these files are written in, if they are Python or JS/TS code."""
    names = [PurePosixPath(p).name for p in paths]
    js = sum(1 for n in names if _JS_CODE.search(n))
    py = sum(1 for n in names if n.endswith((".py", ".pyi")))
    if js == py:
        return None
    return "node" if js > py else "python"


def decide(root: Iterable[str], patch_paths: Sequence[str]) -> Ecosystem | None:
    """The ecosystem of a repository whose root holds `root` (names), for a task whose
    patches change `patch_paths`; None when neither says."""
    names = set(root)
    node, python = bool(NODE_MARKERS & names), bool(PYTHON_MARKERS & names)
    if node != python:
        return "node" if node else "python"
    return code_ecosystem(patch_paths)


def code_paths(task: Task) -> list[str]:
    """The files the task's test patch and reference patch change, and those its test ids
    name (`tests/t.py::test_a`, `test/a.test.js:title`)."""
    paths = _DIFF_PATH.findall(task.test_patch) + _DIFF_PATH.findall(task.patch)
    for test_id in task.FAIL_TO_PASS + task.PASS_TO_PASS:
        named = _ID_PATH.match(test_id)
        if named:
            paths.append(named[1])
    return paths


def declared(task: Task) -> Ecosystem | None:
    """What the task's environment spec implies: a Python version or pip installs, or a Node
    version or an app to start."""
    spec = task.env_spec
    if spec is None:
        return None
    python = bool(spec.python or spec.install or spec.extras or spec.requirements)
    node = bool(spec.node or spec.app_cmd)
    return None if python == node else ("python" if python else "node")


def resolve(task: Task, *, repos_dir: Path | None, cache_dir: Path) -> Task:
    """`task` with its ecosystem set: as given, else decided from its repository (a copy)."""
    if task.ecosystem is not None or task.kind == "pick":
        return task
    if declared(task):
        return task.model_copy(update={"ecosystem": declared(task)})
    mirror = ensure_mirror(
        task.repo, repos_dir=repos_dir, cache_dir=cache_dir, url=task.repo_url,
        commits=[task.base_commit],
    )  # fmt: skip
    root = _root_names(str(mirror), task.base_commit)
    found = decide(root, code_paths(task))
    if found is None:
        held = sorted((NODE_MARKERS | PYTHON_MARKERS) & set(root))
        what = (
            f"its root holds {', '.join(held)}"
            if held
            else "its root has no package.json, pyproject.toml, setup.py or setup.cfg"
        )
        raise EcosystemError(
            f"cannot tell whether {task.repo} at {task.base_commit[:12]} is a Python or a "
            f"JavaScript/TypeScript project ({what}, and neither its patches nor its test ids "
            'name code that says): add "ecosystem": "python" or "ecosystem": "node" to the task'
        )
    return task.model_copy(update={"ecosystem": found})


@functools.lru_cache(maxsize=256)
def _root_names(mirror: str, commit: str) -> tuple[str, ...]:
    out = git(Path(mirror), "ls-tree", "--name-only", f"{commit}^{{tree}}").stdout
    return tuple(out.decode("utf-8", errors="replace").splitlines())
