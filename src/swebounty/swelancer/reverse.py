"""A unified git diff reversed, as text: what `git apply -R` would apply, as a forward patch.

SWE-Lancer publishes the patch that puts a bug back; the reference fix is that patch reversed.
Per file: the old and new names swap (`---`/`+++`, `rename from`/`to`, `copy` refused), new and
deleted files swap, modes and blob ids swap; per hunk: the ranges swap and `+`/`-` lines swap
(a `\\ No newline at end of file` stays after the line it follows), removals first, as git
writes them. Binary patches are refused.
"""

from __future__ import annotations

import re

_HUNK = re.compile(r"@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)")
_INDEX = re.compile(r"index ([0-9a-f]+)\.\.([0-9a-f]+)(.*)")
_DIFF = re.compile(r"diff --git a/(.*) b/(.*)")


class ReverseError(ValueError):
    """The patch cannot be reversed as text (binary, copies, or not a unified diff)."""


def _swap_header(lines: list[str]) -> list[str]:
    """One file's header lines (from `diff --git` to the first hunk), reversed."""
    out: list[str] = []
    old_mode = new_mode = None
    minus = plus = None
    renamed_from = next(
        (x[len("rename from ") :] for x in lines if x.startswith("rename from ")), ""
    )
    renamed_to = next((x[len("rename to ") :] for x in lines if x.startswith("rename to ")), "")
    for line in lines:
        if m := _DIFF.fullmatch(line):
            out.append(f"diff --git a/{m.group(2)} b/{m.group(1)}")
        elif line.startswith("new file mode "):
            out.append("deleted file mode " + line[len("new file mode ") :])
        elif line.startswith("deleted file mode "):
            out.append("new file mode " + line[len("deleted file mode ") :])
        elif line.startswith("old mode "):
            old_mode = line[len("old mode ") :]
        elif line.startswith("new mode "):
            new_mode = line[len("new mode ") :]
        elif line.startswith("rename from "):
            out.append("rename from " + renamed_to)
        elif line.startswith("rename to "):
            out.append("rename to " + renamed_from)
        elif line.startswith(("copy from ", "copy to ")):
            raise ReverseError("a copy cannot be reversed as a patch")
        elif m := _INDEX.fullmatch(line):
            out.append(f"index {m.group(2)}..{m.group(1)}{m.group(3)}")
        elif line.startswith("--- "):
            minus = line[4:]
        elif line.startswith("+++ "):
            plus = line[4:]
        elif line.startswith(("GIT binary patch", "Binary files ")):
            raise ReverseError("a binary patch cannot be reversed as text")
        else:
            out.append(line)
    if old_mode is not None and new_mode is not None:
        out += [f"old mode {new_mode}", f"new mode {old_mode}"]
    if minus is not None and plus is not None:
        # `--- a/x` becomes `+++ b/x`: the side's prefix goes with its side.
        new_minus = "/dev/null" if plus == "/dev/null" else "a/" + plus.split("/", 1)[-1]
        new_plus = "/dev/null" if minus == "/dev/null" else "b/" + minus.split("/", 1)[-1]
        out += [f"--- {new_minus}", f"+++ {new_plus}"]
    return out


def _swap_body(lines: list[str]) -> list[str]:
    """Hunks reversed; in each run of changed lines the removed ones come first, as git writes
    them (a `\\ No newline` line travels with the line before it)."""
    out: list[str] = []
    minus: list[str] = []
    plus: list[str] = []

    def flush() -> None:
        out.extend(minus + plus)
        minus.clear()
        plus.clear()

    last: list[str] | None = None
    for line in lines:
        if line.startswith("\\") and last is not None:
            last.append(line)
            continue
        if line.startswith("+"):
            minus.append("-" + line[1:])
            last = minus
        elif line.startswith("-"):
            plus.append("+" + line[1:])
            last = plus
        else:
            flush()
            m = _HUNK.fullmatch(line)
            out.append(f"@@ -{m.group(2)} +{m.group(1)} @@{m.group(3)}" if m else line)
            last = out
    flush()
    return out


def reverse_patch(patch: str) -> str:
    """`patch` reversed; ReverseError when that cannot be done as text."""
    lines = patch.split("\n")
    trailing = lines[-1] == ""
    if trailing:
        lines.pop()
    starts = [i for i, line in enumerate(lines) if line.startswith("diff --git ")]
    if not starts:
        raise ReverseError("not a git diff (no 'diff --git' line)")
    out = lines[: starts[0]]  # a preamble (a commit message) stays as it is
    for start, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        section = lines[start:end]
        first_hunk = next(
            (i for i, line in enumerate(section) if line.startswith("@@ ")), len(section)
        )
        out += _swap_header(section[:first_hunk]) + _swap_body(section[first_hunk:])
    return "\n".join(out) + ("\n" if trailing else "")
