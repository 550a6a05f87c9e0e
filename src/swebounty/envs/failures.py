"""Why a build step failed: its class, the package at fault, and the words a person reads.

Classes decide what the builder tries next, and what someone fixing it should do:
- `build`: a package failed to build from source (an older interpreter, or a plan without the
  extra that pulls it in, may have wheels);
- `system`: it failed for want of a system library's C headers: no interpreter helps, a plan
  without the package does;
- `python`: no release of a package supports the interpreter;
- `resolve`: the requirements conflict at the cutoff, or a package has no release before it;
- `yanked`: the releases available at the cutoff were yanked since (an exact pin fixes it);
- `sdist`: the only files of the releases needed are source distributions uv refuses by their
  name (`.tar.bz2`, `.tgz`: "non-PEP 625-compliant"); not a conflict, so no pin helps: an
  older interpreter (wheels of its time) or a plan without the package may;
- `network`: the package index was unreachable (never remembered as a failure);
- `disk`: the disk filled up (never remembered: it says nothing about the spec);
- `killed`: the step died of a signal it did not time out on (Ctrl-C, a run's stop ending its
  sandboxes, the out-of-memory killer): never remembered, it says nothing about the spec;
- `timeout`: a step ran out of time; `other`: anything else.
"""

from __future__ import annotations

import re
import signal
from typing import Literal

from packaging.utils import canonicalize_name

FailureKind = Literal[
    "build",
    "system",
    "python",
    "resolve",
    "yanked",
    "sdist",
    "network",
    "disk",
    "killed",
    "timeout",
    "other",
]
# Failures of the machine or the run, not of the spec: never remembered as the spec's failure
# (a build stopped by the run's own Ctrl-C was remembered, and the resumed run then gave the
# task `error` without building: matplotlib-23964 in the cold Lite run).
NOT_THE_SPEC: tuple[FailureKind, ...] = ("network", "disk", "killed")

_BUILD = re.compile(
    r"Failed to build|Failed to download and build|Build backend failed|"
    r"failed to build|Failed to prepare metadata|error: command '.*' failed|"
    r"Failed to install.*setup\.py|subprocess-exited-with-error|"
    r"building from source is disabled"  # wheels.py: a wheel-only package with none here
)
# The compiler's missing header, or uv's hint about it.
_SYSTEM = re.compile(
    r"fatal error: [^\s:]+\.h: No such file or directory|you need to install a library that provides"
)
_SYSTEM_HEADER = re.compile(r"fatal error: ([^\s:]+\.h): No such file")
_PYTHON = re.compile(
    r"(current|requested) Python version \([\d.]+\) does not satisfy|"
    r"requires-python|only the following Python versions"
)
_NETWORK = re.compile(
    r"error sending request|dns error|Connection (refused|reset)|timed out|"
    r"Could not connect|tcp connect error|Network unreachable|offline mode",
    re.I,
)
_CACHE_MISS = re.compile(r"not found in the cache|because the network was disabled")
_TLS = re.compile(r"invalid peer certificate|certificate verify failed|UnknownIssuer")

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_YANKED = re.compile(rf"({_NAME})(?:[<>=!~]=?[\w.*]+)? was yanked")
_BUILT = re.compile(r"Failed to (?:download and )?(?:build|prepare metadata for) `([^`]+)`")
_NEEDS_PYTHON = re.compile(rf"and ({_NAME}(?:==\S+)?) depends on Python")
_NO_VERSIONS = re.compile(
    rf"there (?:are|is) no versions? of ({_NAME})|({_NAME}) was not found in the package registry"
)
_FILTERED = re.compile(rf"`({_NAME})` was filtered by `exclude-newer`")
_SDIST = re.compile(
    rf"(?:all versions of |\b)({_NAME})(?:[<>=!~]=?[\w.*]+)? (?:has|have) a non-PEP 625-compliant"
)
_CAUSE = re.compile(r"cause: (Because .*?)(?:\n\s*\n|\Z)", re.S)
_SETUP_ERROR = re.compile(r"^\s*(?:error|ERROR|\w*Error): .+$", re.M)


def classify(output: str) -> FailureKind:
    if "No space left on device" in output:  # whatever else failed with it (a build, a download)
        return "disk"
    if _YANKED.search(output):
        return "yanked"
    if _SDIST.search(output):
        return "sdist"
    if _BUILD.search(output):
        return "system" if _SYSTEM.search(output) else "build"
    if _PYTHON.search(output):
        return "python"
    if "No solution found" in output or "unsatisfiable" in output:
        return "resolve"
    if _NETWORK.search(output) or _TLS.search(output):
        return "network"
    return "other"


def cache_miss(output: str) -> bool:
    """uv, offline, lacked a package in its cache (what it then calls unsatisfiable)."""
    return bool(_CACHE_MISS.search(output))


def tls_refused(output: str) -> bool:
    """Whether uv (or pip) failed because it did not trust the index's TLS certificate."""
    return bool(_TLS.search(output))


class StepFailed(Exception):
    """A build step failed; `kind` says what kind of failure it was, `package` which package
    (when the output names one) and `describe()` says it in words."""

    def __init__(
        self, step: str, kind: FailureKind, output: str, *, package: str | None = None
    ) -> None:
        self.step = step
        self.kind = kind
        self.output = output
        self._package = package
        self.plan: int | None = None  # index of the dependency plan being tried, if any
        super().__init__(f"{step} failed ({kind})")

    @property
    def yanked(self) -> list[str]:
        return sorted({canonicalize_name(m) for m in _YANKED.findall(self.output)})

    @property
    def unreleased(self) -> list[str]:
        """Packages the resolver found no version of (none before the cutoff, or none at all)."""
        found = _NO_VERSIONS.findall(self.output)
        return sorted({canonicalize_name(a or b) for a, b in found})

    @property
    def package(self) -> str | None:
        """The package at fault, as `name` or `name==version`, when the output says."""
        if self._package:
            return self._package
        pattern = {
            "build": _BUILT,
            "system": _BUILT,
            "python": _NEEDS_PYTHON,
            "yanked": _YANKED,
            "sdist": _SDIST,
        }.get(self.kind)
        if self.kind == "resolve":
            pattern = _NO_VERSIONS if _NO_VERSIONS.search(self.output) else None
        found = pattern.search(self.output) if pattern else None
        if found is None:
            return None
        name = next(g for g in found.groups() if g).split(" @ ")[0].strip()
        return name

    def describe(self) -> str:
        """One line: what failed, in words."""
        package = self.package
        shown = package.replace("==", " ") if package else None
        if self.kind == "build":
            if self.step in ("install the project", "build the extensions"):
                cause = native_cause(self.output)
                what = "installing the project itself" if self.step[0] == "i" else self.step
                return f"{what} failed" + (f": {cause}" if cause else _detail(self.output))
            return f"building {shown or 'a package'} from source failed during {self.step}"
        if self.kind == "system":
            header = _SYSTEM_HEADER.search(self.output)
            lib = f" ({header.group(1)})" if header else ""
            return f"building {shown or 'a package'} needs a system library this machine lacks{lib}"
        if self.kind == "python":
            return (
                f"{shown} supports no Python tried here"
                if shown
                else "a dependency supports no Python tried here"
            )
        if self.kind == "resolve":
            if package and _FILTERED.search(self.output):
                return f"{package} has no release before the cutoff"
            if package:
                return f"{package} is not on the package index"
            return "the requirements conflict: " + _cause(self.output)
        if self.kind == "yanked":
            return f"every release of {shown or 'a package'} available at the cutoff was yanked"
        if self.kind == "sdist":
            return (
                f"{shown or 'a package'} has only source distributions whose file names uv "
                "refuses (not PEP 625: .tar.bz2, .tgz, ...) at the cutoff"
            )
        if self.kind == "network":
            if _TLS.search(self.output):
                # Short, the advice first: run summaries cut a reason at 200 characters.
                # uv's own roots and then the system's store were tried (steps.Uv.run).
                return (
                    "the package index's TLS certificate is trusted neither by uv nor by the "
                    f"system's store: set SSL_CERT_FILE to the CA bundle that signs it ({self.step})"
                )
            return f"the package index was unreachable during {self.step}"
        if self.kind == "timeout":
            return f"{self.step} ran out of time"
        if self.kind == "killed":
            return f"{self.step} was {self.output.partition(chr(10))[0]}"  # "killed by SIGKILL"
        if self.kind == "disk":
            return f"the disk was full during {self.step}"
        return f"{self.step} failed{_detail(self.output)}"


def killed(step: str, code: int, output: str) -> StepFailed:
    """The failure of a step whose process died of signal -`code`."""
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return StepFailed(step, "killed", f"killed by {name}\n{output}")


_HEADER = re.compile(r"fatal error: ([\w./+-]+): No such file or directory")
_COMPILER = re.compile(
    r"(?:unable to execute|command not found:?|error: command) '?"
    r"([\w./+-]*(?:gcc|g\+\+|cc|c\+\+|clang|clang\+\+|gfortran|f77|f95))'?"
    r"(?:[^\n]*(?:No such file|not found|failed: No such file))"
)
_LIBRARY = re.compile(r"cannot find -l([\w.+-]+)")


def native_cause(output: str) -> str | None:
    """What a compiled build lacked, in words: the compiler, a header, a library."""
    compiler = _COMPILER.search(output)
    if compiler:
        return f"no {compiler.group(1)} compiler on this machine (install one)"
    header = _HEADER.search(output)
    if header:
        return (
            f"the C header {header.group(1)} is missing: a system library's development "
            "package is not installed"
        )
    library = _LIBRARY.search(output)
    if library:
        return f"the linker cannot find the system library lib{library.group(1)}"
    return None


def _cause(output: str) -> str:
    found = _CAUSE.search(output)
    if found:
        text = found.group(1)
    else:
        lines = [line for line in output.splitlines() if line.strip()]
        text = lines[-1] if lines else "(no output)"
    return " ".join(text.split())[:300]


def _detail(output: str) -> str:
    found = _SETUP_ERROR.findall(output)
    return f": {' '.join(found[-1].split())[:200]}" if found else ""


def advice(kind: str) -> str:
    return {
        "build": "A package failed to build from source on every interpreter and plan tried. "
        "Install the interpreter the project was written for, or add an override "
        "(overrides.toml) with a `python` or an `install` pin that has wheels.",
        "system": "A package needs a system library's C headers that this machine lacks, and "
        "every plan tried needs the package: install the library's -dev package, or add an "
        "override (overrides.toml) whose plan leaves the package out.",
        "python": "No installed interpreter satisfies the project's dependencies; install an "
        "older Python (pyenv install 3.X) or pass it with --python-dir.",
        "resolve": "The dependencies conflict at the cutoff date. Add an override pinning the "
        "package named above, or check the cutoff.",
        "yanked": "A needed release was yanked after the cutoff and no earlier release exists.",
        "sdist": "uv accepts source distributions only as .tar.gz or .zip (PEP 625), and the "
        "package named above had nothing else at the cutoff on any interpreter or plan tried. "
        "Install an older interpreter that it has wheels for (pyenv install 3.X), or add an "
        "override (overrides.toml) whose plan leaves the package out.",
        "network": "The package index was unreachable. Check the network, or run with a warm "
        "uv cache and --offline.",
        "disk": "The disk filled up: free space (swebounty's cache, uv's cache, temporary "
        "files) and run again; a full disk is not remembered as the spec's failure.",
        "killed": "A build step was killed by a signal (Ctrl-C, the run's stop, the out-of-memory "
        "killer): not remembered as the spec's failure; run again.",
        "timeout": "A build step ran out of time: the machine may be overloaded, or a package "
        "compiles for too long; retry, or add an override with a pin that has wheels.",
    }.get(kind, "See the build log above.")
