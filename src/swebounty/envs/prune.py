"""Dropping one requirement line of a dependency plan, rather than the whole plan.

A tox `deps` list or a requirements file of 2012 may hold one line nothing on the index can
satisfy any more at the cutoff: a range with no release left in it (`coverage>=5` when only 3.x
existed), a package deleted since, an ancient database driver that builds on no interpreter
here. Giving up that plan for the next, smaller one also loses the test tools beside it (nose,
mock), and collection fails for want of them. The rule: a line that cannot resolve *even on
its own* is dropped alone, the build log and the environment's report say so, and the rest of
the plan is kept. A line that resolves alone but conflicts with another one is kept: that is
a conflict between lines, which only the next plan can settle.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from swebounty import safefs
from swebounty.envs.failures import NOT_THE_SPEC, StepFailed
from swebounty.envs.interpreters import Interpreter
from swebounty.envs.models import DepSet
from swebounty.envs.steps import Uv

log = logging.getLogger(__name__)

# Lines dropped from one plan at most: beyond that the plan is not the project's any more.
MAX_DROPS = 5
# Lines tried alone per failure (~0.1-1 s each): a conflict report can name many.
MAX_CHECKS = 8


def line_name(line: str) -> str | None:
    """The canonical package name a requirement line asks for; None for anything else (a
    path, a URL, an option)."""
    try:
        return canonicalize_name(Requirement(line).name)
    except InvalidRequirement:
        return None


def named_in(lines: list[str], output: str) -> list[str]:
    """The lines whose package the failure's output names, in the plan's order."""
    words = {canonicalize_name(w) for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", output)}
    return [line for line in lines if (name := line_name(line)) and name in words]


def unresolvable(
    lines: list[str], exc: StepFailed, resolves_alone: Callable[[str], bool]
) -> list[str]:
    """Of the lines `exc` names, those that do not resolve on their own (`resolves_alone`
    answers for one line at the same cutoff and interpreter)."""
    if exc.kind != "resolve":
        return []
    named = named_in(lines, exc.output)[:MAX_CHECKS]
    return [line for line in named if not resolves_alone(line)]


def at_fault(plan: DepSet, exc: StepFailed) -> str | None:
    """The plan's line for the package a build-type failure blames (it failed to build, or has
    no release for any interpreter tried, or only sdists uv refuses), if one asks for it."""
    package = exc.package
    if package is None:
        return None
    name = canonicalize_name(package.split("==")[0].split(" ")[0])
    return next((line for line in plan.lines if line_name(line) == name), None)


def without(plan: DepSet, lines: list[str], reason: str) -> DepSet:
    """`plan` with `lines` dropped, its label saying which and why (the environment's report
    shows the label of the plan that resolved)."""
    for line in lines:
        log.info(
            "plan %r: dropping %r alone (%s); the rest of the plan is kept",
            plan.label,
            line,
            reason,
        )
    shown = ", ".join(f"`{line}`" for line in lines)
    return DepSet(
        label=f"{plan.label} without {shown} ({reason})",
        lines=[line for line in plan.lines if line not in lines],
        extras=plan.extras,
    )


def resolves_alone(
    uvr: Uv,
    interp: Interpreter,
    tmp: Path,
    cutoff: datetime | None,
    allow: dict[str, datetime],
    tools_cutoff: datetime | None,
    constraints: list[str],
    line: str,
) -> bool:
    """Whether one requirement line resolves by itself at `cutoff` (prune.py's test of a line
    that nothing on the index can satisfy). When the index cannot tell, it is kept."""
    single = tmp / "alone.in"
    safefs.write_beneath(tmp, single.name, f"{line}\n".encode())
    try:
        uvr.compile(
            interp.executable,
            single,
            cutoff,
            cwd=tmp,
            allow=allow,
            tools_cutoff=tools_cutoff,
            constraints=constraints,
        )
    except StepFailed as exc:
        return exc.kind in (*NOT_THE_SPEC, "timeout")
    return True
