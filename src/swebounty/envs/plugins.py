"""pytest plugins of the era of the pytest an environment gets.

The cutoff date picks every package's newest release, but a project that pins an old pytest
(`pytest==3.0.7` in a 2019 commit) gets it with plugins of 2019, which call what that pytest
did not have yet (`'Function' object has no attribute 'get_closest_marker'`, pytest 3.6): the
plugin claims `pytest>=2.8` and is wrong. The rule: when the locked pytest was superseded by a
newer minor release before the cutoff, every pytest plugin in the lock (`pytest-*`,
`pytest_*`) is resolved again as of that release, the date the pinned pytest stopped being
current. A project's own exact pin of a newer plugin wins: the resolution then fails and the
first lock stands.
"""

from __future__ import annotations

import functools
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from swebounty.envs.failures import StepFailed
from swebounty.envs.interpreters import Interpreter
from swebounty.envs.releases import default_index, release_uploads
from swebounty.envs.steps import Uv, pinned


class EraLock(NamedTuple):
    lock: str
    allow: dict[str, datetime]  # with the plugins' own cutoff
    note: str


def plugin_names(lock: str) -> list[str]:
    """The pytest plugins a lock pins."""
    names = []
    for line in lock.splitlines():
        if "==" not in line or line.startswith("#"):
            continue
        name = str(canonicalize_name(line.split("==")[0].strip()))
        if name.startswith("pytest-") and name != "pytest":
            names.append(name)
    return names


@functools.lru_cache(maxsize=4)
def _pytest_uploads(index: str) -> list[tuple[Version, datetime]] | None:
    """pytest's releases, read once per process and index (every resolution asks)."""
    return release_uploads("pytest", index)


def era_end(pytest_version: str, cutoff: datetime | None) -> datetime | None:
    """When `pytest_version` stopped being current: the first upload of a later minor (or
    major) release, or the pinned release's own upload if that came later (bug-fix lines
    outlive the next minor). None when it was still current at the cutoff, or the index
    cannot say."""
    if cutoff is None:
        return None
    try:
        pinned = Version(pytest_version)
    except InvalidVersion:
        return None
    uploads = _pytest_uploads(default_index())
    if not uploads:
        return None
    own = [when for version, when in uploads if version == pinned]
    later = [
        when
        for version, when in uploads
        if version.release[:2] > pinned.release[:2] and not version.is_prerelease
    ]
    if not later:
        return None
    end = max(min(later), *own)
    return end if end < cutoff else None


def of_era(
    uvr: Uv,
    interp: Interpreter,
    req: Path,
    lock: str,
    cutoff: datetime | None,
    allow: dict[str, datetime],
    tools_cutoff: datetime | None,
    constraints: list[str],
    tmp: Path,
) -> EraLock | None:
    """The lock again with its pytest plugins as of its pytest's era (plugins.py), when that
    era ended before the cutoff and it changes anything; None otherwise."""
    version = pinned(lock, "pytest")
    names = plugin_names(lock)
    if uvr.offline or not version or not names:
        return None
    end = era_end(version, cutoff)
    if end is None:
        return None
    era = dict(allow)
    era.update((name, min(allow.get(name, end), end)) for name in names)
    try:
        again = uvr.compile(
            interp.executable, req, cutoff, cwd=tmp, allow=era, tools_cutoff=tools_cutoff
        )
    except StepFailed:
        return None  # a plugin the project pins exactly, or needs newer: the lock stands
    changed = [n for n in names if pinned(again, n) != pinned(lock, n)]
    if not changed:
        return None
    shown = ", ".join(f"{n} {pinned(again, n)}" for n in changed)
    note = f"pytest plugins as of pytest {version}'s time ({end.date()}): {shown}"
    return EraLock(again, era, note)
