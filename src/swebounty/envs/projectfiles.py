"""Reading the project's own configuration files, bounded: the repository decides their size.

pyproject.toml, setup.cfg, setup.py, tox.ini, pytest.ini, requirement files, CI files,
package.json and .nvmrc are read whole and parsed to decide how an environment is built and
what its probe collects. A repository is hostile data: a planted configuration file of
gigabytes would be read into memory and parsed, for every task of its spec. `read_config` reads
at most MAX_CONFIG_BYTES and treats a larger file as absent, with a warning. No real one comes
near the bound: of those files at the root of the 61 repositories cloned for this project's
datasets (at their heads, 2026-11), the largest is astropy's pyproject.toml, 28 KiB. A lockfile
may be megabytes (axios's package-lock.json, 1.6 MiB): of one, only the header is read
(`read_head`).
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

MAX_CONFIG_BYTES = 1 << 20


def read_config(path: Path, *, follow_links: bool = True, errors: str = "replace") -> str | None:
    """The text of the project's file `path` as `Path.read_text(encoding="utf-8", errors=errors)`
    gives it (newlines as "\\n"), or None when it is not a regular file (nor, with
    `follow_links`, a link to one) or holds more than MAX_CONFIG_BYTES."""
    if not path.is_file() or (not follow_links and path.is_symlink()):
        return None
    with path.open("rb") as fh:
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


def read_head(path: Path, chars: int) -> str:
    """The first `chars` characters of `path` as read_text gives them ("" when it is not a
    file): a lockfile's header, without reading the lockfile (megabytes, legitimately) whole."""
    if not path.is_file():
        return ""
    with path.open("rb") as fh:
        data = fh.read(4 * chars + 4)  # a character is at most 4 bytes; "\r\n" 2 for 1
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return text[:chars]
