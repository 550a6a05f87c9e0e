"""Leaving out a package that no line of a plan asks for and that builds nowhere here.

networkx declares `extra = [lxml, pygraphviz, pydot, sympy]` beside `default = [numpy, scipy,
matplotlib, pandas]`. pygraphviz needs graphviz's C headers (a `system` failure: no interpreter
brings them). No line of the plan names it, so prune.py had nothing to drop alone, and the
next, smaller plan (test extras only) went without every extra: scipy too, and networkx's
scipy-using test modules skipped whole at import (networkx-8446 collected nothing).

The rule: such a package is left out of every resolution of the build (`uv --excludes`) and
the same plan is tried again, keeping the rest of its extras, but only when the project's own
requirements (its install lines, no extras, no test requirements) do not need it: a package
the project cannot run without still fails the build, with the system library named.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from packaging.utils import canonicalize_name

from swebounty.envs.failures import StepFailed
from swebounty.envs.interpreters import Interpreter
from swebounty.envs.models import DepSet, ResolvedSpec
from swebounty.envs.prune import MAX_DROPS
from swebounty.envs.resolve import resolve_lock
from swebounty.envs.steps import Uv, pinned

log = logging.getLogger(__name__)


# A distribution name as PEP 508 allows it: the blamed name comes from the build's output
# (which a package's metadata shapes) and goes to uv as an exclusion, so nothing else passes.
_DIST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def package_name(exc: StepFailed) -> str | None:
    """The canonical name of the package `exc` blames, if it names one that is a valid name."""
    package = exc.package
    if not package:
        return None
    name = package.split("==")[0].split(" ")[0]
    return str(canonicalize_name(name)) if _DIST_NAME.fullmatch(name) else None


def leave_out(
    exc: StepFailed, uvr: Uv, interp: Interpreter, spec: ResolvedSpec, tmp: Path, why: list[str]
) -> bool:
    """Whether the package `exc` blames is now left out of the build (`uvr.excludes`, said in
    `why`), so that `exc.plan` may be tried again."""
    name = may_leave_out(exc, uvr, interp, spec, tmp)
    if name is None or exc.plan is None:
        return False
    uvr.excludes.append(name)
    why.append(
        f"plan {exc.plan + 1}: {exc.describe()}, and no line of the plan asks for it: "
        f"`{name}` left out, the rest of the plan kept"
    )
    return True


def may_leave_out(
    exc: StepFailed, uvr: Uv, interp: Interpreter, spec: ResolvedSpec, tmp: Path
) -> str | None:
    """The package to leave out of the build after `exc`, or None: `exc` is a `system`
    failure of a package that no plan line names (the caller knows), not left out already,
    and the project's own requirements resolve without it (one resolution, in this failure
    path only)."""
    name = package_name(exc)
    if exc.kind != "system" or name is None or name in uvr.excludes:
        return None
    if len(uvr.excludes) >= MAX_DROPS or name == canonicalize_name(spec.project_name or ""):
        return None
    alone = spec.model_copy(
        update={"plans": [DepSet(label="the project alone")], "share_cutoff": None}
    )
    try:
        lock = resolve_lock(uvr, interp, alone, tmp, shared=False).lock
    except StepFailed as again:
        log.info("leaving %s out not tried: the project alone does not resolve (%s)", name, again)
        return None
    if pinned(lock, name) is not None:
        return None  # the project itself needs it
    return name
