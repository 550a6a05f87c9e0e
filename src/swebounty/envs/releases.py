"""What the package index and git tags say about a project's releases as of a cutoff.

The index's upload times answer "which release was current then" (for exact pins of releases
yanked since, for the tag a build copy of a tag-versioned project needs, and for packages whose
every release of the time was deleted since); the task's own version answers it when the index
cannot.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

log = logging.getLogger(__name__)


def release_uploads(name: str, index: str | None = None) -> list[tuple[Version, datetime]] | None:
    """Every version of `name` with a file still on the index, with the time its first file was
    uploaded, oldest first (yanked ones included). None when the index cannot be read."""
    files = index_files(name, index)
    if files is None:
        return None
    first: dict[Version, datetime] = {}
    for f in files:
        stamp = f.get("upload-time")
        version = version_of(name, f.get("filename", ""))
        if not stamp or version is None:
            continue
        uploaded = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        if version not in first or uploaded < first[version]:
            first[version] = uploaded
    return sorted(first.items(), key=lambda item: item[1])


def default_index() -> str:
    """The index uv resolves from: an explicit mirror the caller set (steps.py passes these two
    variables to uv), else PyPI. Dates are read from the same index the lock comes from."""
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if os.environ.get(var):
            return os.environ[var]
    return "https://pypi.org/simple"


def index_files(name: str, index: str | None = None) -> list[dict[str, Any]] | None:
    """The files of `name`'s page on a PEP 691 (JSON) simple index; None if it cannot be read."""
    import httpx  # only on these rare paths: importing it costs ~0.1 s of every warm start

    url = f"{(index or default_index()).rstrip('/')}/{canonicalize_name(name)}/"
    try:
        resp = httpx.get(
            url,
            headers={"Accept": "application/vnd.pypi.simple.v1+json"},
            timeout=30,
            follow_redirects=True,
        )
        resp.raise_for_status()
        body = resp.json()
        files = body.get("files", []) if isinstance(body, dict) else None
        if not isinstance(files, list):
            raise ValueError("the page holds no list of files")
    except (httpx.HTTPError, ValueError) as exc:
        log.warning("could not read the index page of %s: %s", name, exc)
        return None
    return [f for f in files if isinstance(f, dict)]


def sdist_size(name: str, version: str, index: str | None = None) -> int | None:
    """Bytes of the source distribution of `name` `version` on the index; None if unknown."""
    files = index_files(name, index)
    if files is None:
        return None
    for f in files:
        filename = f.get("filename", "")
        if filename.endswith((".tar.gz", ".zip", ".tar.bz2")) and str(
            version_of(name, filename)
        ) == str(Version(version)):
            size = f.get("size")
            return size if isinstance(size, int) else None
    return None


def newest_release_before(name: str, cutoff: datetime, index: str | None = None) -> str | None:
    """The newest version of `name` with a file uploaded before `cutoff`, yanked or not.

    Used when every release available at the cutoff has since been yanked: an exact pin of a
    yanked release is accepted by installers, a range is not."""
    uploads = release_uploads(name, index) or []
    before = [version for version, uploaded in uploads if uploaded < cutoff]
    return str(max(before)) if before else None


def first_release_after(
    name: str, cutoff: datetime, index: str | None = None
) -> tuple[str, datetime] | None:
    """For a package with *no* release before `cutoff`: its oldest release still on the index
    and when it was uploaded; None when it has one before the cutoff, or none at all.

    Projects of an era may depend on a package whose old releases were all deleted since
    (pytest of 2019 needs atomicwrites>=1.0; only atomicwrites 1.4.1, of 2022, is left):
    the date rule then leaves no candidate, and the oldest one left is the closest to it."""
    uploads = release_uploads(name, index)
    if not uploads or any(uploaded < cutoff for _, uploaded in uploads):
        return None
    version, uploaded = uploads[0]
    return str(version), uploaded


def version_of(name: str, filename: str) -> Version | None:
    stem = re.sub(r"(\.tar\.gz|\.zip|\.tar\.bz2|\.whl|\.egg|\.exe|\.msi)$", "", filename)
    prefix = re.compile(re.escape(canonicalize_name(name)).replace("\\-", "[-_.]") + "-", re.I)
    m = prefix.match(stem)
    if not m:
        return None
    rest = stem[m.end() :].split("-")[0]
    try:
        return Version(rest)
    except InvalidVersion:
        return None


def tag_release(
    project: Path,
    name: str | None,
    prefix: str | None,
    cutoff: datetime | None,
    hint: str | None = None,
    lookup: bool = True,
) -> tuple[str | None, dict[str, str]]:
    """Projects versioned from git tags build as `0.1.dev1` in a tagless workspace, which
    breaks dependents' ranges (pvfactors wants pvlib>=0.9,<0.10; hypothesis wants
    attrs>=22.2). Tag the build copy with the newest release uploaded before the cutoff, as a
    clone of the time would have had; when the index cannot say (offline, a project not on
    it, or published under another name), with `hint`: the task's version, which for a
    collected task is the nearest tag of its base commit.

    Returns (version, variables that make a per-task install see the same version)."""
    if prefix is None or not name or not (project / ".git").exists():
        return None, {}
    version = newest_release_before(name, cutoff) if lookup and cutoff is not None else None
    if version is None and hint:
        try:
            version = str(Version(hint))
        except InvalidVersion:
            version = None
    if version is None:
        return None, {}
    proc = subprocess.run(
        ["git", "-C", str(project), "tag", f"{prefix}{version}"], capture_output=True, text=True
    )
    if proc.returncode:
        return None, {}
    norm = re.sub(r"[-_.]+", "_", name).upper()
    return version, {
        "SETUPTOOLS_SCM_PRETEND_VERSION": version,
        f"SETUPTOOLS_SCM_PRETEND_VERSION_FOR_{norm}": version,
        "PBR_VERSION": version,
    }
