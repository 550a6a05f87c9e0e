"""Old releases whose metadata uv cannot parse, read leniently and handed back to uv.

Releases of 2011-2014 declare requirements that were fine for the pip of their time and are
invalid today: `pytz (>=2011k)` (pytz's own letter-suffixed versions), `foo (>=1.0-dev)`,
`Requires-Python: >=2.6.*`. uv skips such a release without a word and walks back to an
older one, and when every recent release carries the same line, back to an ancient release
whose source distribution no longer builds (12-20 minutes per task, then a failure). The rule:
a release uv calls invalid is read from the index, each requirement it cannot parse is
repaired (a version clause that is not a version is cut to its longest valid prefix, `2011k`
-> `2011`, or dropped), and the repaired metadata is given to uv as `dependency-metadata`,
so the release of the time is used as it was.
"""

from __future__ import annotations

import io
import logging
import re
import tarfile
import zipfile
from email.parser import HeaderParser

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from swebounty.envs.releases import index_files, version_of

log = logging.getLogger(__name__)

# uv's warning (RUST_LOG=warn) for a release it skipped: "`name==version` has invalid metadata".
INVALID = re.compile(r"`([A-Za-z0-9][A-Za-z0-9._-]*)==([^`\s]+)` has invalid metadata")
MAX_ARCHIVE_BYTES = 50 << 20
_REQ = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<extras>\[[^\]]*\])?\s*"
    r"(?P<spec>\(?[^;]*?\)?)\s*(?:;\s*(?P<marker>.*))?$"
)
_CLAUSE = re.compile(r"^\s*(===|==|!=|~=|<=|>=|<|>)\s*(\S+)\s*$")


def invalid_releases(output: str) -> list[tuple[str, str]]:
    """(name, version) of each release uv reported as having invalid metadata."""
    return list(dict.fromkeys((canonicalize_name(n), v) for n, v in INVALID.findall(output)))


class Repair:
    """A release's metadata, as uv will be told it: requirements and Requires-Python."""

    def __init__(
        self, name: str, version: str, requires: list[str], python: str | None, notes: list[str]
    ) -> None:
        self.name, self.version = name, version
        self.requires, self.python, self.notes = requires, python, notes

    def toml(self) -> str:
        lines = [
            "[[dependency-metadata]]",
            f"name = {_quote(self.name)}",
            f"version = {_quote(self.version)}",
            "requires-dist = [" + ", ".join(_quote(r) for r in self.requires) + "]",
        ]
        if self.python:
            lines.append(f"requires-python = {_quote(self.python)}")
        return "\n".join(lines) + "\n"

    def describe(self) -> str:
        return f"metadata of {self.name} {self.version} repaired ({'; '.join(self.notes)})"


def repair(name: str, version: str) -> Repair | None:
    """The repaired metadata of release `name` `version`, read from the index; None when no
    file of it can be read, or nothing in it needs repair."""
    raw = _read_metadata(name, version)
    if raw is None:
        return None
    headers = HeaderParser().parsestr(raw)
    notes: list[str] = []
    requires: list[str] = []
    for line in headers.get_all("Requires-Dist") or []:
        fixed = lenient_requirement(line)
        if fixed != line.strip():
            notes.append(f"`{line.strip()}` -> `{fixed}`" if fixed else f"`{line.strip()}` dropped")
        if fixed:
            requires.append(fixed)
    python = headers.get("Requires-Python")
    if python:
        fixed_python = lenient_specifier(python)
        if fixed_python != python.strip():
            notes.append(f"Requires-Python `{python.strip()}` -> `{fixed_python or 'any'}`")
        python = fixed_python or None
    if not notes:
        return None
    log.info("repaired the metadata of %s %s: %s", name, version, "; ".join(notes))
    return Repair(name, version, requires, python, notes)


def lenient_requirement(text: str) -> str | None:
    """`text` as a valid requirement: as it is when it parses, else with every version clause
    that is not a version cut to its longest valid prefix or dropped; None when even its name
    or marker cannot be read."""
    text = text.strip()
    try:
        return str(Requirement(text))
    except InvalidRequirement:
        pass
    found = _REQ.match(text)
    if found is None:
        return None
    marker = found.group("marker")
    if marker:
        try:
            Marker(marker)
        except InvalidMarker:
            return None
    spec = lenient_specifier(found.group("spec").strip().strip("()"))
    fixed = found.group("name") + (found.group("extras") or "") + (spec or "")
    fixed += f"; {marker}" if marker else ""
    try:
        return str(Requirement(fixed))
    except InvalidRequirement:
        return None


def lenient_specifier(text: str) -> str:
    """The clauses of a version specifier that are (or, cut short, become) valid."""
    kept = []
    for clause in text.split(","):
        if not clause.strip():
            continue
        found = _CLAUSE.match(clause)
        if found is None:
            continue
        op, version = found.groups()
        candidate = _valid_prefix(version.removesuffix(".*"))
        if candidate is None:
            continue
        wild = ".*" if version.endswith(".*") and op in ("==", "!=") else ""
        try:
            SpecifierSet(f"{op}{candidate}{wild}")
        except InvalidSpecifier:
            continue
        kept.append(f"{op}{candidate}{wild}")
    return ",".join(kept)


def _valid_prefix(version: str) -> str | None:
    for end in range(len(version), 0, -1):
        head = version[:end].rstrip(".-_+")
        try:
            Version(head)
        except InvalidVersion:
            continue
        return head
    return None


def _read_metadata(name: str, version: str) -> str | None:
    """The core metadata of a release: its wheel's METADATA (from PEP 658 when the index
    serves it), else the PKG-INFO of its source distribution."""
    import httpx  # rare path: keeps it off the import time of every command

    files = index_files(name) or []
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None
    mine = [f for f in files if version_of(name, str(f.get("filename", ""))) == wanted]
    mine.sort(key=lambda f: not str(f.get("filename", "")).endswith(".whl"))
    for f in mine:
        url, filename = f.get("url"), str(f.get("filename", ""))
        size = f.get("size")
        if not isinstance(url, str) or (isinstance(size, int) and size > MAX_ARCHIVE_BYTES):
            continue
        try:
            if filename.endswith(".whl") and f.get("core-metadata"):
                resp = httpx.get(url + ".metadata", timeout=60, follow_redirects=True)
                resp.raise_for_status()
                return resp.text
            resp = httpx.get(url, timeout=120, follow_redirects=True)
            resp.raise_for_status()
        except httpx.HTTPError as exc:
            log.warning("could not read %s: %s", filename, exc)
            continue
        text = _metadata_in(filename, resp.content)
        if text is not None:
            return text
    return None


def _metadata_in(filename: str, data: bytes) -> str | None:
    try:
        if filename.endswith((".whl", ".zip")):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                names = [
                    n
                    for n in zf.namelist()
                    if n.endswith((".dist-info/METADATA", "/PKG-INFO")) and n.count("/") <= 2
                ]
                return zf.read(names[0]).decode("utf-8", "replace") if names else None
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            for member in tf.getmembers():
                top = member.isfile() and member.name.count("/") == 1
                if top and member.name.endswith("/PKG-INFO"):
                    handle = tf.extractfile(member)
                    return handle.read().decode("utf-8", "replace") if handle else None
    except (zipfile.BadZipFile, tarfile.TarError, OSError, KeyError):
        return None
    return None


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
