"""Resolving a spec's dependencies to a lock (exact pins) at its cutoff, for one interpreter.

The lock is what an environment is keyed by and installed from, so everything that decides
which versions get in is here: the spec's dependency plans tried in order, the shared cutoff
before the exact one, and three exceptions to the date rule, each for named packages only and
each recorded in the lock (as `# exclude-newer-package` lines) and in the environment's report:
- a release yanked after the cutoff: an exact pin of the newest one uploaded before it;
- a package with no release before the cutoff at all (its old releases were deleted since):
  its oldest release still on the index;
- an interpreter released after the cutoff (the oldest one installed may postdate a 2014
  project): the environment's own tools (pip, setuptools, wheel, pytest and what they need)
  are taken as of that interpreter's first release, because the era's ones cannot run on it.
Two more rules, each in its own module: a plan line nothing at the cutoff satisfies, even on
its own, is dropped alone (prune.py); pytest plugins are taken as of the pinned pytest's time
when it was superseded before the cutoff (plugins.py). Releases with metadata uv cannot parse
are repaired by `steps.Uv.compile` (metadata.py).
The check for packages that have wheels for an older interpreter only is wheels.py's.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from swebounty import safefs
from swebounty.envs import plugins, prune
from swebounty.envs.companions import import_roots, is_companion
from swebounty.envs.failures import StepFailed
from swebounty.envs.interpreters import Interpreter, first_release
from swebounty.envs.metadata import Repair
from swebounty.envs.models import BASE_PACKAGES, DepSet, ResolvedSpec
from swebounty.envs.projectmeta import ProjectMetadata
from swebounty.envs.releases import first_release_after, newest_release_before
from swebounty.envs.staticmeta import declared, failed_in_project
from swebounty.envs.steps import Uv, pinned, strip_project, with_allowances

# A resolution that keeps finding newly yanked or unreleased packages stops after this many
# rounds of exceptions.
MAX_ROUNDS = 5 + prune.MAX_DROPS
# How long after an interpreter's first release its tools count as of its time: its first year,
# once the tools had caught up with it. Not sooner: setuptools 34-35 (early 2017) imported a
# top-level `six`, and a 2012 project's vendored six, registered as `six.moves`, broke them.
TOOLS_GRACE = timedelta(days=365)


class Resolution(NamedTuple):
    lock: str
    label: str  # the plan that resolved, and every exception to the date rule
    cutoff: datetime | None  # the cutoff it resolved at
    plan: int  # index of the plan in spec.plans


def resolve_lock(
    uvr: Uv,
    interp: Interpreter,
    spec: ResolvedSpec,
    tmp: Path,
    *,
    shared: bool,
    first_plan: int = 0,
    excludes: list[str] | None = None,
) -> Resolution:
    """The lock of the first plan (from `first_plan` on) that resolves for `interp`.

    The project is copied at `tmp/project`. With `shared`, each plan is tried at the spec's
    shared cutoff, then at its exact one (the commit may need a release of its own month),
    before the next, smaller plan. Raises the last StepFailed (its `plan` set) when nothing
    resolves, or at once on a failure an older interpreter may fix before a smaller plan is
    tried (build, python, sdist), or nothing here would (network).
    """
    last: StepFailed | None = None
    plans = spec.plans or [DepSet(label="no test dependencies")]
    cutoffs = [spec.share_cutoff, spec.cutoff] if shared and spec.share_cutoff else [spec.cutoff]
    tools: tuple[dict[str, datetime], list[str], datetime | None] | None = None
    static: Repair | None = None  # the project's declared metadata, once its build failed
    if spec.install_project:  # its metadata, for uv, made in the build sandbox
        source = uvr.project
        if not isinstance(source, ProjectMetadata) or source.project != tmp / "project":
            uvr.project = source = ProjectMetadata(tmp / "project")
        source.prefixes[interp.executable] = interp.prefix
    for index, plan in enumerate(plans):
        if index < first_plan:
            continue
        for cutoff in cutoffs:
            if tools is None:  # by the earliest cutoff tried: its tools must run too
                earliest = min((c for c in cutoffs if c), default=None)
                follow = spec.tools_follow_python
                tools = tools_for(uvr, interp, earliest, tmp) if follow else ({}, [], None)
            allow, constraints, tools_cutoff = dict(tools[0]), tools[1], tools[2]
            pins: list[str] = []
            notes: list[str] = []
            plan = plans[index]  # less the lines that resolve at no cutoff on their own
            for _ in range(MAX_ROUNDS):
                lines = []
                if spec.install_project:
                    extras = f"[{','.join(plan.extras)}]" if plan.extras else ""
                    # With its metadata given (staticmeta.py), uv builds nothing to read it.
                    named = f"{static.name}{extras} @ " if static else ""
                    lines.append(f"{named}./project{extras if not static else ''}")
                wanted = [*spec.install, *plan.lines]
                if tools_cutoff is not None:
                    wanted = [unpin_tools(line) for line in wanted]
                lines += [*wanted, *pins]
                req = tmp / "requirements.in"
                safefs.write_beneath(tmp, req.name, "".join(f"{x}\n" for x in lines).encode())
                try:
                    out = uvr.compile(
                        interp.executable,
                        req,
                        cutoff,
                        cwd=tmp,
                        allow=allow,
                        tools_cutoff=tools_cutoff,
                        constraints=constraints,
                        excludes=excludes,
                    )
                except StepFailed as exc:
                    exc.plan = index
                    last = exc
                    if (
                        spec.install_project
                        and static is None
                        and failed_in_project(exc.output, tmp / "project")
                    ):
                        static = declared(tmp / "project", spec.project_name)
                        if static is not None:
                            uvr.fixes.releases[(static.name, static.version)] = static
                            notes.append(static.notes[0])
                            continue
                    new = yank_pins(exc, cutoff, pins, offline=uvr.offline)
                    if new:
                        pins += new
                        notes.append(f"pinned yanked {', '.join(new)}")
                        continue
                    later = unreleased(exc, cutoff, allow, offline=uvr.offline)
                    if later:
                        allow.update(later)
                        notes += [f"{n}: no release before the cutoff, its oldest" for n in later]
                        continue
                    # At the exact cutoff only: the month's releases may satisfy a line that
                    # the shared cutoff cannot.
                    dropped = len(plans[index].lines) - len(plan.lines)
                    alone = functools.partial(
                        prune.resolves_alone,
                        uvr,
                        interp,
                        tmp,
                        cutoff,
                        allow,
                        tools_cutoff,
                        constraints,
                    )
                    if cutoff == cutoffs[-1] and dropped < prune.MAX_DROPS:
                        gone = prune.unresolvable(plan.lines, exc, alone)
                        if gone:
                            gone = gone[: prune.MAX_DROPS - dropped]
                            plan = prune.without(plan, gone, "nothing at the cutoff satisfies it")
                            continue
                    if exc.kind in ("resolve", "yanked", "other"):
                        break  # a later cutoff or the next, smaller plan may resolve
                    raise
                if cutoff is not None and cutoff != spec.cutoff:
                    month = month_releases(uvr, interp, req, spec, out, allow, tools, tmp)
                    if month is not None:
                        out, cutoff, allow = month.lock, month.cutoff, month.allow
                        notes.append(month.note)
                era = plugins.of_era(
                    uvr, interp, req, out, cutoff, allow, tools_cutoff, constraints, tmp
                )
                if era is not None:
                    out, allow = era.lock, era.allow
                    notes.append(era.note)
                notes += uvr.fixes.notes(out)
                label = plan.label + "".join(f" + {n}" for n in notes)
                if tools_cutoff is not None:
                    label += f" + tools as of Python {interp.minor_str} ({tools_cutoff.date()})"
                if cutoff is not None and cutoff != spec.cutoff:
                    label += f" at the shared cutoff {cutoff.date()}"
                lock = with_allowances(strip_project(out, tmp), allow)
                return Resolution(lock, label, cutoff, index)
    assert last is not None
    raise last


class MonthRelease(NamedTuple):
    lock: str
    cutoff: datetime | None  # the shared cutoff, or the exact one
    allow: dict[str, datetime]  # with the companions' own cutoff
    note: str


def month_releases(
    uvr: Uv,
    interp: Interpreter,
    req: Path,
    spec: ResolvedSpec,
    shared_out: str,
    allow: dict[str, datetime],
    tools: tuple[dict[str, datetime], list[str], datetime | None],
    tmp: Path,
) -> MonthRelease | None:
    """What the commit's own month must bring in, when a *direct* dependency of the project or
    its tests has a newer release at the exact cutoff than at the shared one; None when sharing
    loses nothing the project needs.

    Of those releases only the project's companions (companions.py: they import the project)
    are taken, each up to the exact cutoff, the rest of the lock staying at the shared one:
    sphinx of late May 2021 needs sphinxcontrib-serializinghtml 1.1.5 of May 23 (1.1.4 imports
    what that sphinx removed: 10 tests erred), not Jinja2 3.0.1 of May 18 (which broke a test
    through typing's cache). When the index cannot tell, the whole lock is taken at the exact
    cutoff."""
    exact_cutoff, shared = spec.cutoff, spec.share_cutoff
    assert exact_cutoff is not None and shared is not None
    try:
        exact = uvr.compile(
            interp.executable,
            req,
            spec.cutoff,
            cwd=tmp,
            allow=allow,
            tools_cutoff=tools[2],
            constraints=tools[1],
            annotate=True,
        )
    except StepFailed:
        return None  # the shared lock stands
    before = dict(pin.split("==", 1) for pin in shared_out.split() if "==" in pin)
    project = canonicalize_name(spec.project_name) if spec.project_name else None
    newer: dict[str, str] = {}
    plain: list[str] = []
    for line in exact.splitlines():
        pin, _, via = line.partition("# via ")
        pin = pin.strip()
        plain.append(pin)
        if "==" not in pin:
            continue
        name, version = pin.split("==", 1)
        asked = [v.strip() for v in via.split(",")]
        direct = any(v.startswith("-r ") or canonicalize_name(v) == project for v in asked)
        ours = canonicalize_name(name) in BASE_PACKAGES  # the harness's tools, not the project's
        if direct and not ours and before.get(name) != version:
            newer[name] = version
    if not newer:
        return None
    shown = ", ".join(f"{n} {v}" for n, v in newer.items())
    since = f"{shared:%b %d}"
    note = f"exact cutoff: {shown} released since {since}"
    whole = MonthRelease("\n".join(plain) + "\n", exact_cutoff, allow, note)
    if uvr.offline:
        return whole
    roots = import_roots(tmp / "project")
    found = {n: is_companion(n, v, roots) for n, v in newer.items()}
    if None in found.values():
        return whole  # the index could not tell: the month's releases, as they were
    companions = sorted(n for n, yes in found.items() if yes)
    if not companions:
        return None  # nothing the month released was written against the project
    wider = dict(allow)
    wider.update((str(canonicalize_name(n)), exact_cutoff) for n in companions)
    try:
        lock = uvr.compile(
            interp.executable,
            req,
            shared,
            cwd=tmp,
            allow=wider,
            tools_cutoff=tools[2],
            constraints=tools[1],
        )
    except StepFailed:
        return whole
    taken = ", ".join(f"{n} {newer[n]}" for n in companions)
    left = ", ".join(f"{n} {v}" for n, v in newer.items() if n not in companions)
    note = f"companions of the project released since {since}: {taken}"
    return MonthRelease(lock, shared, wider, note + (f" (not {left})" if left else ""))


def tools_for(
    uvr: Uv, interp: Interpreter, cutoff: datetime | None, tmp: Path
) -> tuple[dict[str, datetime], list[str], datetime | None]:
    """(per-package cutoffs, constraints, the tools' cutoff) that let the environment's own
    tools run on `interp`: nothing when the interpreter existed at the cutoff. Else pip,
    setuptools, wheel and pytest are resolved as of the interpreter's first release (plus a
    grace period), and those, with what they need, may be that new: pip 1.5 of 2014 cannot
    even start on Python 3.6 (`importlib._bootstrap` has no `SourceFileLoader`)."""
    if cutoff is None:
        return {}, [], None
    released = first_release(interp.minor)
    if released <= cutoff:
        return {}, [], None
    when = min(released + TOOLS_GRACE, datetime.now(timezone.utc))
    req = tmp / "tools.in"
    safefs.write_beneath(tmp, req.name, "".join(f"{x}\n" for x in BASE_PACKAGES).encode())
    out = uvr.compile(interp.executable, req, when, cwd=tmp, tools_cutoff=when)
    names = [
        canonicalize_name(line.split("==")[0])
        for line in out.splitlines()
        if "==" in line and not line.startswith("#")
    ]
    floors = [f"{n}>={v}" for n in BASE_PACKAGES if (v := pinned(out, n))]
    return dict.fromkeys(names, when), floors, when


def unpin_tools(line: str) -> str:
    """`pytest==2.3.4` -> `pytest`: a project's pin of a tool of its era (one of
    BASE_PACKAGES) gives way when the interpreter is newer than that era; others are kept."""
    try:
        req = Requirement(line)
    except InvalidRequirement:
        return line
    if canonicalize_name(req.name) not in BASE_PACKAGES or not req.specifier:
        return line
    req.specifier = SpecifierSet()
    return str(req)


def yank_pins(
    exc: StepFailed, cutoff: datetime | None, pins: list[str], *, offline: bool
) -> list[str]:
    """Exact pins for the releases `exc` says were yanked: the newest uploaded before the
    cutoff (an exact pin of a yanked release is accepted; a range is not)."""
    if exc.kind != "yanked" or cutoff is None or offline:
        return []
    pinned_names = {p.split("==")[0] for p in pins}
    new = []
    for name in exc.yanked:
        if name in pinned_names:
            continue
        version = newest_release_before(name, cutoff)
        if version:
            new.append(f"{name}=={version}")
    return new


def unreleased(
    exc: StepFailed, cutoff: datetime | None, allow: dict[str, datetime], *, offline: bool
) -> dict[str, datetime]:
    """Per-package cutoffs for the packages `exc` found no version of, when they have no
    release at all before the cutoff: up to their oldest release still on the index."""
    if exc.kind != "resolve" or cutoff is None or offline:
        return {}
    later: dict[str, datetime] = {}
    for name in exc.unreleased:
        if name in allow:
            continue  # already allowed: the conflict is elsewhere
        found = first_release_after(name, cutoff)
        if found:
            later[name] = found[1] + timedelta(seconds=1)
    return later
