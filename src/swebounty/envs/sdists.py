"""Old source distributions uv refuses by their file name, repacked as ones it takes.

uv accepts a source distribution only as `.tar.gz` or `.zip` (PEP 625); releases of 2008-2013
often shipped `.tar.bz2` or `.tgz` only, and for uv those releases do not exist ("non-PEP
625-compliant source distribution filename"). The archive inside is an ordinary sdist: it is
downloaded from the index, its members copied unchanged into a gzip-compressed tar named
`<name>-<version>.tar.gz`, and the folder holding such repacks is given to uv as
`--find-links`, so the release of the time resolves and builds as pip of its time built it.
When that fails too (the archive is unreadable, or builds nowhere), the build goes on as for any
`sdist` failure (failures.py): an older interpreter, then the plan without that line.

Archives come from the index the build trusts anyway; they are never extracted to disk here,
and members that are not plain files or folders, or whose path could leave the archive's
folder, are left out.
"""

from __future__ import annotations

import io
import logging
import tarfile
import tempfile
from datetime import datetime
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name
from packaging.version import Version

from swebounty.envs.releases import index_files, version_of

log = logging.getLogger(__name__)

REFUSED = (".tar.bz2", ".tgz", ".tar", ".tar.xz", ".tbz")
MAX_BYTES = 50 << 20


def repack(name: str, cutoff: datetime | None, store: Path) -> str | None:
    """Repack into `store` every release of `name` uploaded before `cutoff` whose only sdists
    uv refuses; the newest such version, or None when there was none or nothing could be
    read."""
    import httpx  # rare path

    files = index_files(name) or []
    accepted: set[str] = set()
    refused: dict[str, dict[str, object]] = {}
    for f in files:
        filename = str(f.get("filename", ""))
        found = version_of(name, filename)
        stamp = f.get("upload-time")
        if found is None or not isinstance(stamp, str):
            continue
        if cutoff is not None and datetime.fromisoformat(stamp.replace("Z", "+00:00")) >= cutoff:
            continue
        if filename.endswith(REFUSED):
            refused.setdefault(str(found), f)
        else:
            accepted.add(str(found))
    made: list[str] = []
    store.mkdir(parents=True, exist_ok=True)
    norm = canonicalize_name(name).replace("-", "_")
    for version, f in refused.items():
        if version in accepted:
            continue
        target = store / f"{norm}-{version}.tar.gz"
        if target.exists():
            made.append(version)
            continue
        url, size = f.get("url"), f.get("size")
        if not isinstance(url, str) or (isinstance(size, int) and size > MAX_BYTES):
            continue
        try:
            resp = httpx.get(url, timeout=120, follow_redirects=True)
            resp.raise_for_status()
            data = regzip(resp.content)
        except (httpx.HTTPError, tarfile.TarError, OSError, EOFError) as exc:
            log.warning("could not repack %s: %s", f.get("filename"), exc)
            continue
        # Another build may repack the same file at once: each writes its own, one wins.
        with tempfile.NamedTemporaryFile(dir=store, suffix=".part", delete=False) as part:
            part.write(data)
        Path(part.name).replace(target)
        made.append(version)
    return max(made, key=Version) if made else None


def regzip(data: bytes) -> bytes:
    """The tar archive `data` (any compression tarfile reads), as a gzip-compressed tar of its
    plain files and folders whose paths stay inside it."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as src,
        tarfile.open(fileobj=out, mode="w:gz") as dst,
    ):
        for member in src.getmembers():
            path = PurePosixPath(member.name)
            if path.is_absolute() or ".." in path.parts or not (member.isfile() or member.isdir()):
                continue
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    return out.getvalue()
