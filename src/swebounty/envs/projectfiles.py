"""Reading the project's own configuration files, bounded: the repository decides their size.

pyproject.toml, setup.cfg, setup.py, tox.ini, pytest.ini, requirement files, CI files,
package.json and .nvmrc are read whole and parsed to decide how an environment is built and
what its probe collects. A repository is hostile data: a planted configuration file of
gigabytes would be read into memory and parsed, for every task of its spec. `read_config` reads
at most MAX_CONFIG_BYTES and treats a larger file as absent, with a warning. No real one comes
near the bound: of those files at the root of the 61 repositories cloned for this project's
datasets (at their heads, 2026-11), the largest is astropy's pyproject.toml, 28 KiB. A lockfile
may be megabytes (axios's package-lock.json, 1.6 MiB): of one, only the header is read
(`read_head`), and digests read files in chunks (`hash_file`).

Every read here stays inside the repository (`root`): it runs on the host, as root, before any
sandbox. A link is followed only when it leads to a file of the repository (git repositories
hold such links legitimately: README -> docs/README, requirements.txt -> requirements/base.txt);
one leading anywhere else (setup.cfg -> /etc/passwd) is a file that is not there, or the host's
file would be read, parsed and logged as the project's. What is read is opened without
following links (safefs), after the link is resolved, so what is checked is what is read.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path
from typing import Protocol

from swebounty.safefs import UnsafePathError, open_beneath

log = logging.getLogger(__name__)

MAX_CONFIG_BYTES = 1 << 20
_CHUNK = 1 << 16


class Hasher(Protocol):
    """What hash_file feeds: a hashlib object."""

    def update(self, data: bytes, /) -> None: ...


def open_in_repo(path: Path, root: Path, *, follow_links: bool = True) -> int | None:
    """A read-only descriptor of the regular file `path` of the repository at `root`, or None
    when it is absent, not a regular file, or reached through a link that leads out of `root`
    (with `follow_links=False`: through any link). The caller closes it."""
    base = root.resolve()
    rel = _relative(path, root, base)
    if rel is None:
        return None
    try:
        fd = open_beneath(base, rel)
    except OSError as exc:
        # Only a link on the way is worth resolving; anything else is a file that is not there.
        if not follow_links or not (isinstance(exc, UnsafePathError) or exc.errno == errno.ELOOP):
            return None
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):  # dangling, or a loop of links
            return None
        if not real.is_relative_to(base):
            log.warning("%s is a link out of the repository %s: read as absent", path, root)
            return None
        try:
            fd = open_beneath(base, real.relative_to(base).as_posix())
        except OSError:  # changed since it was resolved: nothing is followed twice
            return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _relative(path: Path, root: Path, base: Path) -> str | None:
    """`path` relative to the repository, as written (it may hold `..`: resolved later)."""
    for top in (root, base):
        try:
            rel = path.relative_to(top).as_posix()
        except ValueError:
            continue
        return rel if rel != "." else None
    return None


def read_config(
    path: Path, root: Path, *, follow_links: bool = True, errors: str = "replace"
) -> str | None:
    """The text of the project's file `path` as `Path.read_text(encoding="utf-8", errors=errors)`
    gives it (newlines as "\\n"), or None when it is not a regular file of the repository at
    `root` (see open_in_repo) or holds more than MAX_CONFIG_BYTES."""
    fd = open_in_repo(path, root, follow_links=follow_links)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        log.warning(
            "%s is larger than %d bytes, which no real configuration file is: read as absent",
            path,
            MAX_CONFIG_BYTES,
        )
        return None
    # read_text's universal newlines: parsers here (configparser, line regexes) expect "\n".
    return data.decode("utf-8", errors=errors).replace("\r\n", "\n").replace("\r", "\n")


def read_head(path: Path, root: Path, chars: int) -> str:
    """The first `chars` characters of `path` as read_text gives them ("" when it is not a
    file of the repository at `root`): a lockfile's header, without reading the lockfile
    (megabytes, legitimately) whole."""
    fd = open_in_repo(path, root)
    if fd is None:
        return ""
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(4 * chars + 4)  # a character is at most 4 bytes; "\r\n" 2 for 1
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return text[:chars]


def hash_file(h: Hasher, path: Path, root: Path, *, prefix: bytes = b"") -> bool:
    """Feed `prefix` then the bytes of the repository's file `path` to `h`, a chunk at a time
    (a lockfile is megabytes; the repository decides how many): the digest of
    `h.update(prefix + path.read_bytes())`. False, and nothing fed, when it is not a file of the
    repository (see open_in_repo)."""
    fd = open_in_repo(path, root)
    if fd is None:
        return False
    h.update(prefix)
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return True
