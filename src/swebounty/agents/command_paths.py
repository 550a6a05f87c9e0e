"""The host paths a `command` agent's command names: found, checked and put in normal form.

Every absolute path written in the command (a word, or the value of `--flag=/path`) is mounted
read-only in the sandbox at the same place, so that the command finds its own code there. A
path the kernel resolves through `.`, `..` or repeated slashes (`python3 /a/b/../agent.py`)
would not resolve inside the sandbox, where only the mounted file exists and not the folders
it was reached through: such a path is rewritten in the command to its normal form (the
folder resolved as the kernel resolves it, the last component kept, so a virtualenv's python
symlink stays itself) and that is what is mounted. A named path that does not exist is refused
before the run starts. Paths the sandbox makes its own (/dev, /proc, /sys) are left alone, and
so is a path under /tmp in no folder the host has (the sandbox's /tmp is private: /tmp/out.txt
is the agent's own file, /tmp/x/agent.py with /tmp/x on the host is a host path that is missing).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

SANDBOX_OWN = ("/dev", "/proc", "/sys")


def _words(command: str) -> list[str]:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return [part for word in words for part in word.split("=")]  # --flag=/path


def _is_normal(path: str) -> bool:
    return os.path.normpath(path) == path and "//" not in path


def normal_form(path: str) -> str:
    """The path as the kernel would reach it: its folder resolved (links, `..`), then its name."""
    head, name = os.path.split(path.rstrip("/") or "/")
    if name in ("", ".", ".."):
        return os.path.realpath(path)
    return os.path.join(os.path.realpath(head or "/"), name)


def _under(path: str, tops: tuple[str, ...]) -> bool:
    normal = os.path.normpath(path)
    return any(normal == top or normal.startswith(top + "/") for top in tops)


def _sandbox_own(path: str) -> bool:
    normal = os.path.normpath(path)
    if normal in ("/", "/tmp") or _under(normal, SANDBOX_OWN):
        return True
    if not _under(normal, ("/tmp",)) or os.path.lexists(path):
        return False
    folder = os.path.dirname(normal)
    while folder != "/tmp":
        if os.path.lexists(folder):
            return False
        folder = os.path.dirname(folder)
    return True


def normalize(command: str) -> tuple[str, list[Path]]:
    """(the command with its named paths in normal form, the paths to mount).

    Raises ValueError naming the first path that does not exist on this machine."""
    rewritten, found = command, []
    for word in _words(command):
        if not word.startswith("/") or _sandbox_own(word):
            continue
        if not os.path.lexists(word):
            raise ValueError(
                f"the command names {word}, which does not exist on this machine: give the "
                "path of the agent's own files (they are mounted read-only in its sandbox)"
            )
        path = word
        if not _is_normal(word):
            path = normal_form(word)
            # Whole words only: a path that is the start of another word stays as written.
            pattern = re.compile(r"(?<![^\s'\"=])" + re.escape(word) + r"(?=$|[\s'\";|&)<>])")
            rewritten = pattern.sub(path.replace("\\", "\\\\"), rewritten)
        if path not in found and not _sandbox_own(path):
            found.append(path)
    return rewritten, [Path(p) for p in found]
