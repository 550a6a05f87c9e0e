"""Completing a built environment with what the base commit's skipped tests say it lacks.

A PASS_TO_PASS test that the unpatched base *skips* "for want of dask" says the environment is
incomplete, not that a patch broke something: the dataset's authors ran it with dask. The
evaluation side (completion.py) reads the base run's skip reasons (`wanted_modules`) and asks
for the environment again with those distributions (`complete`): resolved at the environment's
own cutoff with every package it already has pinned as it is, installed as a new environment,
the project installed over it and its tests collected (collection must be no worse), and
recorded as the spec's environment, so every later task of the spec gets it. What was tried is
remembered in the spec's record: a module is asked for once, whether it could be added or not.
"""

from __future__ import annotations

import logging
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name

from swebounty import safefs
from swebounty.envs import buildcopy
from swebounty.envs.cache import READY, read_json, write_json
from swebounty.envs.candidate import Candidates
from swebounty.envs.environment import read_environment
from swebounty.envs.failures import StepFailed
from swebounty.envs.interpreters import Interpreter, find
from swebounty.envs.models import Environment, ResolvedSpec
from swebounty.envs.natives import seed
from swebounty.envs.probe import IMPORT_NAMES, KEEP, STDLIB_HINT, top_level_owners
from swebounty.envs.repair import NOTE_PREFIX, Built
from swebounty.envs.steps import Uv, lock_allowances, with_allowances
from swebounty.envs.tasklayer import project_files

if TYPE_CHECKING:
    from swebounty.envs.build import Builder

log = logging.getLogger(__name__)

MAX_MODULES = 8  # asked for at once: a skip reason is not a requirements file
_IDENT = r"([A-Za-z_][\w.]*)"
# How skip reasons name a module the tests wanted (pytest.importorskip, `requires X` markers,
# astropy's `HAS_X` conditions, "X is not installed", "requires that X or Y is installed").
_REASONS = [
    (re.compile(rf"No module named '?{_IDENT}'?"), False),
    (re.compile(rf"could not import '?{_IDENT}'?"), False),
    (re.compile(rf"\brequires? (?:the )?(?:module |package )?'?{_IDENT}'?", re.I), False),
    (re.compile(rf"\bneeds? '?{_IDENT}'?", re.I), False),
    (re.compile(rf"'?{_IDENT}'? (?:is |are )?(?:not installed|not available|unavailable)"), False),
    (re.compile(rf"'?{_IDENT}'? (?:is )?required", re.I), False),
    (re.compile(rf"\bwithout '?{_IDENT}'?", re.I), False),
    # matplotlib's "requires that pycairo>=1.11.0 or cairocffi is installed": both, in order
    (
        re.compile(rf"\brequires? that '?{_IDENT}'?\S*(?: or '?[\w.]+'?\S*)? (?:is|are) installed"),
        False,
    ),
    (re.compile(rf"\brequires? that \S+ or '?{_IDENT}'?\S* (?:is|are) installed"), False),
    (re.compile(r"\bnot HAS_([A-Z][A-Z0-9_]*)\b"), True),  # astropy's skipif('not HAS_SCIPY')
]
_NOT_MODULES = {"python", "network", "internet", "a", "an", "the", "this", "it", "that"}


def wanted_modules(reasons: list[str], site: Path, roots: set[str]) -> list[str]:
    """Top-level modules the skip `reasons` say were missing, and that `site` (the
    environment's site-packages) indeed lacks; never the project's own `roots`."""
    installed = {k.lower() for k in top_level_owners(site)}
    found: list[str] = []
    for reason in reasons:
        for pattern, lower in _REASONS:
            for m in pattern.finditer(reason):
                name = m.group(1).rstrip(".")
                top = name.lower() if lower else name.split(".")[0]
                if (
                    top.lower() in _NOT_MODULES
                    or top in roots
                    or top.lower() in installed
                    or STDLIB_HINT.match(top)
                    or top in KEEP
                    or re.fullmatch(r"[\d.]+", top)
                ):
                    continue
                if top not in found:
                    found.append(top)
    return found[:MAX_MODULES]


_MARKER = re.compile(r"\brequires?_([A-Za-z][A-Za-z0-9]*)")


def marker_reasons(source: str, test_id: str) -> list[str]:
    """Skip markers named for a module above a test and its class (xarray's
    `@requires_pint_0_15(reason="Need __dask_tokenize__")`: the reason names no module, the
    marker does), as reasons `wanted_modules` reads: `requires pint`."""
    parts = [p.split("[", 1)[0] for p in test_id.split("::")[1:]]
    lines = source.splitlines()
    found: list[str] = []
    for name in parts:
        head = re.compile(rf"\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b")
        for i, line in enumerate(lines):
            if not head.match(line):
                continue
            j = i - 1
            while j >= 0 and not re.match(r"\s*(?:async\s+)?(?:def|class)\s", lines[j]):
                if not lines[j].strip():
                    break
                found += [f"requires {m}" for m in _MARKER.findall(lines[j])]
                j -= 1
            break
    return found


def distribution(module: str) -> str:
    return IMPORT_NAMES.get(module, module)


def complete(builder: Builder, env: Environment, modules: list[str], workspace: Path) -> bool:
    """Rebuild `env`'s spec with the distributions of `modules` added (see the module
    docstring). True when the spec now has a new environment; False when nothing new could be
    added (each module is asked for once)."""
    if env.spec_key is None or not isinstance(env.spec, ResolvedSpec):
        return False
    spec, key = env.spec, env.spec_key
    sdir = builder.cache.spec_dir(key)
    with builder.cache.lock(f"spec-{key}"):
        record = read_json(sdir / "record.json")
        if record is None:
            return False
        if record["env_key"] != env.key:
            # Another evaluation completed it meanwhile, maybe in another process (a run
            # beside this one in the same home, a Ray worker): this one's memo must give the
            # new environment too, or the tests would run again in the old one.
            edir = builder.cache.env_dir(record["env_key"])
            if read_json(edir / READY) is None:
                return False
            with builder.guard:
                builder.memo[key] = read_environment(edir, sdir, key, spec, record)
            return True
        tried: dict[str, str] = dict(record.get("completion", {}))
        new = [m for m in modules if m not in tried]
        if not new:
            return False
        interp = find(builder.interpreters, record["interpreter_executable"])
        if interp is None:
            return False
        log_path = sdir / "complete.log"
        uvr = Uv(
            builder.uv_bin,
            log_path,
            offline=builder.offline,
            sdist_dir=builder.cache.root / "sdists",
        )
        at = record.get("cutoff")
        cutoff = datetime.fromisoformat(at) if at else spec.cutoff
        why: list[str] = []
        attempt = _Attempt(builder, env, workspace, record, interp, uvr, cutoff, tried, why)
        built = attempt.make(new)
        if built is None and attempt.install_failed and len(new) > 1:
            # One distribution that cannot build here (pycairo without cairo's headers) must
            # not keep out the others (cairocffi, its alternative): each alone, in order, the
            # first that installs is kept; the rest are asked for again in the next round.
            for module in new:
                built = attempt.make([module])
                if built is not None:
                    break
        if built is None:
            record["completion"] = tried
            record["why"] = [*record.get("why", []), *why]
            write_json(sdir / "record.json", record)
            return False
        why.append(f"completion: environment {built.env_key} replaces {env.key}")
        record.update(
            env_key=built.env_key,
            lock=built.lock,
            project=built.info.model_dump() if built.info else None,
            collection=list(built.probe.badness),
            completion=tried,
            why=[*record.get("why", []), *why],
        )
        write_json(sdir / "record.json", record)
        edir = builder.cache.env_dir(built.env_key)
        with builder.guard:
            builder.memo[key] = read_environment(edir, sdir, key, spec, record)
    log.info("environment of spec %s completed: %s", key, "; ".join(why))
    return True


class _Attempt:
    """Tries at the spec's environment with some modules' distributions added: each resolved,
    installed with the project over it and probed, in a folder of its own."""

    def __init__(self, builder: Builder, env: Environment, workspace: Path,
                 record: dict[str, Any], interp: Interpreter, uvr: Uv,
                 cutoff: datetime | None, tried: dict[str, str], why: list[str]) -> None:  # fmt: skip
        self.builder, self.env, self.workspace, self.record = builder, env, workspace, record
        self.interp, self.uvr, self.cutoff, self.tried, self.why = interp, uvr, cutoff, tried, why
        self.install_failed = False  # the last try resolved, but its install (a build) failed

    def make(self, modules: list[str]) -> Built | None:
        """The environment with `modules` added, or None (`tried` and `why` say why). A try
        of several that fails to install leaves them untried, to be tried alone."""
        builder, env, record, why, tried = self.builder, self.env, self.record, self.why, self.tried
        spec = env.spec
        assert isinstance(spec, ResolvedSpec)
        self.install_failed = False
        with tempfile.TemporaryDirectory(prefix="swebounty-complete-") as tmpdir:
            tmp = Path(tmpdir)
            lock = _resolve(self.uvr, self.interp.executable, record["lock"], modules,
                            self.cutoff, tmp, tried, why)  # fmt: skip
            if lock is None:
                return None
            version_env: dict[str, str] = {}
            pristine = None
            if spec.install_project:
                version_env = buildcopy.prepare(
                    self.workspace, tmp / "project", name=spec.project_name,
                    vcs_tag_prefix=spec.vcs_tag_prefix, cutoff=spec.cutoff,
                    release_hint=spec.release_hint, lookup=not builder.offline, why=why,
                    sources=builder.cache.sources, log_path=self.uvr.log_path,
                )  # fmt: skip
                pristine = project_files(tmp / "project")
            made = Candidates(builder.cache, self.interp, spec, self.cutoff, tmp,
                              builder.cache.spec_dir(env.spec_key or ""), self.uvr, pristine,
                              version_env, self.workspace)  # fmt: skip
            if keeps_pins(record["lock"], lock):
                # Built against the very same packages: the tree's extensions need not be
                # compiled again for the additions (scikit-learn: 600 s more per task).
                made.natives_from = env.key
            added = [m for m in modules if tried.get(m) == "added"]
            try:
                built = made.make(lock)
            except StepFailed as exc:
                why.append(f"completion: installing {', '.join(map(distribution, added))} "
                           f"failed: {exc.describe()} ({exc.kind})")  # fmt: skip
                self.install_failed = True
                for m in added:
                    if len(added) == 1:
                        tried[m] = "failed to install"
                    else:
                        tried.pop(m, None)
                return None
            before = record.get("collection")
            if before and list(built.probe.badness) > list(before):
                why.append(f"completion: not kept, {built.probe.describe()}")
                tried.update((m, "made collection worse") for m in added)
                return None
            if built.info is not None and built.info.natives:  # as build.py: the tree's
                seed(builder.cache, env_key=built.env_key, workspace=self.workspace,
                     project=tmp / "project", info=built.info, version_env=version_env)  # fmt: skip
            return built


def _resolve(
    uvr: Uv,
    python: Path,
    lock: str,
    modules: list[str],
    cutoff: datetime | None,
    tmp: Path,
    tried: dict[str, str],
    why: list[str],
) -> str | None:
    """The lock with the distributions of `modules` added and nothing else changed, or None.
    All at once, else each alone (one that cannot be had must not keep the others out)."""
    allow = lock_allowances(lock)
    pins = [line for line in lock.splitlines() if line.strip() and not line.startswith("#")]
    notes = [line for line in lock.splitlines() if line.startswith(NOTE_PREFIX)]
    batches = [modules] + ([[m] for m in modules] if len(modules) > 1 else [])
    added: list[str] = []
    out = ""
    for batch in batches:
        if any(m in added for m in batch):
            continue
        want = [distribution(m) for m in [*added, *batch]]
        req = tmp / "complete.in"
        safefs.write_beneath(tmp, req.name, "".join(f"{p}\n" for p in [*pins, *want]).encode())
        try:
            out = uvr.compile(python, req, cutoff, cwd=tmp, allow=allow)
        except StepFailed as exc:
            for m in batch if len(batch) == 1 else []:
                tried[m] = f"{distribution(m)}: {exc.describe()}"
                why.append(f"completion: {distribution(m)} cannot be added ({exc.describe()})")
            continue
        added += batch
        for m in batch:
            tried[m] = "added"
        if batch == modules:
            break
    if not added:
        return None
    names = {canonicalize_name(distribution(m)) for m in added}
    why.append(f"completion: added {', '.join(sorted(names))} (the base's tests skip without)")
    header = "".join(f"{line}\n" for line in notes)
    header += "".join(f"{NOTE_PREFIX}added {n} (skipped tests)\n" for n in sorted(names))
    return header + with_allowances(out, allow)


def keeps_pins(old: str, new: str) -> bool:
    """Whether lock `new` pins every package of lock `old` at the same version (it only adds)."""

    def pins(lock: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for line in lock.splitlines():
            name, sep, version = line.split("#", 1)[0].strip().partition("==")
            if sep:
                found[canonicalize_name(name.split("[", 1)[0])] = version.split(";")[0].strip()
        return found

    before, after = pins(old), pins(new)
    return all(after.get(name) == version for name, version in before.items())
