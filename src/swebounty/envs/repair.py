"""Repairing a built environment whose tests cannot even import (probe.py says why).

Before an environment is recorded, the base commit's tests are collected in it. When modules
fail because of the environment, the build changes the plan that resolved and builds again,
keeping a change only when collection gets strictly better (a change that makes things worse,
such as leaving out a package the project itself needs, is undone and said so):
1. the packages that break on import are left out of the resolution (`uv --excludes`), so the
   project's own `try: import x` falls back as it does where x is not installed, and the
   distributions of modules nobody installed are added to the plan;
2. when a package still breaks, the next, smaller plans are tried (without that extra,
   then without the optional groups), the best collection winning.
Every step is in the environment's `why` and the build log; the lock names what was added and
left out, so the environment's key covers it and a pruned environment comes back the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from swebounty.envs.failures import StepFailed
from swebounty.envs.models import DepSet
from swebounty.envs.probe import Probe
from swebounty.envs.tasklayer import ProjectInstall

log = logging.getLogger(__name__)

MAX_ROUNDS = 3
NOTE_PREFIX = "# probe "  # lock lines saying what the collection probe changed


@dataclass
class Built:
    """One candidate environment: its lock, key, project install and collection."""

    lock: str
    env_key: str
    info: ProjectInstall | None
    probe: Probe
    label: str = ""


# (plan to resolve, distributions it adds, packages to leave out) -> its environment, probed.
Make = Callable[[DepSet, list[str], list[str]], Built]


def notes(adds: list[str], excludes: list[str]) -> str:
    """The lock's header lines for what the probe changed (uv ignores comments)."""
    lines = [f"{NOTE_PREFIX}added {d}\n" for d in adds]
    lines += [f"{NOTE_PREFIX}left out {d}\n" for d in excludes]
    return "".join(lines)


def repair(first: Built, plans: list[DepSet], index: int, make: Make, why: list[str]) -> Built:
    """The best environment reachable from `first`, built from `plans[index]`."""
    why.append(f"probe: {first.probe.describe()}")
    if not first.probe.ran or first.probe.clean:
        return first
    plan = plans[index] if index < len(plans) else DepSet(label="no test dependencies")
    best, adds, excludes = first, [], []  # type: Built, list[str], list[str]
    for _ in range(MAX_ROUNDS):
        found = best.probe
        changes = [("add", d) for d in found.missing if d not in adds]
        changes += [("leave out", d) for d in found.broken if d not in excludes]
        if not changes or found.clean:
            break
        improved = False
        # All at once first; when that does not resolve or helps nothing, one at a time.
        for batch in [changes] + ([[c] for c in changes] if len(changes) > 1 else []):
            trial_adds = adds + [d for verb, d in batch if verb == "add"]
            trial_excludes = excludes + [d for verb, d in batch if verb == "leave out"]
            said = ", ".join(f"{verb} {d}" for verb, d in batch)
            built = _try(make, plan, trial_adds, trial_excludes, said, why)
            if built is not None and built.probe.badness < best.probe.badness:
                best, adds, excludes, improved = built, trial_adds, trial_excludes, True
                why.append(f"probe: kept ({said}): {built.probe.describe()}")
                break
            if built is not None:
                why.append(f"probe: not kept ({said}): {built.probe.describe()}")
        if not improved:
            break
    if best.probe.broken or best.probe.conftest_failed:
        for later in plans[index + 1 :]:
            built = _try(make, later, [], excludes, f"plan {later.label}", why)
            if built is not None and built.probe.badness < best.probe.badness:
                best = built
                why.append(f"probe: kept plan {later.label}: {built.probe.describe()}")
                if built.probe.clean:
                    break
    return best


def _try(
    make: Make, plan: DepSet, adds: list[str], excludes: list[str], said: str, why: list[str]
) -> Built | None:
    trial = DepSet(
        label=plan.label + "".join(f" + {d}" for d in adds),
        lines=[*plan.lines, *[d for d in adds if d not in plan.lines]],
        extras=plan.extras,
    )
    try:
        return make(trial, adds, excludes)
    except StepFailed as exc:
        why.append(f"probe: {said}: {exc.describe()} ({exc.kind}); not kept")
        return None
