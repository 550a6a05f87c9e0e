"""Quality filters for candidates. Each one can be switched off and each one is counted.

A filter is a function `(task, config) -> reason | None`; the first filter that gives a reason
rejects the task (the order below is cheapest first).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from swebounty.collect.split import diff_lines, split_diff
from swebounty.tasks import Task


class FilterConfig(BaseModel):
    """Switches and thresholds; `enabled` names the filters to run."""

    enabled: list[str] = Field(
        default_factory=lambda: list(FILTERS),
        description="names of the filters to apply: binary, problem_length, patch_size, leak, "
        "error_message_only",
    )
    min_problem_chars: int = 30
    max_problem_chars: int = 20000
    max_patch_lines: int = 500
    max_patch_files: int = 10
    # An added line shorter than this (stripped) is too generic to count as quoted code.
    min_leak_line_chars: int = 20
    max_leaked_lines: int = 0
    # New identifiers (defined by the patch) named in the statement; a feature request naming
    # the one function it asks for is fine, a statement naming several is the solution.
    max_leaked_identifiers: int = 2


def _problem_length(task: Task, cfg: FilterConfig) -> str | None:
    n = len(task.problem_statement.strip())
    if n < cfg.min_problem_chars:
        return f"problem statement too short ({n} < {cfg.min_problem_chars} chars)"
    if n > cfg.max_problem_chars:
        return f"problem statement too long ({n} > {cfg.max_problem_chars} chars)"
    return None


def _binary(task: Task, cfg: FilterConfig) -> str | None:
    binary = list((task.model_extra or {}).get("binary_files") or [])
    binary += split_diff(task.patch).binary_files + split_diff(task.test_patch).binary_files
    return f"binary files: {', '.join(sorted(set(binary))[:5])}" if binary else None


def _patch_size(task: Task, cfg: FilterConfig) -> str | None:
    split = split_diff(task.patch)
    lines = sum(f.added + f.removed for f in split.files)
    if lines > cfg.max_patch_lines:
        return f"patch too large ({lines} > {cfg.max_patch_lines} lines changed)"
    if len(split.files) > cfg.max_patch_files:
        return f"patch touches too many files ({len(split.files)} > {cfg.max_patch_files})"
    return None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFINES = re.compile(
    r"^\s*(?:async\s+)?(?:def|class|function|func|fn|struct|interface|type|const|let|var)\s+"
    r"([A-Za-z_][A-Za-z0-9_]*)|^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?::[^=]+)?=(?!=)"
)
_TRIVIAL = re.compile(r"^[\s\W]*$|^\s*(#|//|/\*|\*)")


def leaked(task: Task, cfg: FilterConfig) -> tuple[list[str], list[str]]:
    """(added code lines quoted in the statement, new identifiers named in it).

    Only code files count: a changelog entry and the commit message naturally say the same."""
    code = "".join(f.text for f in split_diff(task.patch).files if f.kind == "code")
    added, old = diff_lines(code)
    old_set = {line.strip() for line in old}
    text = task.problem_statement
    squashed = re.sub(r"\s+", " ", text)
    lines = []
    for line in added:
        s = line.strip()
        if len(s) < cfg.min_leak_line_chars or s in old_set or _TRIVIAL.match(s):
            continue  # short, moved or comment lines say nothing about the solution
        if re.sub(r"\s+", " ", s) in squashed:
            lines.append(s)
    old_idents = set(_IDENT.findall("\n".join(old)))
    new_idents: set[str] = set()
    for line in added:
        m = _DEFINES.match(line)
        if m:
            name = (m.group(1) or m.group(2)).split(".")[-1]
            if name not in old_idents and len(name) > 3:
                new_idents.add(name)
    named = sorted(n for n in new_idents if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text))
    return lines, named


def _leak(task: Task, cfg: FilterConfig) -> str | None:
    lines, idents = leaked(task, cfg)
    if len(lines) > cfg.max_leaked_lines:
        return f"solution leaks into the problem statement: quotes {lines[0]!r}"
    if len(idents) > cfg.max_leaked_identifiers:
        return f"solution leaks into the problem statement: names new {', '.join(idents)}"
    return None


_MESSAGE_CHECK = re.compile(
    r"match\s*=|\bstr\(\s*(e|exc|err|error|ex|excinfo|exc_info|cm)\b|excinfo\.value|"
    r"exc_info\.value|\.exception\)|\.message\b|\.args\[0\]|assertRaisesRegex|"
    r"toThrow(Error)?\s*\(\s*['\"/]|\.msg\b|err\.Error\(\)",
)
_STRING = re.compile(r"(['\"]).{3,}?\1")
# Lines that carry no check of their own: structure, imports, the raising call itself.
_NEUTRAL = re.compile(
    r"^\s*($|#|//|@[\w.]+$|def |async def |class |import |from \S+ import "
    r"|with pytest\.raises\([\w.]+\)|[\w.]+\(.*\)\s*;?$|[)\]}],?$|pass$|\.\.\.$)"
)


def _error_message_only(task: Task, cfg: FilterConfig) -> str | None:
    """Every check the test patch adds is about an error message's wording (the fix rewords
    an error, which no solver can guess): no other assertion, data or setup was added."""
    added, _ = diff_lines(task.test_patch)
    messages = [line for line in added if _MESSAGE_CHECK.search(line) and _STRING.search(line)]
    if not messages:
        return None
    others = [ln for ln in added if ln not in messages and not _NEUTRAL.match(ln.strip())]
    if others:
        return None
    return f"tests only check error-message strings ({len(messages)} checks)"


FILTERS: dict[str, Callable[[Task, FilterConfig], str | None]] = {
    "binary": _binary,
    "problem_length": _problem_length,
    "patch_size": _patch_size,
    "leak": _leak,
    "error_message_only": _error_message_only,
}


@dataclass
class FilterSummary:
    """How many tasks each filter saw and rejected."""

    seen: int = 0
    kept: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


def check(task: Task, cfg: FilterConfig) -> tuple[str, str] | None:
    """(filter name, reason) of the first enabled filter that rejects `task`, or None."""
    unknown = set(cfg.enabled) - set(FILTERS)
    if unknown:
        raise ValueError(f"unknown filters {sorted(unknown)}; choose from {sorted(FILTERS)}")
    for name, fn in FILTERS.items():
        if name in cfg.enabled and (reason := fn(task, cfg)):
            return name, reason
    return None


def apply_filters(
    tasks: Iterable[Task], cfg: FilterConfig | None = None
) -> tuple[list[Task], list[tuple[Task, str, str]], FilterSummary]:
    """(kept, [(task, filter, reason)], summary)."""
    cfg = cfg or FilterConfig()
    kept: list[Task] = []
    rejects: list[tuple[Task, str, str]] = []
    summary = FilterSummary()
    for task in tasks:
        summary.seen += 1
        verdict = check(task, cfg)
        if verdict is None:
            kept.append(task)
            summary.kept += 1
        else:
            rejects.append((task, *verdict))
            summary.rejected[verdict[0]] += 1
    return kept, rejects, summary
