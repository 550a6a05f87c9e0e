"""Split a fix's diff into the reference `patch` and the hidden `test_patch`.

Files are classified by path rules (globs, configurable) into tests, code and other (docs,
changelogs, config). Tests go to `test_patch`; code and other go to `patch`, because a real fix
ships its changelog entry too. A fix is a task candidate only when it changes both tests and code.

The diff is cut per file on the raw bytes, so a file that is not UTF-8 (a binary blob git did not
recognise) is recorded as binary instead of corrupting the text of the patch.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field
from unidiff.patch import PatchSet

FileKind = Literal["test", "code", "other", "binary"]

# Directory names that hold tests in the ecosystems we meet (pytest, jest, go, cargo, maven...).
# `testsuite`: pint keeps its tests and their helpers in pint/testsuite; without it a helper the
# test modules import went to the reference patch, and the tests failed to import before it.
DEFAULT_TEST_DIRS = [
    "tests",
    "test",
    "testsuite",
    "__tests__",
    "e2e",
    "spec",
    "testdata",
    "cypress",
]
DEFAULT_TEST_GLOBS = [
    "test_*.py",
    "*_test.py",
    "tests.py",
    "conftest.py",
    "*_test.go",
    "*.test.js",
    "*.test.jsx",
    "*.test.ts",
    "*.test.tsx",
    "*.spec.js",
    "*.spec.jsx",
    "*.spec.ts",
    "*.spec.tsx",
    "*Test.java",
    "*Tests.java",
    "*_spec.rb",
    "*_test.rb",
    "src/test/*",
    "*/src/test/*",
    # pytest's own layout; not a directory rule because numpy/testing is library code
    "testing/*",
]
# Code that is not the library: documentation, examples, CI and packaging scripts. A fix that
# changes only these besides its tests is not a task (SWE-bench Verified's reviewers rejected
# such tasks: nothing in the library to fix).
DEFAULT_NON_CODE_DIRS = [
    "docs",
    "doc",
    "examples",
    "benchmarks",
    "asv_bench",
    ".github",
    ".circleci",
    ".gitlab",
    "ci",
]
DEFAULT_NON_CODE_GLOBS = [
    "setup.py",
    "noxfile.py",
    "fabfile.py",
    "tasks.py",
    "scripts/*",
    "tools/*",
]
DEFAULT_CODE_EXTENSIONS = [
    ".py", ".pyx", ".pxd", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".go", ".rs",
    ".java", ".kt", ".scala", ".rb", ".php", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift",
    ".m", ".sh", ".lua", ".jl", ".r", ".ex", ".exs", ".erl", ".hs", ".ml", ".dart", ".vue",
    ".svelte",
]  # fmt: skip


class SplitRules(BaseModel):
    """Which paths are tests and which are code. Globs match the full path or the file name."""

    test_dirs: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEST_DIRS),
        description="a path with any of these directory names is a test file",
    )
    test_globs: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEST_GLOBS),
        description="fnmatch globs on the path or the file name that mark test files",
    )
    code_extensions: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CODE_EXTENSIONS),
        description="a non-test file with one of these suffixes is code; the rest is 'other'",
    )
    non_code_dirs: list[str] = Field(
        default_factory=lambda: list(DEFAULT_NON_CODE_DIRS),
        description="a non-test path under a directory of this name is docs or tooling, not code",
    )
    non_code_globs: list[str] = Field(
        default_factory=lambda: list(DEFAULT_NON_CODE_GLOBS),
        description="fnmatch globs on the full path of packaging and tooling scripts (setup.py "
        "at the root, not a module of that name deeper in the package)",
    )

    def classify(self, path: str) -> Literal["test", "code", "other"]:
        pure = PurePosixPath(path)
        if any(part in self.test_dirs for part in pure.parts[:-1]):
            return "test"
        if _matches(pure, path, self.test_globs):
            return "test"
        if any(part in self.non_code_dirs for part in pure.parts[:-1]):
            return "other"
        if any(fnmatch.fnmatch(path, g) for g in self.non_code_globs):
            return "other"
        if pure.suffix.lower() in self.code_extensions:
            return "code"
        return "other"


def _matches(pure: PurePosixPath, path: str, globs: list[str]) -> bool:
    return any(fnmatch.fnmatch(pure.name, g) or fnmatch.fnmatch(path, g) for g in globs)


@dataclass
class FileChange:
    path: str
    kind: FileKind
    text: str  # the file's section of the diff ("" for binary sections)
    added: int = 0
    removed: int = 0


@dataclass
class SplitDiff:
    patch: str
    test_patch: str
    files: list[FileChange] = field(default_factory=list)

    def paths(self, *kinds: FileKind) -> list[str]:
        return [f.path for f in self.files if f.kind in kinds]

    @property
    def binary_files(self) -> list[str]:
        return self.paths("binary")

    @property
    def code_lines(self) -> int:
        """Lines added plus removed in code files: the size of the fix itself."""
        return sum(f.added + f.removed for f in self.files if f.kind == "code")

    @property
    def rejection(self) -> str | None:
        """Why this fix cannot become a task, or None."""
        if not self.paths("test"):
            return "no test change"
        if not self.paths("code"):
            return "no code change (only tests, docs or packaging)"
        return None


_FILE_START = re.compile(rb"^diff --git ", re.MULTILINE)
_HEADER_PATH = re.compile(r'^diff --git (?:"?a/)(.+?)"? (?:"?b/)(.+?)"?$')


def _chunks(diff: bytes) -> list[bytes]:
    starts = [m.start() for m in _FILE_START.finditer(diff)]
    if not starts:
        # A plain unified diff (no git headers): unidiff cuts it file by file.
        text = diff.decode("utf-8", errors="replace")
        return [str(pf).encode("utf-8") for pf in PatchSet(text)] if text.strip() else []
    return [diff[a:b] for a, b in zip(starts, [*starts[1:], len(diff)], strict=True)]


def _unquote(path: str) -> str:
    # git quotes paths with unusual characters; unidiff keeps the quotes.
    return path[1:-1] if len(path) >= 2 and path[0] == path[-1] == '"' else path


def split_diff(diff: bytes | str, rules: SplitRules | None = None) -> SplitDiff:
    """Cut a `git diff` output into patch and test_patch by the rules."""
    rules = rules or SplitRules()
    raw = diff.encode("utf-8") if isinstance(diff, str) else diff
    files: list[FileChange] = []
    for chunk in _chunks(raw):
        first_line = chunk.split(b"\n", 1)[0].decode("utf-8", errors="replace")
        header = _HEADER_PATH.match(first_line)
        header_path = _unquote(header.group(2)) if header else first_line
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError:
            files.append(FileChange(header_path, "binary", ""))
            continue
        parsed = PatchSet(text)
        if not parsed:
            # A mode-only change has no hunks; unidiff still yields it, but be safe.
            files.append(FileChange(header_path, rules.classify(header_path), text))
            continue
        pf = parsed[0]
        path = _unquote(pf.path)
        if pf.is_binary_file:
            files.append(FileChange(path, "binary", ""))
            continue
        files.append(FileChange(path, rules.classify(path), text, pf.added, pf.removed))
    patch = "".join(f.text for f in files if f.kind in ("code", "other"))
    test_patch = "".join(f.text for f in files if f.kind == "test")
    return SplitDiff(patch=patch, test_patch=test_patch, files=files)


def diff_lines(patch: str) -> tuple[list[str], list[str]]:
    """(added lines, removed-or-context lines) of a text diff, without their +/-/space marks."""
    added: list[str] = []
    old: list[str] = []
    for pf in PatchSet(patch):
        for hunk in pf:
            for line in hunk:
                if line.is_added:
                    added.append(line.value.rstrip("\n"))
                elif line.is_removed or line.is_context:
                    old.append(line.value.rstrip("\n"))
    return added, old


def files_in(patch: str) -> list[str]:
    """Paths a text diff touches."""
    return [_unquote(pf.path) for pf in PatchSet(patch)]
