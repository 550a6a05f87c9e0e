"""The uv commands that build an environment, run with an isolated configuration.

Every command gets an environment of its own: ambient pip configuration (PIP_* variables,
/etc/pip.conf, /etc/xdg/pip constraints) and uv configuration files are ignored, because a
build that honours them takes packages from elsewhere than the date-cut index. A failed command
raises `failures.StepFailed`, classified, since what to do next depends on the kind: a
dependency that fails to *build* calls for an older interpreter or a smaller dependency set, a
resolver conflict for a smaller dependency set, a release yanked after the cutoff for an exact
pin.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import subprocess
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from swebounty import safefs
from swebounty.envs.failures import StepFailed, cache_miss, classify, killed, tls_refused
from swebounty.envs.releases import newest_release_before
from swebounty.envs.repairs import ProjectSource, Repairs

log = logging.getLogger(__name__)

# Variables a build may see from the caller's environment; everything else is dropped.
_PASS_THROUGH = {
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "UV_CACHE_DIR",
    "XDG_CACHE_HOME",
    "UV_INDEX_URL",  # an explicit index mirror is the caller's choice, not ambient config
    "UV_DEFAULT_INDEX",
    "UV_SYSTEM_CERTS",  # the user's choice of certificate store (what our TLS advice says)
    "UV_NATIVE_TLS",
}

# uv trusts the roots it bundles, not the system's; behind a TLS-intercepting proxy whose CA
# is installed system-wide (where pip with its configuration and curl work), uv is refused.
SYSTEM_CERTS = {"UV_SYSTEM_CERTS": "1"}


def isolated_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every build command runs in."""
    env = {k: v for k, v in os.environ.items() if k in _PASS_THROUGH}
    env.setdefault("PATH", os.defpath)
    env.update(
        {
            "UV_NO_CONFIG": "1",  # no uv.toml from the cwd, the user or /etc
            "UV_PYTHON_DOWNLOADS": "never",  # interpreters come from discovery, with a reason
            "PIP_CONFIG_FILE": os.devnull,  # pip (legacy setup_requires fetches) reads no config
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
            "NO_COLOR": "1",
            "PYTHONNOUSERSITE": "1",
        }
    )
    env.update(extra or {})
    return env


class Uv:
    """Runs uv for one build, appending everything it prints to one log file."""

    def __init__(
        self,
        binary: Path,
        log_path: Path,
        *,
        offline: bool = False,
        sdist_dir: Path | None = None,
    ) -> None:
        self.binary = binary
        self.log_path = log_path
        self.offline = offline
        # What this build repaired of what uv cannot read (repairs.py).
        self.fixes = Repairs(sdist_dir, log_path.with_name("repaired-metadata.toml"))
        # Packages `compile` takes as wheels only, never built from source (wheels.py).
        self.only_binary: tuple[str, ...] = ()
        # Packages every `compile` of this build leaves out: no line asks for them and they
        # build nowhere here for want of a system library (prune.optional).
        self.excludes: list[str] = []
        # Set once uv's own roots were refused and the system's store is used (`run`).
        self.system_certs = False
        # The project's metadata, prepared in the build sandbox (projectmeta.py), for the
        # resolutions that name it by path: set by resolve_lock.
        self.project: ProjectSource | None = None

    def run(
        self,
        step: str,
        args: list[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        stderr: list[str] | None = None,
    ) -> str:
        argv = [str(self.binary), *args]
        if self.offline and args[0] == "pip":
            argv.append("--offline")
        if self.system_certs:
            env = {**(env if env is not None else isolated_env()), **SYSTEM_CERTS}
        try:
            return run_logged(step, argv, self.log_path, cwd=cwd, env=env, stderr=stderr)
        except StepFailed as exc:
            if exc.kind != "network" or self.offline or args[0] != "pip":
                raise
            if not self.system_certs and tls_refused(exc.output):
                # Once for the rest of this build: the system's store is what the machine
                # trusts (curl, pip's configured bundle); uv's own roots were just refused.
                log.warning(
                    "uv does not trust the package index's certificate; %s again with the "
                    "system's certificate store (UV_SYSTEM_CERTS=1)",
                    step,
                )
                self.system_certs = True
                return self.run(step, args, cwd=cwd, env=env, stderr=stderr)
            # No index: what uv's cache holds may still be enough (a demo run on a plane, a
            # rebuild on an offline box). Stay offline for the rest of this build.
            log.warning("the package index is unreachable; %s again from uv's cache only", step)
            self.offline = True
            argv.append("--offline")
            try:
                return run_logged(step, argv, self.log_path, cwd=cwd, env=env, stderr=stderr)
            except StepFailed as offline:
                # Offline, a package uv's cache lacks reads as a conflict ("not found in the
                # cache ... unsatisfiable"): the cause is the unreachable index, and a network
                # failure is never remembered as the spec's (a wrong certificate setting must
                # not fail the demo for 12 hours).
                if cache_miss(offline.output):
                    raise exc from offline
                raise

    def compile(
        self,
        python: Path,
        requirements: Path,
        cutoff: datetime | None,
        *,
        cwd: Path,
        allow: dict[str, datetime] | None = None,
        tools_cutoff: datetime | None = None,
        constraints: list[str] | None = None,
        annotate: bool = False,
        excludes: list[str] | None = None,
    ) -> str:
        """Resolve `requirements` at `cutoff`; packages in `allow` up to their own date. The
        build tools are kept to those of `tools_cutoff` (default: the cutoff). With
        `annotate`, each pin ends with `# via ...` (what asked for it). Packages named in
        `excludes` (and the build's own, `self.excludes`) are left out, even where something
        requires them."""
        args = ["pip", "compile", "--quiet", "--no-header"]
        args += ["--annotation-style", "line"] if annotate else ["--no-annotate"]
        args += ["--python", str(python)]
        args += cutoff_args(cutoff, allow)
        keep = era_build_tools(tools_cutoff or cutoff, self.offline) + (constraints or [])
        if keep:
            path = requirements.with_name("era-constraints.txt")
            safefs.write_beneath(path.parent, path.name, "".join(f"{k}\n" for k in keep).encode())
            args += ["--constraints", str(path)]
        for name in self.only_binary:
            args += ["--only-binary", name]
        excludes = [*self.excludes, *(e for e in excludes or [] if e not in self.excludes)]
        if excludes:
            path = requirements.with_name("excludes.txt")
            safefs.write_beneath(
                path.parent, path.name, "".join(f"{e}\n" for e in excludes).encode()
            )
            args += ["--excludes", str(path)]
        args.append(str(requirements))
        # uv skips a release whose metadata it cannot parse and says so only in a warning:
        # each such release is repaired once (metadata.py) and the resolution redone.
        env = isolated_env({"RUST_LOG": "warn"})
        while True:
            warnings: list[str] = []
            project, given = None, requirements
            if self.project is not None:  # named, with its metadata (projectmeta.py)
                project, given = self.project.given(self, python, requirements, args)
            try:
                out = self.run(
                    "resolve dependencies",
                    [*args[:-1], *self.fixes.args(project), str(given)],
                    cwd=cwd,
                    env=env,
                    stderr=warnings,
                )
                failed, said = None, "".join(warnings)
            except StepFailed as exc:
                failed, said, out = exc, exc.output, ""
            if self.fixes.metadata(said, self.offline):
                continue
            if failed is None:
                return out
            if not self.fixes.repack(failed, cutoff, self.offline):
                raise failed

    def _wheel_builder(self, python: Path, cutoff: datetime | None) -> Callable[[Path, Path], None]:
        def build(sdist: Path, out: Path) -> None:
            argv = ["build", "--wheel", "--out-dir", str(out), "--python", str(python)]
            self.run("build a wheel to repair", [*argv, *cutoff_args(cutoff), str(sdist)])

        return build

    def venv(self, python: Path, path: Path) -> None:
        self.run("create venv", ["venv", "--quiet", "--python", str(python), str(path)])

    def install(
        self,
        venv_python: Path,
        lock: Path,
        cutoff: datetime | None,
        *,
        minor: tuple[int, int],
        allow: dict[str, datetime] | None = None,
    ) -> None:
        """Install exact pins, bytecode compiled (the environment is used read-only)."""
        args = ["pip", "install", "--python", str(venv_python), "--no-deps"]
        # uv's compile step needs py_compile.PycInvalidationMode (3.7+); 3.6 uses compileall.
        if minor >= (3, 7):
            args.append("--compile-bytecode")
        args += cutoff_args(cutoff, allow)
        while True:
            try:
                self.run("install dependencies", [*args, *self.fixes.args(), "-r", str(lock)])
                break
            except StepFailed as exc:
                if not self.fixes.wheel(
                    exc, self.offline, self._wheel_builder(venv_python, cutoff)
                ):
                    raise
        if minor < (3, 7):
            site = venv_python.parent.parent / "lib" / "python{}.{}".format(*minor)
            # A file of Python 2 syntax in some package fails compileall; the rest is compiled.
            with contextlib.suppress(StepFailed):
                run_logged(
                    "compile bytecode",
                    [str(venv_python), "-m", "compileall", "-q", "-j", "0", str(site)],
                    self.log_path,
                )

    def freeze(self, venv_python: Path) -> str:
        return self.run("freeze", ["pip", "freeze", "--python", str(venv_python)])


# setuptools 40.8.0, the first with `build_meta:__legacy__` (uv's fallback backend for projects
# that name none, with `setuptools>=40.8.0`), was uploaded on 2019-02-05.
SETUPTOOLS_FALLBACK_SINCE = datetime(2019, 2, 6, tzinfo=timezone.utc)
# What build environments may take up to that date, with the first release after it.
BUILD_TOOLS = {"setuptools": "40.8.0", "wheel": "0.33.0"}


def _stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cutoff_args(cutoff: datetime | None, allow: dict[str, datetime] | None = None) -> list[str]:
    if cutoff is None:
        return []
    args = ["--exclude-newer", _stamp(cutoff)]
    # Per-package cutoffs, later (exceptions to the date rule) or earlier (plugins.py).
    later = {n: d for n, d in (allow or {}).items() if d != cutoff}
    if cutoff < SETUPTOOLS_FALLBACK_SINCE:
        # uv builds an sdist that names no backend with its fallback, `setuptools>=40.8.0`,
        # which did not exist yet: sdist-only dependencies of the era (pympler 0.5, markupsafe
        # 1.0) could not be built. setuptools may reach that release, and wheel with it (a 2017
        # wheel breaks setuptools 40.8's dist_info: attrs of 2017); what gets installed stays
        # the era's (`era_build_tools` constrains the resolution).
        for name in BUILD_TOOLS:
            later[name] = max(later.get(name, cutoff), SETUPTOOLS_FALLBACK_SINCE)
    for name, until in sorted(later.items()):
        args += ["--exclude-newer-package", f"{name}={_stamp(until)}"]
    return args


# A lock records the packages allowed past the cutoff as comments uv ignores, so that installing
# it (again, after a prune) passes the same exceptions, and the environment's key covers them.
ALLOW_PREFIX = "# exclude-newer-package "


def lock_allowances(lock: str) -> dict[str, datetime]:
    """The per-package cutoffs a lock was resolved with."""
    found: dict[str, datetime] = {}
    for line in lock.splitlines():
        if line.startswith(ALLOW_PREFIX):
            name, _, when = line[len(ALLOW_PREFIX) :].partition("=")
            with contextlib.suppress(ValueError):
                found[name.strip()] = datetime.fromisoformat(when.strip().replace("Z", "+00:00"))
    return found


def with_allowances(lock: str, allow: dict[str, datetime]) -> str:
    header = "".join(f"{ALLOW_PREFIX}{n}={_stamp(d)}\n" for n, d in sorted(allow.items()))
    return header + lock


@functools.lru_cache(maxsize=256)
def _newest_tool(name: str, cutoff: datetime) -> str | None:
    """Once per process and cutoff: every resolution attempt of a build asks again."""
    return newest_release_before(name, cutoff)


def era_build_tools(cutoff: datetime | None, offline: bool) -> list[str]:
    """Constraints keeping the environment's setuptools and wheel the cutoff's own, when
    `cutoff_args` lets build environments have newer ones."""
    if cutoff is None or cutoff >= SETUPTOOLS_FALLBACK_SINCE:
        return []
    keep = []
    for name in BUILD_TOOLS:
        version = None if offline else _newest_tool(name, cutoff)
        keep.append(f"{name}=={version}" if version else f"{name}<{BUILD_TOOLS[name]}")
    return keep


def run_logged(
    step: str,
    argv: list[str],
    log_path: Path,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 1800,
    stderr: list[str] | None = None,
) -> str:
    """Run argv; append its command line and output to log_path; return stdout (and, into
    `stderr` if given, what it said there).

    Raises StepFailed (classified) on a non-zero exit or a timeout."""
    started = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            cwd=cwd,
            env=env if env is not None else isolated_env(),
            timeout=timeout,
        )
        out, err, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        err = f"timed out after {timeout:.0f} s"
        code = -1
    with log_path.open("a", encoding="utf-8") as fh:
        fh.write(
            f"\n$ {' '.join(argv)}\n# {step}: exit {code} in {time.monotonic() - started:.1f}s\n"
        )
        fh.write(out[-20000:] + err[-20000:])
    if stderr is not None:
        stderr.append(err)
    if code == -1 and err.startswith("timed out"):
        raise StepFailed(step, "timeout", err + out)
    if code < 0:  # a signal: Ctrl-C reaches the tools a run started, the OOM killer
        raise killed(step, code, err + out)
    if code != 0:
        raise StepFailed(step, classify(err + out), err + out)
    return out


def log_tail(log_path: Path, lines: int = 25) -> str:
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no build log)"
    return "\n".join(text.rstrip().splitlines()[-lines:])


def pinned(lock: str, name: str) -> str | None:
    m = re.search(rf"^{name}==(\S+)", lock, re.M | re.I)
    return m.group(1) if m else None


def strip_project(lock: str, tmp: Path) -> str:
    """The lock without the project itself (the environment must not shadow the workspace)."""
    keep = []
    for line in lock.splitlines():
        s = line.strip()
        if not s or s.startswith(("#", "./", "-e ", "file:")) or str(tmp) in s or "@ file:" in s:
            continue
        keep.append(s)
    return "\n".join(sorted(keep, key=str.lower)) + "\n"
