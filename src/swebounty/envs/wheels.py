"""Which packages of a lock have no wheel for an interpreter, but one for an older one.

A dependency with wheels for the next older interpreter only (numpy of 2019 on Python 3.9)
would be built from source for this one, for minutes, and then often fail: the build moves to
the older interpreter instead, unless the source distribution is small enough to just build.

The same holds while resolving, where the check above cannot help: an sdist's metadata is
prepared in a build environment of its own build requirements, and those are pinned per
interpreter (bottleneck 1.3.2 of 2020 wants `numpy==1.17.3` on Python 3.8+, which has no
wheel for 3.9), so uv compiled numpy from source inside the resolution, for over 30 minutes
on two cores. While an older interpreter remains to try, the packages of NO_SOURCE_BUILDS are
taken as wheels only (`Uv.only_binary`); their failure is a build failure (failures.py), which
moves the build to the older interpreter. The oldest one builds them as before.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from packaging.utils import canonicalize_name

from swebounty import safefs
from swebounty.envs.failures import StepFailed
from swebounty.envs.interpreters import Interpreter
from swebounty.envs.releases import sdist_size
from swebounty.envs.steps import Uv, cutoff_args

# Packages whose source distribution is at most this big are built from source rather than
# sending the build to an older interpreter that has wheels for them (numpy's is ~5-20 MB).
SMALL_SDIST = 1 << 20
# Compiled packages whose source builds take many minutes and whose wheels cover each
# interpreter from a few months after its release: never built from source while an older
# interpreter remains to try.
NO_SOURCE_BUILDS = ("numpy", "scipy", "pandas")
_NO_WHEELS = re.compile(r"Because ([A-Za-z0-9][A-Za-z0-9._-]*)==\S+ has no usable wheels")


def wheels_only_older(
    uvr: Uv,
    interp: Interpreter,
    older: list[Interpreter],
    lock: str,
    cutoff: datetime | None,
    tmp: Path,
    allow: dict[str, datetime] | None = None,
) -> list[str]:
    """Packages of `lock` with no wheel for `interp` but one for the next older interpreter
    (binary-only resolves of exact pins: ~0.1 s each, no download)."""
    if not older:
        return []
    missing = no_wheels(uvr, interp.executable, lock.splitlines(), cutoff, tmp, allow)
    if not missing:
        return []
    pins = [p for p in lock.splitlines() if canonicalize_name(p.split("==")[0]) in missing]
    older_missing = no_wheels(uvr, older[0].executable, pins, cutoff, tmp, allow)
    only_older = sorted(set(missing) - set(older_missing))
    if uvr.offline:
        return only_older
    # A small source distribution builds in seconds (markupsafe 1.1.1 had no wheels for 3.9
    # yet; moving sphinx 3.5 to 3.8 for it skipped its 3.9-only tests): it is built here,
    # and if it does fail, the build failure moves to the next interpreter anyway.
    versions = {
        str(canonicalize_name(p.split("==")[0])): p.split("==")[1] for p in pins if "==" in p
    }
    return [
        name
        for name in only_older
        if (size := sdist_size(name, versions.get(name, "0"))) is None or size > SMALL_SDIST
    ]


def no_wheels(
    uvr: Uv,
    python: Path,
    pins: list[str],
    cutoff: datetime | None,
    tmp: Path,
    allow: dict[str, datetime] | None = None,
) -> list[str]:
    """Names among exact `pins` that have no wheel for `python` (uv would build them from
    source). Binary-only, no-deps resolves of exact pins: ~0.1 s each, no download."""
    missing: list[str] = []
    remaining = [p for p in pins if p.strip() and not p.startswith("#")]
    for _ in range(30):
        req = tmp / "wheels.in"
        safefs.write_beneath(tmp, req.name, "".join(f"{p}\n" for p in remaining).encode())
        args = ["pip", "compile", "--quiet", "--no-deps", "--only-binary", ":all:"]
        args += ["--python", str(python), *cutoff_args(cutoff, allow), str(req)]
        try:
            uvr.run("check wheels", args, cwd=tmp)
            return missing
        except StepFailed as exc:
            m = _NO_WHEELS.search(exc.output)
            if not m:
                return missing
            name = canonicalize_name(m.group(1))
            missing.append(name)
            remaining = [p for p in remaining if canonicalize_name(p.split("==")[0]) != name]
    return missing
