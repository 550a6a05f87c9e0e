"""The project's core metadata, prepared in the build sandbox and handed to uv as data.

To resolve `./project[extras]`, uv needs the project's metadata (name, version, requirements,
extras, Requires-Python). Left to itself it prepares it on the host: it runs the project's
build backend (setup.py egg_info, `prepare_metadata_for_build_wheel`) with the network, the
user's home and uv's cache, and a dataset's repository is hostile (DESIGN.md, principle 9).
uv also takes a path requirement's metadata from a `[[dependency-metadata]]` entry of its
`--config-file`, and then runs none of the project's code. So the metadata is made here:

1. the build requirements are read as data (pyproject.toml's `[build-system]`, or uv's
   default, `setuptools >= 40.8.0` with `setuptools.build_meta:__legacy__`), resolved by uv
   with every setting the resolution itself gets (cutoffs, `--only-binary`, the repairs), as
   uv resolves them for its own build environment, and installed by uv into a fresh
   environment on the host: no code of the project runs there;
2. the project's backend runs in the build sandbox (buildbox.py) over that environment, which
   it sees read-only, with the build copy as a throw-away layer, no network, no home, no
   cache: as uv does, `get_requires_for_build_wheel` first (what it adds is resolved with the
   rest and the environment made again when that changes anything), then
   `prepare_metadata_for_build_wheel` (or, without that hook, `build_wheel` and the wheel's
   METADATA);
3. the METADATA comes back through the channel the harness owns, never as a file, and is
   read as hostile input (`parse_metadata`): bounded, every field validated, every
   requirement re-serialised by `packaging`;
4. `Uv.compile` gives uv `name[extras] @ ./project` and the metadata as `dependency-metadata`.

A pyproject.toml whose `[project]` is static (version and requirements not dynamic) needs no
build: uv reads it without running anything, and so does `static_pyproject`. The metadata is
kept per interpreter and build environment: the many resolutions of one build run the backend
once or twice. Where bubblewrap cannot run, nothing here runs: uv prepares the metadata on the
host as before, after buildbox's UNSANDBOXED warning.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import stat
import tempfile
import weakref
from pathlib import Path
from typing import Any

from swebounty import safefs
from swebounty.envs import buildbox
from swebounty.envs.coremeta import (
    MAX_REQUIREMENTS,
    BuildSystem,
    build_system,
    parse_metadata,
    read_pyproject,
    requirement,
    static_pyproject,
)
from swebounty.envs.failures import NOT_THE_SPEC, StepFailed, classify
from swebounty.envs.metadata import Repair
from swebounty.envs.steps import Uv
from swebounty.sandbox import BwrapSandbox

log = logging.getLogger(__name__)

STEP = "prepare the project's metadata"
TIMEOUT = 1800.0
# A requirements line naming the project by path alone: `./project` or `./project[a,b]`.
UNNAMED = re.compile(r"^\./project(\[[^\]\n]*\])?[ \t]*$", re.M)
# What uv applies to its build environments too, of a `uv pip compile` command line.
BUILD_ARGS = {"--exclude-newer", "--exclude-newer-package", "--only-binary", "--config-file",
              "--find-links"}  # fmt: skip

# Run by the sandboxed interpreter (any Python 3 a build may use: no f-strings), from a
# read-only folder of its own. It does what uv's build frontend does with the backend, and
# writes one JSON object to the result channel.
DRIVER = r"""
import json, os, sys, tempfile, traceback, zipfile
channel = os.fdopen(int(os.environ.pop("SWEBOUNTY_RESULT_FD")), "w")
want, backend_name, backend_path = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.pop(0)  # this file's folder (uv's `-c` drops the "" there)
sys.path[:0] = backend_path
module, _, attrs = backend_name.partition(":")
backend = __import__(module, fromlist=["_"])
for attr in attrs.split(".") if attrs else []:
    backend = getattr(backend, attr)
result = {"requires": None, "metadata": None, "error": None}
if want == "both":
    hook = getattr(backend, "get_requires_for_build_wheel", None)
    result["requires"] = [str(r) for r in hook({})] if hook else []
try:
    out = tempfile.mkdtemp()
    hook = getattr(backend, "prepare_metadata_for_build_wheel", None)
    if hook:
        with open(os.path.join(out, hook(out, {}), "METADATA"), "rb") as f:
            data = f.read()
    else:
        wheel = zipfile.ZipFile(os.path.join(out, backend.build_wheel(out, {})))
        names = [n for n in wheel.namelist() if n.count("/") == 1
                 and n.endswith(".dist-info/METADATA")]
        data = wheel.read(names[0])
    result["metadata"] = data.decode("utf-8", "replace")
except BaseException:  # distutils ends a failed command with SystemExit
    if want != "both":
        raise
    result["error"] = traceback.format_exc()
channel.write(json.dumps(result))
channel.close()
"""


class ProjectMetadata:
    """The metadata of the build copy at `project`, for each interpreter and build
    environment a resolution asks with. Its working files (the build environments, the
    driver) are in a folder of its own that no sandboxed step can write, removed with it."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.work = Path(tempfile.mkdtemp(prefix="swebounty-metadata-"))
        weakref.finalize(self, shutil.rmtree, self.work, True)
        self.prefixes: dict[Path, Path] = {}  # interpreter -> what a sandbox mounts for it
        self.envs: dict[tuple[str, ...], Path] = {}  # (python, pins...) -> environment
        self.resolved: dict[tuple[str, ...], list[str]] = {}  # resolution args -> pins
        self.found: dict[tuple[str, ...], Repair | StepFailed] = {}  # (python, pins...)
        self._pyproject: dict[str, Any] | bool | None = False

    def given(
        self, uvr: Uv, python: Path, requirements: Path, args: list[str]
    ) -> tuple[Repair | None, Path]:
        """(the project's metadata, the requirements file to give uv) for the resolution
        `args` of `requirements`: when it names the project by path (`./project[extras]`),
        its metadata and a copy naming it `name[extras] @ ./project`, so that uv runs none of
        the project's code. (None, `requirements`) without a project line or a build sandbox
        (uv prepares the metadata on the host then, as before). Raises StepFailed."""
        text = requirements.read_text(encoding="utf-8")
        if UNNAMED.search(text) is None:
            return None, requirements
        found = self.metadata(uvr, python, build_args([*args, *uvr.fixes.args()]))
        if found is None:
            return None, requirements
        named = UNNAMED.sub(lambda m: f"{found.name}{m.group(1) or ''} @ ./project", text)
        given = requirements.with_name(f"{requirements.stem}.named{requirements.suffix}")
        # Never through a link: a sandboxed step (the project's install) wrote in that folder.
        safefs.write_beneath(given.parent, given.name, named.encode("utf-8"))
        return found, given

    def metadata(self, uvr: Uv, python: Path, resolve_args: list[str]) -> Repair | None:
        """The project's metadata for a resolution by `python` with `resolve_args` (its
        cutoffs, binary rules, repairs); None where there is no build sandbox. Raises
        StepFailed (STEP) when the project's build cannot prepare it."""
        try:
            if self._pyproject is False:
                self._pyproject = read_pyproject(self.project)
            pyproject = self._pyproject if isinstance(self._pyproject, dict) else None
            static = static_pyproject(pyproject)
            system = build_system(pyproject)
        except ValueError as exc:
            raise StepFailed(STEP, "build", str(exc)) from None
        if static is not None:
            return static
        box = buildbox.sandbox()
        if box is None:
            return None
        try:
            pins = self._resolve(uvr, python, resolve_args, system.requires)
        except StepFailed as exc:  # in uv's words, as its resolution said it (the same kind)
            said = "Failed to build `./project`\n  cause: Failed to resolve requirements from "
            raise StepFailed(STEP, "build", f"{said}`build-system.requires`\n{exc.output}") from exc
        key = (str(python), *pins)
        if key not in self.found:
            self.found[key] = self._prepare(uvr, box, python, resolve_args, system, pins)
        found = self.found[key]
        if isinstance(found, StepFailed):
            raise found
        return found

    def _prepare(
        self,
        uvr: Uv,
        box: BwrapSandbox,
        python: Path,
        resolve_args: list[str],
        system: BuildSystem,
        pins: list[str],
    ) -> Repair | StepFailed:
        said = (  # uv's words, so that the failure is classified as uv's was (staticmeta.py)
            "The build backend returned an error\n  cause: Call to "
            f"`{system.backend}.prepare_metadata_for_build_wheel` failed (build sandbox)\n"
        )
        try:
            env = self._environment(uvr, python, resolve_args, pins)
            result = self._run(uvr, box, python, env, system, "both")
            asked = result.get("requires")
            if not isinstance(asked, list) or len(asked) > MAX_REQUIREMENTS:
                raise ValueError("get_requires_for_build_wheel said nothing usable")
            if asked:
                # As uv: what the backend asks for is resolved with the rest, installed.
                wanted = [*system.requires, *(requirement(r) for r in asked)]
                more = self._resolve(uvr, python, resolve_args, wanted)
                if more != pins:
                    env = self._environment(uvr, python, resolve_args, more)
                    result = self._run(uvr, box, python, env, system, "metadata")
            if result.get("error") or not isinstance(result.get("metadata"), str):
                output = said + str(result.get("error"))[-8000:]
                return StepFailed(STEP, classify(output), output)
            repair = parse_metadata(str(result["metadata"]).encode("utf-8"))
        except ValueError as exc:
            return StepFailed(STEP, "build", f"the project's metadata is not usable: {exc}")
        except StepFailed as exc:
            if exc.step != STEP or exc.kind in ("timeout", *NOT_THE_SPEC):
                return exc
            return StepFailed(STEP, classify(said + exc.output), said + exc.output)
        log.info("%s %s: metadata prepared in the build sandbox", repair.name, repair.version)
        return repair

    def _resolve(
        self, uvr: Uv, python: Path, resolve_args: list[str], requires: list[str]
    ) -> list[str]:
        """The build environment uv would make for `requires`: its pins."""
        key = (str(python), *resolve_args, "--", *requires)
        if key not in self.resolved:
            path = self.work / f"build-requires-{len(self.resolved)}.in"
            path.write_text("".join(f"{r}\n" for r in requires), encoding="utf-8")
            args = ["pip", "compile", "--quiet", "--no-header", "--no-annotate"]
            out = uvr.run(
                "resolve the project's build requirements",
                [*args, "--python", str(python), *resolve_args, str(path)],
                cwd=self.work,
            )
            self.resolved[key] = sorted(
                line.strip() for line in out.splitlines() if "==" in line and line[0] != "#"
            )
        return self.resolved[key]

    def _environment(self, uvr: Uv, python: Path, resolve_args: list[str], pins: list[str]) -> Path:
        key = (str(python), *pins)
        if key in self.envs:
            return self.envs[key]
        env = self.work / f"build-env-{len(self.envs)}"
        uvr.run("create the metadata build venv", ["venv", "--quiet", "--python", str(python),
                                                   str(env)])  # fmt: skip
        if pins:
            lock = self.work / f"build-env-{len(self.envs)}.txt"
            lock.write_text("".join(f"{p}\n" for p in pins), encoding="utf-8")
            uvr.run(
                "install the project's build requirements",
                ["pip", "install", "--quiet", "--python", str(env / "bin" / "python"),
                 "--no-deps", *resolve_args, "-r", str(lock)],
            )  # fmt: skip
        # The sandbox's uid (as root, another than ours) reads it, whatever the umask was.
        for path in (env, *env.rglob("*")):
            mode = path.lstat().st_mode
            want = mode | 0o444 | (0o111 if stat.S_ISDIR(mode) else 0)
            if not stat.S_ISLNK(mode) and want != mode:
                path.chmod(want)
        self.envs[key] = env
        return env

    def _run(
        self, uvr: Uv, box: BwrapSandbox, python: Path, env: Path, system: BuildSystem, want: str
    ) -> dict[str, Any]:
        prefix = self.prefixes.get(Path(python), Path(python).parent.parent)
        driver = self.work / "driver" / "prepare_metadata.py"
        if not driver.exists():
            driver.parent.mkdir(mode=0o755)
            driver.write_text(DRIVER, encoding="utf-8")
            driver.chmod(0o644)
        argv = [str(env / "bin" / "python"), str(driver), want, system.backend,
                json.dumps(system.backend_path)]  # fmt: skip
        variables = {
            "PATH": f"{env / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "VIRTUAL_ENV": str(env),
            "PYTHONIOENCODING": "utf-8:backslashreplace",
            **{k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL")},
        }
        # The build copy, mounted by path: a real folder, not a link an earlier sandboxed step
        # (the project's install, whose folder holds it) left to mount a host folder instead.
        if not stat.S_ISDIR(os.lstat(self.project).st_mode):
            raise StepFailed(STEP, "build", f"{self.project} is no longer a folder")
        _, channel = buildbox.run_for_result(
            box, STEP, argv, uvr.log_path, workdir=self.project,
            reads=[prefix, env, driver.parent], env=variables, timeout=TIMEOUT,
        )  # fmt: skip
        try:
            result = json.loads(channel.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            result = None
        if not isinstance(result, dict):
            raise StepFailed(STEP, "build", "the metadata step's result could not be read")
        return result


def build_args(args: list[str]) -> list[str]:
    """Of a `uv pip compile` command line, what uv applies to its build environments too:
    the cutoffs, the binary rules, the repairs (config file, find-links)."""
    kept: list[str] = []
    for i, arg in enumerate(args[:-1]):
        if arg in BUILD_ARGS:
            kept += [arg, args[i + 1]]
    return kept
