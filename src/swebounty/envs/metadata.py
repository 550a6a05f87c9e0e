"""Old releases whose metadata uv cannot parse, read leniently and handed back to uv.

Releases of 2011-2014 declare requirements that were fine for the pip of their time and are
invalid today: `pytz (>=2011k)` (pytz's own letter-suffixed versions), `foo (>=1.0-dev)`,
`Requires-Python: >=2.6.*`. uv skips such a release without a word and walks back to an
older one, and when every recent release carries the same line, back to an ancient release
whose source distribution no longer builds (12-20 minutes per task, then a failure). The rule:
a release uv calls invalid is read from the index, each requirement it cannot parse is
repaired (a version clause that is not a version is cut to its longest valid prefix, `2011k`
-> `2011`, or dropped), and the repaired metadata is given to uv as `dependency-metadata`,
so the release of the time is used as it was. An sdist whose *built* metadata is invalid
cannot even be installed by uv: it is built into a wheel (`uv build` reads no metadata), the
wheel's METADATA repaired the same way, and the wheel handed to uv with the repacked sdists
(`--find-links`, sdists.py).
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import os
import re
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from email.parser import HeaderParser
from pathlib import Path

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from swebounty.envs.failures import StepFailed
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
    """A release's metadata, as uv will be told it: requirements, Requires-Python and, when
    known, the extras it provides."""

    def __init__(
        self,
        name: str,
        version: str,
        requires: list[str],
        python: str | None,
        notes: list[str],
        extras: list[str] | None = None,
    ) -> None:
        self.name, self.version = name, version
        self.requires, self.python, self.notes = requires, python, notes
        self.extras = extras

    def toml(self) -> str:
        lines = [
            "[[dependency-metadata]]",
            f"name = {_quote(self.name)}",
            f"version = {_quote(self.version)}",
            "requires-dist = [" + ", ".join(_quote(r) for r in self.requires) + "]",
        ]
        if self.python:
            lines.append(f"requires-python = {_quote(self.python)}")
        if self.extras is not None:
            lines.append("provides-extras = [" + ", ".join(_quote(e) for e in self.extras) + "]")
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
    """The core metadata in a wheel or an sdist. An sdist of setuptools' time lists its
    requirements only in `*.egg-info/requires.txt` (its PKG-INFO, metadata 1.0/1.1, has
    none), which is what uv's build of it turns into the metadata it then cannot parse."""
    files: dict[str, bytes] = {}
    wanted = (".dist-info/METADATA", "/PKG-INFO", ".egg-info/requires.txt")
    try:
        if filename.endswith((".whl", ".zip")):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for n in zf.namelist():
                    if n.endswith(wanted) and n.count("/") <= 2:
                        files[n] = zf.read(n)
        else:
            with tarfile.open(fileobj=io.BytesIO(data)) as tf:
                for member in tf.getmembers():
                    near = member.isfile() and member.name.count("/") <= 2
                    if near and member.name.endswith(wanted) and (h := tf.extractfile(member)):
                        files[member.name] = h.read(1 << 20)
    except (zipfile.BadZipFile, tarfile.TarError, OSError, KeyError, EOFError):
        return None
    meta = sorted((n for n in files if not n.endswith("requires.txt")), key=len)
    if not meta:
        return None
    text = files[meta[0]].decode("utf-8", "replace")
    requires = [n for n in files if n.endswith("requires.txt")]
    if "Requires-Dist:" not in text and requires:
        lines = egg_requires(files[min(requires, key=len)].decode("utf-8", "replace"))
        head, _, body = text.partition("\n\n")
        text = head.rstrip("\n") + "".join(f"\nRequires-Dist: {r}" for r in lines) + "\n\n" + body
    return text


def egg_requires(text: str) -> list[str]:
    """`requires.txt` as Requires-Dist values: `[extra]`, `[:marker]` and `[extra:marker]`
    sections become markers. Lines are kept as written (repair() reads them leniently)."""
    out: list[str] = []
    marker = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            extra, _, cond = line[1:-1].partition(":")
            parts = [f"({cond})"] if cond else []
            parts += [f'extra == "{extra}"'] if extra else []
            marker = " and ".join(parts)
            continue
        out.append(f"{line}; {marker}" if marker else line)
    return out


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# uv installing (building) an sdist whose built wheel's metadata it cannot parse.
UNBUILT = re.compile(
    r"Failed to (?:download and )?build `([A-Za-z0-9][A-Za-z0-9._-]*)==([^`\s]+)`"
    r"(?:(?!\n\S).)*?Failed to parse metadata from built wheel",
    re.S,
)


def repair_wheel(
    name: str,
    version: str,
    store: Path,
    build: Callable[[Path, Path], None],
) -> Path | None:
    """For an sdist whose built metadata uv cannot parse (it then cannot install it at all):
    the sdist built into a wheel by `build(sdist, out_dir)` (uv build, which reads no
    metadata), the wheel's METADATA repaired as `repair` does, and the wheel put in `store`
    (the folder uv gets as --find-links). The wheel's path, or None."""
    import httpx  # rare path

    norm = canonicalize_name(name).replace("-", "_")
    with tempfile.TemporaryDirectory(prefix="swebounty-wheel-") as tmp:
        sdist = store / f"{norm}-{version}.tar.gz"  # repacked already (sdists.py)?
        if not sdist.exists():
            wanted = Version(version)
            files = [
                f
                for f in index_files(name) or []
                if str(f.get("filename", "")).endswith((".tar.gz", ".zip"))
                and version_of(name, str(f.get("filename", ""))) == wanted
            ]
            url = files[0].get("url") if files else None
            if not isinstance(url, str):
                return None
            try:
                resp = httpx.get(url, timeout=120, follow_redirects=True)
                resp.raise_for_status()
            except httpx.HTTPError as exc:
                log.warning("could not download %s: %s", url, exc)
                return None
            sdist = Path(tmp) / str(files[0]["filename"])
            sdist.write_bytes(resp.content)
        out = Path(tmp) / "out"
        try:
            build(sdist, out)
        except StepFailed as exc:
            log.warning("could not build %s to repair it: %s", sdist.name, exc.describe())
            return None
        wheels = sorted(out.glob("*.whl"))
        if not wheels:
            return None
        store.mkdir(parents=True, exist_ok=True)
        target = store / wheels[0].name
        try:
            _rewrite_metadata(wheels[0], target)
        except (zipfile.BadZipFile, StopIteration, KeyError, OSError) as exc:
            log.warning("could not repair %s: %s", wheels[0].name, exc)
            return None
    log.info("built %s and repaired its metadata: %s", target.name, name)
    return target


def _rewrite_metadata(wheel: Path, target: Path) -> None:
    """Copy `wheel` to `target` with its METADATA read leniently, RECORD to match."""
    with zipfile.ZipFile(wheel) as src:
        names = src.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        record = meta.replace("/METADATA", "/RECORD")
        head, sep, body = src.read(meta).decode("utf-8", "replace").partition("\n\n")
        lines = []
        for line in head.splitlines():
            key, colon, value = line.partition(": ")
            if key == "Requires-Dist":
                value = lenient_requirement(value) or ""
            elif key == "Requires-Python":
                value = lenient_specifier(value)
            if value or key not in ("Requires-Dist", "Requires-Python"):
                lines.append(f"{key}: {value}" if colon else line)
        data = ("\n".join(lines) + sep + body).encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows = [
            f"{meta},sha256={digest},{len(data)}" if row.split(",", 1)[0] == meta else row
            for row in src.read(record).decode().splitlines()
        ]
        part = target.with_name(target.name + f".{os.getpid()}.part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as dst:
            for n in names:
                content = data if n == meta else src.read(n)
                dst.writestr(n, "\n".join(rows) + "\n" if n == record else content)
        part.replace(target)
