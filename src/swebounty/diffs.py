"""Reading unified diffs: the files a patch names (created, deleted, renamed, binary), its added,
removed and context lines, and the checks its text and every path it names must pass.

A patch is untrusted input: check_text bounds its size and insists on UTF-8, and check_path
refuses any path outside the workspace or inside `.git`. Applying one is `patches.py`'s.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

log = logging.getLogger(__name__)

DEFAULT_MAX_PATCH_BYTES = 5 * 1024 * 1024


class PatchError(Exception):
    """A patch that cannot be read or applied; the message says why and what was tried."""


@dataclass
class FileDiff:
    """One file's part of a patch. `source`/`target` are None for a created/deleted file."""

    source: str | None
    target: str | None
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    binary: bool = False

    @property
    def path(self) -> str:
        """The path after the patch (the old one for a deleted file)."""
        return self.target or self.source or ""

    @property
    def deleted(self) -> bool:
        return self.target is None


def check_text(patch: str | bytes, max_bytes: int = DEFAULT_MAX_PATCH_BYTES) -> str:
    """The patch as text, or PatchError when it is not UTF-8 or larger than `max_bytes`."""
    if isinstance(patch, bytes):
        try:
            patch = patch.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PatchError(
                f"patch is not valid UTF-8 ({exc}); re-encode it as UTF-8 text"
            ) from exc
    try:
        size = len(patch.encode("utf-8"))
    except UnicodeEncodeError as exc:
        # Lone surrogates: the text was decoded from non-UTF-8 bytes with surrogateescape.
        raise PatchError(f"patch is not valid UTF-8 ({exc}); re-encode it as UTF-8 text") from exc
    if size > max_bytes:
        raise PatchError(
            f"patch is {size} bytes, over the {max_bytes}-byte limit; a real fix is rarely this"
            " large (raise max_bytes if it truly is)"
        )
    return patch


def parse_patch(patch: str) -> list[FileDiff]:
    """The files of a unified diff (git extended headers, renames and binary diffs included).

    Falls back to reading the headers alone when unidiff cannot parse the hunks, so a slightly
    malformed patch still names its files.
    """
    try:
        patch_set = PatchSet(patch)
    except UnidiffParseError as exc:
        log.debug("unidiff could not parse the patch (%s); reading headers only", exc)
        return _headers_only(patch)
    diffs = []
    for pf in patch_set:
        diff = FileDiff(
            source=_strip_path(pf.source_file),
            target=_strip_path(pf.target_file),
            binary=pf.is_binary_file,
        )
        for hunk in pf:
            for line in hunk:
                value = line.value.rstrip("\n")
                if line.is_added:
                    diff.added.append(value)
                elif line.is_removed:
                    diff.removed.append(value)
                elif line.is_context:
                    diff.context.append(value)
        diffs.append(diff)
    return diffs


def files_in_patch(patch: str) -> list[str]:
    """Every path the patch touches, in order: created, deleted, both sides of a rename."""
    paths: list[str] = []
    for diff in parse_patch(patch):
        for path in (diff.source, diff.target):
            if path and path not in paths:
                paths.append(path)
    return paths


_DIFF_GIT = re.compile(r"^diff --git (\"?a/.*) (\"?b/.*)$")


def _headers_only(patch: str) -> list[FileDiff]:
    diffs: list[FileDiff] = []
    source: str | None = None
    for line in patch.splitlines():
        match = _DIFF_GIT.match(line)
        if match:
            diffs.append(FileDiff(_strip_path(match[1]), _strip_path(match[2])))
            source = None
        elif line.startswith("--- "):
            source = _strip_path(line[4:])
        elif line.startswith("+++ ") and source is not None:
            target = _strip_path(line[4:])
            if not diffs or (diffs[-1].source, diffs[-1].target) != (source, target):
                diffs.append(FileDiff(source, target))
            source = None
    return diffs


_ESCAPES = dict(zip('ntabfrv"\\', '\n\t\a\b\f\r\v"\\', strict=True))


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual file names ("t\\303\\251st.py")."""
    if len(path) < 2 or path[0] != '"' or path[-1] != '"':
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            octal = re.match(r"[0-7]{1,3}", body[i + 1 : i + 4])
            if octal:
                out.append(int(octal[0], 8) & 0xFF)
                i += 1 + len(octal[0])
                continue
            out += _ESCAPES.get(body[i + 1], body[i + 1]).encode()
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode("utf-8", errors="surrogateescape")


def _strip_path(raw: str | None) -> str | None:
    """A header path without quoting, timestamp and the first component (as `-p1` does)."""
    if raw is None:
        return None
    raw = raw.split("\t", 1)[0].rstrip()
    path = _unquote(raw)
    if path == "/dev/null":
        return None
    return path.split("/", 1)[1] if "/" in path else path


def check_path(path: str) -> None:
    """PatchError unless `path` stays inside the workspace and out of `.git`."""
    parts = path.split("/")
    if (
        not path
        or path.startswith("/")
        or "\0" in path
        or "\n" in path
        or any(p == ".." for p in parts)
        or any(p.casefold().rstrip(". ") == ".git" for p in parts)
    ):
        raise PatchError(
            f"patch touches {path!r}, outside the workspace or inside .git; refusing to apply"
        )
