"""What a JavaScript/TypeScript repository says about itself at its base commit.

Node version constraints (`.nvmrc`, `.node-version`, `engines.node`, the CI matrix), the
package manager (`packageManager`, the lockfile's kind), the lockfile, and the test runner the
project's own `test` script uses (Jest, Vitest or Mocha) with the flags it passes it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from swebounty.envs.node_versions import Constraints, normalize_pin

LOCKFILES = {
    "package-lock.json": "npm",
    "npm-shrinkwrap.json": "npm",
    "yarn.lock": "yarn",
    "pnpm-lock.yaml": "pnpm",
}
RUNNERS = ("jest", "vitest", "mocha")
_RUNNER_BINS = {"jest": "jest", "vitest": "vitest", "mocha": "mocha", "_mocha": "mocha"}
# Wrappers that run the rest of their command line: skipped to find the runner.
_WRAPPERS = {"cross-env", "npx", "nyc", "c8", "env", "dotenv", "node", "yarn", "pnpm", "exec"}
# Flags of the project's script that the harness sets itself (results, one run, no bail).
_DROP_FLAGS = {
    "jest": {"--coverage", "--ci", "--json", "--outputFile", "--watch", "--watchAll", "--bail",
             "--reporters", "--verbose", "--silent", "--runInBand", "-i", "--detectOpenHandles",
             "-u", "--updateSnapshot", "--passWithNoTests", "--colors", "--no-cache"},
    "vitest": {"--coverage", "--reporter", "--outputFile", "--watch", "--bail", "--run",
               "--silent", "--ui", "--update", "-u"},
    "mocha": {"--reporter", "-R", "--reporter-options", "--reporter-option", "-O", "--bail",
              "-b", "--watch", "-w", "--forbid-only", "--forbid-pending", "--colors", "-c",
              "--no-colors", "--exit", "--no-exit", "--parallel", "-p", "--jobs", "-j"},
}  # fmt: skip
# Flags that take a value in the next argument (so the value is not taken for a path).
_VALUE_FLAGS = {
    "--config", "-c", "--require", "-r", "--timeout", "-t", "--ui", "-u", "--reporter", "-R",
    "--reporter-options", "-O", "--file", "--extension", "--spec", "--ignore", "--grep", "-g",
    "--slow", "-s", "--outputFile", "--reporters", "--testTimeout", "--maxWorkers", "-w",
    "--testPathIgnorePatterns", "--setupFiles", "--environment", "--env", "--project",
    "--rootDir", "--roots", "--selectProjects", "--compilers", "--opts", "--dir", "--root",
    "--loader", "--import", "--pool", "--jobs", "-j", "--retries",
}  # fmt: skip
_NODE_VALUE_FLAGS = {"-r", "--require", "--loader", "--import", "--experimental-loader"}


@dataclass
class RunnerCall:
    """How the project runs its tests: the runner, node's own flags, the runner's flags, the
    paths it names, and variables set on the command line (`TZ=UTC jest`)."""

    runner: str
    node_flags: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    script: str = ""


@dataclass
class NodeProject:
    package: dict[str, Any]
    constraints: Constraints
    manager: str  # npm | yarn | pnpm
    manager_version: str | None  # from packageManager, if declared
    manager_hash: str | None  # packageManager's `+sha512.<hex>`: what corepack would verify
    lockfile: str | None
    lockfile_version: int | None
    lock_digest: str  # what the dependency install depends on
    runner: RunnerCall | None
    why: list[str] = field(default_factory=list)
    # The test script's other runner calls (dayjs runs its time-zone tests again under three
    # TZs before the whole suite): a test fails if it fails in any of them.
    other_calls: list[RunnerCall] = field(default_factory=list)


def read_package(workspace: Path) -> dict[str, Any]:
    path = workspace / "package.json"
    if not path.is_file():
        raise ValueError(f"{path} does not exist: not a Node project at this commit")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("package.json is not a JSON object")
    return data


def read_project(workspace: Path) -> NodeProject:
    package = read_package(workspace)
    why: list[str] = []
    pinned = None
    for name in (".nvmrc", ".node-version"):
        f = workspace / name
        if f.is_file():
            lines = f.read_text(errors="replace").strip().splitlines()
            pinned = normalize_pin(lines[0] if lines else "")
            if pinned:
                why.append(f"{name} says {pinned}")
            break
    engines = package.get("engines")
    engine = engines.get("node") if isinstance(engines, dict) else None
    engine = engine if isinstance(engine, str) else None
    if engine:
        why.append(f"engines.node {engine!r}")
    matrix = ci_matrix(workspace)
    if matrix:
        why.append(f"CI tests Node {', '.join(map(str, matrix))}")
    lockfile = next((n for n in LOCKFILES if (workspace / n).is_file()), None)
    manager, manager_version, manager_hash = "npm", None, None
    declared = package.get("packageManager")
    if isinstance(declared, str) and "@" in declared:
        name, _, version = declared.partition("@")
        if name in ("npm", "yarn", "pnpm"):
            manager, manager_version = name, version.split("+", 1)[0]
            manager_hash = version.partition("+")[2] or None
            why.append(f"packageManager {name}@{manager_version}")
    elif lockfile:
        manager = LOCKFILES[lockfile]
    lock_version = _lockfile_version(workspace / lockfile) if lockfile else None
    return NodeProject(
        package=package,
        constraints=Constraints(pinned=pinned, engines=engine, matrix=tuple(matrix)),
        manager=manager,
        manager_version=manager_version,
        manager_hash=manager_hash,
        lockfile=lockfile,
        lockfile_version=lock_version,
        lock_digest=_lock_digest(workspace, package, lockfile),
        runner=find_runner(package),
        other_calls=other_runner_calls(package),
        why=why,
    )


def _lockfile_version(path: Path) -> int | None:
    text = path.read_text(encoding="utf-8", errors="replace")[:4000]
    m = re.search(r'"lockfileVersion"\s*:\s*(\d+)|^lockfileVersion:\s*\'?(\d+)', text, re.M)
    return int(m[1] or m[2]) if m else None


def _lock_digest(workspace: Path, package: dict[str, Any], lockfile: str | None) -> str:
    h = hashlib.sha256()
    deps = {k: package.get(k) for k in ("dependencies", "devDependencies", "optionalDependencies",
                                        "peerDependencies", "overrides", "resolutions",
                                        "workspaces", "pnpm")}  # fmt: skip
    h.update(json.dumps(deps, sort_keys=True).encode())
    for name in ([lockfile] if lockfile else []) + [".npmrc", ".yarnrc", ".yarnrc.yml"]:
        f = workspace / name
        if f.is_file():
            h.update(name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


_MATRIX_KEY = re.compile(r"^\s*-?\s*['\"]?(node[-_]?(?:version|js)?|node)['\"]?\s*:\s*(.*)$", re.I)


def ci_matrix(workspace: Path) -> list[int]:
    """Node majors named in the CI configuration (GitHub workflows, Travis), newest last."""
    files = sorted((workspace / ".github" / "workflows").glob("*.y*ml"))
    files += [workspace / ".travis.yml"]
    majors: set[int] = set()
    for f in files:
        if not f.is_file():
            continue
        lines = f.read_text(errors="replace").splitlines()
        for i, line in enumerate(lines):
            m = _MATRIX_KEY.match(line)
            if not m:
                continue
            value = m[2].strip()
            items: list[str] = []
            if value.startswith("["):
                items = value.strip("[]").split(",")
            elif value and not value.startswith("$"):
                items = [value]
            elif not value:  # a YAML list on the following lines
                for nxt in lines[i + 1 :]:
                    item = re.match(r"^\s*-\s*(.+)$", nxt)
                    if not item:
                        break
                    items.append(item[1])
            for text in items:
                num = re.match(r"^\s*['\"]?v?(\d+)(?:\.[\dx]+)*['\"]?\s*(#.*)?$", text)
                if num and 0 < int(num[1]) < 100:
                    majors.add(int(num[1]))
    return sorted(majors)


# ---------------------------------------------------------------------------- test runner

SCRIPT_ORDER = ("test", "test:unit", "unit", "test:node", "test:mocha", "test:jest",
                 "test:vitest", "test:ci", "test:all")  # fmt: skip


def find_runner(package: dict[str, Any]) -> RunnerCall | None:
    """The runner call of the project's test script (following `npm run X`), else a runner
    found among its dependencies, called plainly."""
    found = package.get("scripts")
    scripts: dict[str, Any] = found if isinstance(found, dict) else {}
    if delegates_to_workspaces(package):
        return None  # each workspace package runs its own tests (see `node_workspaces`)
    for name in SCRIPT_ORDER:
        if isinstance(scripts.get(name), str):
            calls = _calls(scripts, name, depth=0)
            if calls:
                # The first call that runs the whole suite (dayjs first runs one file under
                # several time zones; axios's last call runs one module's test).
                return next((c for c in calls if _whole_suite(c)), calls[0])
    deps = {**(package.get("devDependencies") or {}), **(package.get("dependencies") or {})}
    for runner in RUNNERS:
        if runner in deps:
            return RunnerCall(runner=runner, script=f"({runner} in dependencies)")
    return None


# A segment of a test script that runs the same script in the workspace packages.
_DELEGATES = re.compile(
    r"^(?:(?:npm|pnpm|yarn)\b.*\s(?:--workspaces?\b|-ws\b|-w\s|--recursive\b|-r\b|--filter\b|-F\s)"
    r"|yarn\s+workspaces?\s|lerna\s+(?:run|exec)\s|turbo\s+(?:run\s+)?test|nx\s+(?:run-many|affected)\s"
    r"|pnpm\s+-r\b)"
)


def delegates_to_workspaces(package: dict[str, Any]) -> bool:
    """Whether the project's test script runs the workspace packages' own test scripts."""
    found = package.get("scripts")
    scripts: dict[str, Any] = found if isinstance(found, dict) else {}
    for name in SCRIPT_ORDER:
        script = scripts.get(name)
        if isinstance(script, str):
            segments = re.split(r"&&|\|\||;|\|", script)
            return any(_DELEGATES.match(_strip_env(s)) for s in segments)
    return False


def _strip_env(segment: str) -> str:
    try:
        tokens = shlex.split(segment)
    except ValueError:
        return segment.strip()
    while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):
        tokens.pop(0)
    if tokens and tokens[0] in ("cross-env", "npx", "dotenv"):
        tokens = [t for t in tokens[1:] if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t)]
    return " ".join(tokens) + " "


def other_runner_calls(package: dict[str, Any]) -> list[RunnerCall]:
    """The runner calls of the test script besides the one `find_runner` picks."""
    main = find_runner(package)
    if main is None:
        return []
    found = package.get("scripts")
    scripts: dict[str, Any] = found if isinstance(found, dict) else {}
    for name in SCRIPT_ORDER:
        if isinstance(scripts.get(name), str):
            calls = _calls(scripts, name, depth=0)
            if calls:
                seen: list[RunnerCall] = []
                for c in calls:
                    if c != main and c not in seen:
                        seen.append(c)
                return seen
    return []


def _whole_suite(call: RunnerCall) -> bool:
    if call.runner in ("jest", "vitest"):
        return not call.paths  # their positional arguments are filters
    return all("*" in p or not re.search(r"\.[cm]?[jt]sx?$", p) for p in call.paths)


def _calls(scripts: dict[str, Any], name: str, depth: int) -> list[RunnerCall]:
    script = scripts.get(name)
    if not isinstance(script, str) or depth > 5:
        return []
    calls: list[RunnerCall] = []
    for segment in re.split(r"&&|\|\||;|\|", script):
        try:
            tokens = shlex.split(segment)
        except ValueError:
            continue
        env: dict[str, str] = {}
        while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):
            key, _, value = tokens.pop(0).partition("=")
            env[key] = value
        if not tokens:
            continue
        if tokens[0] in ("npm", "yarn", "pnpm") and len(tokens) > 1:
            explicit = tokens[1] in ("run", "run-script") and len(tokens) > 2
            sub, extra = (tokens[2], tokens[3:]) if explicit else (tokens[1], tokens[2:])
            for sub_call in _calls(scripts, sub, depth + 1):
                sub_call.env = {**env, **sub_call.env}
                sub_call.flags += [t for t in extra if t != "--"]
                calls.append(sub_call)
            continue
        call = _runner_call(tokens, env)
        if call:
            call.script = script
            calls.append(call)
    return calls


def _runner_call(tokens: list[str], env: dict[str, str]) -> RunnerCall | None:
    node_flags: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        base = Path(tok).name
        for suffix in (".js", ".cjs", ".mjs"):
            base = base.removesuffix(suffix)
        if base in _RUNNER_BINS and (i == 0 or tokens[i - 1] not in _NODE_VALUE_FLAGS):
            return _split_args(_RUNNER_BINS[base], tokens[i + 1 :], node_flags, env)
        if tokens[0] == "node" and tok.startswith("-"):
            node_flags.append(tok)
            if tok in _NODE_VALUE_FLAGS and i + 1 < len(tokens):
                node_flags.append(tokens[i + 1])
                i += 1
        elif re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tok) and i > 0 and tokens[0] == "cross-env":
            key, _, value = tok.partition("=")
            env[key] = value
        elif base not in _WRAPPERS and i == 0:
            return None  # some other program (eslint, tsc, karma, ...)
        i += 1
    return None


def _split_args(
    runner: str, args: list[str], node_flags: list[str], env: dict[str, str]
) -> RunnerCall:
    call = RunnerCall(runner=runner, node_flags=node_flags, env=dict(env))
    drop = _DROP_FLAGS[runner]
    if runner == "vitest" and args and args[0] in ("run", "watch", "dev"):
        args = args[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        takes_value = name in _VALUE_FLAGS and "=" not in arg and i + 1 < len(args)
        if name in drop or (name.startswith("--coverage") and runner != "mocha"):
            i += 2 if takes_value and name not in ("--coverage", "--bail", "-b") else 1
            continue
        if arg.startswith("-"):
            call.flags.append(arg)
            if takes_value:
                call.flags.append(args[i + 1])
                i += 1
        else:
            call.paths.append(arg)
        i += 1
    return call


_JS_CODE = re.compile(r"\.(?:[cm]?[jt]sx?|vue|svelte)$")


def ecosystem_of(paths: list[str]) -> str:
    """ "node" when most of a change's code files are JavaScript/TypeScript, else "python"."""
    code = [p for p in paths if "." in PurePosixPath(p).name]
    js = sum(1 for p in code if _JS_CODE.search(p))
    return "node" if code and js * 2 >= len(code) else "python"
