"""Companion releases: dependencies that import the project under test.

A plugin written against a project's internals (sphinxcontrib-htmlhelp imports `sphinx`) is
released in step with it: sphinx of late May 2021 had dropped `RemovedInSphinx40Warning`, and
only the companions released that month (htmlhelp 2.0.0, serializinghtml 1.1.5) no longer
import it. Any other dependency released that month is just newer (Jinja2 3.0.1, whose import
put `Union[str, int]` in typing's cache and broke a test that expects `Union[int, str]`) and
is better left at the shared cutoff like the rest of the lock.

A release is a companion when one of its Python files imports one of the project's top-level
packages; its files are read from the index (a wheel, else the source archive), never run.
"""

from __future__ import annotations

import io
import logging
import re
import tarfile
import zipfile
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from swebounty.envs.releases import index_files, version_of

log = logging.getLogger(__name__)

MAX_ARCHIVE_BYTES = 20 * 1024 * 1024  # a plugin is small; a big archive is read no further
MAX_SOURCE_BYTES = 64 * 1024 * 1024  # what is unpacked of one archive's code, at most
NOT_ROOTS = {"test", "tests", "testing", "doc", "docs", "examples", "scripts", "build"}


def import_roots(project: Path) -> list[str]:
    """The project's top-level packages: folders holding `__init__.py` at its root or in src/."""
    roots = []
    for base in (project, project / "src"):
        if not base.is_dir():
            continue
        for child in sorted(base.iterdir()):
            if child.name in NOT_ROOTS or not child.name.isidentifier():
                continue
            if child.is_dir() and (child / "__init__.py").is_file():
                roots.append(child.name)
    return roots


def imports_any(source: str, roots: list[str]) -> bool:
    """Whether Python `source` imports one of `roots` (or a module inside one)."""
    names = "|".join(re.escape(r) for r in roots)
    pattern = (
        rf"^[ \t]*(?:from[ \t]+(?:{names})(?:\.[\w.]+)?[ \t]+import|import[ \t]+(?:{names})\b)"
    )
    return re.search(pattern, source, re.MULTILINE) is not None


def is_companion(
    name: str, version: str, roots: list[str], index: str | None = None
) -> bool | None:
    """Whether release `name` `version` imports the project (one of `roots`); None when its
    files cannot be read (no index, no archive of a readable kind or size)."""
    if not roots:
        return False
    files = index_files(name, index)
    if files is None:
        return None
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None
    mine = [f for f in files if version_of(name, f.get("filename", "")) == wanted]
    # A wheel lists the package's files as installed; a source archive also holds its tests.
    mine.sort(key=lambda f: not str(f.get("filename", "")).endswith(".whl"))
    for f in mine:
        url, size = f.get("url"), f.get("size")
        if not isinstance(url, str) or (isinstance(size, int) and size > MAX_ARCHIVE_BYTES):
            continue
        data = _download(url)
        if data is None:
            continue
        sources = _python_sources(str(f.get("filename")), data)
        if sources is None:
            continue
        return any(imports_any(text, roots) for text in sources)
    return None


def _download(url: str) -> bytes | None:
    import httpx  # only when a month's releases are weighed

    try:
        resp = httpx.get(url, timeout=60, follow_redirects=True)
        resp.raise_for_status()
    except httpx.HTTPError as exc:
        log.warning("could not download %s: %s", url, exc)
        return None
    return resp.content if len(resp.content) <= MAX_ARCHIVE_BYTES else None


def _python_sources(filename: str, data: bytes) -> list[str] | None:
    """The text of the archive's .py files outside its tests; None for another kind of file."""
    texts: list[str] = []
    try:
        if filename.endswith((".whl", ".zip")):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                for info in z.infolist():
                    if _is_code(info.filename) and _fits(texts, info.file_size):
                        texts.append(z.read(info).decode("utf-8", "replace"))
        elif filename.endswith((".tar.gz", ".tgz", ".tar.bz2")):
            with tarfile.open(fileobj=io.BytesIO(data)) as t:
                for member in t.getmembers():
                    if member.isfile() and _is_code(member.name):
                        handle = t.extractfile(member)
                        if handle is not None and _fits(texts, member.size):
                            texts.append(handle.read().decode("utf-8", "replace"))
        else:
            return None
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
        log.warning("could not read %s: %s", filename, exc)
        return None
    return texts


def _fits(texts: list[str], size: int) -> bool:
    return sum(map(len, texts)) + size <= MAX_SOURCE_BYTES


def _is_code(member: str) -> bool:
    # A plugin's tests import the project whatever it is; only its code says it is a plugin.
    parts = [canonicalize_name(p) for p in member.split("/")[:-1]]
    return member.endswith(".py") and not any(p in ("test", "tests", "testing") for p in parts)
