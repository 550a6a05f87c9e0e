"""How a JavaScript/TypeScript project runs its tests: the runner its `test` script calls.

The script is followed through `npm run X` (and `yarn X`, `pnpm X`, `npm-run-all`/`run-s`/
`run-p` with their globs) to the runner's call (Jest, Vitest, Mocha, Jasmine or `node --test`),
with node's own flags, the runner's flags, the paths it names and the variables set on the
command line. The harness sets its own reporting flags (`node/runner.py`). A script that is a
program of the project's own (`node Makefile.js test`) is read for the runner it ends in; the
call found so may run named test files only, never a default suite the script would not run.
What the script runs before its runner (`pretest`, `npm run build && mocha`) are its build
steps (`build_steps`), linters and type checks aside.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swebounty import safefs

RUNNERS = ("jest", "vitest", "mocha", "jasmine")
_RUNNER_BINS = {"jest": "jest", "vitest": "vitest", "mocha": "mocha", "_mocha": "mocha",
                "jasmine": "jasmine"}  # fmt: skip
NODE_TEST = "nodetest"  # node's built-in runner, `node --test`
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
    "jasmine": {"--reporter", "--color", "--no-color", "--fail-fast", "--parallel", "--verbose"},
    NODE_TEST: {"--test", "--test-reporter", "--test-reporter-destination", "--watch",
                "--experimental-test-coverage", "--test-only"},
}  # fmt: skip
# Flags that take a value in the next argument (so the value is not taken for a path).
_VALUE_FLAGS = {
    "--config", "-c", "--require", "-r", "--timeout", "-t", "--ui", "-u", "--reporter", "-R",
    "--reporter-options", "-O", "--file", "--extension", "--spec", "--ignore", "--grep", "-g",
    "--slow", "-s", "--outputFile", "--reporters", "--testTimeout", "--maxWorkers", "-w",
    "--testPathIgnorePatterns", "--setupFiles", "--environment", "--env", "--project",
    "--rootDir", "--roots", "--selectProjects", "--compilers", "--opts", "--dir", "--root",
    "--loader", "--import", "--pool", "--jobs", "-j", "--retries", "--test-reporter",
    "--test-reporter-destination", "--test-name-pattern", "--test-concurrency",
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
    # Found in a program of the project's own, not on the script's command line: it may run
    # test files the harness names, never a default suite of its own choosing.
    files_only: bool = False


# ---------------------------------------------------------------------------- test runner

SCRIPT_ORDER = ("test", "test:unit", "unit", "test:node", "test:mocha", "test:jest",
                 "test:vitest", "test:ci", "test:all")  # fmt: skip


def find_runner(package: dict[str, Any], workspace: Path | None = None) -> RunnerCall | None:
    """The runner call of the project's test script (following `npm run X`); for a script
    that is a program of its own, the runner that program names among the dependencies
    (`files_only`); with no test script, a runner among the dependencies, called plainly."""
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
    installed = [r for r in RUNNERS if r in deps]
    script = test_script(package)
    if script is None:
        return RunnerCall(runner=installed[0], script=f"({installed[0]} in dependencies)") if (
            installed
        ) else None  # fmt: skip
    text = _program_text(script, workspace)
    named = [r for r in installed if re.search(rf"\b{r}\b", text, re.IGNORECASE)]
    if len(named) == 1 or (not named and len(installed) == 1):
        return RunnerCall(runner=(named or installed)[0], script=script, files_only=True)
    return None


def test_script(package: dict[str, Any]) -> str | None:
    """The project's test script (the first of SCRIPT_ORDER it has), if any."""
    found = package.get("scripts")
    scripts: dict[str, Any] = found if isinstance(found, dict) else {}
    return next((scripts[n] for n in SCRIPT_ORDER if isinstance(scripts.get(n), str)), None)


def _program_text(script: str, workspace: Path | None, max_bytes: int = 1 << 20) -> str:
    """The script and the text of the project's own files it runs (`node Makefile.js test`:
    Makefile.js), where the runner it ends in is named."""
    texts = [script]
    for token in re.findall(r"[\w./-]+\.[cm]?js\b", script):
        if workspace is None or token.startswith("/") or ".." in token.split("/"):
            continue
        data = safefs.read_beneath(workspace, token, max_bytes)  # never through a link
        if data is not None:
            texts.append(data.decode("utf-8", errors="replace"))
    return "\n".join(texts)


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
        if Path(tokens[0]).name in _RUN_ALL:
            for sub in _run_all_scripts(scripts, tokens[1:]):
                for sub_call in _calls(scripts, sub, depth + 1):
                    sub_call.env = {**env, **sub_call.env}
                    calls.append(sub_call)
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


_RUN_ALL = {"npm-run-all", "run-s", "run-p", "npm-run-all2"}
# npm-run-all's options that take a value in the next argument.
_RUN_ALL_VALUE_FLAGS = {"--npm-path", "--max-parallel", "-r", "--race"}


def _run_all_scripts(scripts: dict[str, Any], args: list[str]) -> list[str]:
    """The scripts `npm-run-all`/`run-s`/`run-p` runs, its globs expanded in the order the
    project lists its scripts (`test:*` is every `test:X`; `**` crosses colons too)."""
    names: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            break
        if arg.startswith("-"):
            i += 2 if arg in _RUN_ALL_VALUE_FLAGS else 1
            continue
        pattern = re.escape(arg).replace(r"\*\*", ".+").replace(r"\*", "[^:]+")
        for name in scripts:
            if re.fullmatch(pattern, name) and name not in names:
                names.append(name)
        i += 1
    return names


def _runner_call(tokens: list[str], env: dict[str, str]) -> RunnerCall | None:
    if tokens[0] == "node" and "--test" in tokens:
        return _split_args(NODE_TEST, tokens[1:], [], env)
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


# ---------------------------------------------------------------------------- build steps

# Programs that check code rather than build it: a test run does not need them.
_CHECKERS = {
    "eslint", "tslint", "prettier", "standard", "semistandard", "xo", "jshint", "jscs",
    "stylelint", "markdownlint", "dtslint", "tsd", "depcheck", "publint", "attw", "biome",
    "oxlint", "knip", "commitlint", "lint-staged", "size-limit", "check-dts", "flow",
}  # fmt: skip
# Programs that build nothing (dayjs's test-tz script prints the `date` first).
_NO_OPS = {"echo", "date", "true", "clear", "printf", "sleep", "cat"}
_CHECK_SCRIPT = re.compile(r"lint|format|prettier|typecheck|type-check|types?$|check|flow", re.I)


def build_steps(package: dict[str, Any]) -> list[str]:
    """What `npm test` runs before the tests themselves, as shell commands: the `pretest`
    script, then the test script's steps before its first runner call (`npm run build &&
    mocha`), through `npm run X`; linters, formatters and type checks left out."""
    found = package.get("scripts")
    scripts: dict[str, Any] = found if isinstance(found, dict) else {}
    steps: list[str] = []
    if isinstance(scripts.get("pretest"), str):
        steps += _steps(scripts, "pretest", 0)[0]
    name = next((n for n in SCRIPT_ORDER if isinstance(scripts.get(n), str)), None)
    if name is not None:
        steps += [s for s in _steps(scripts, name, 0)[0] if s not in steps]
    return steps


def _steps(scripts: dict[str, Any], name: str, depth: int) -> tuple[list[str], bool]:
    """(the build steps of script `name` before its first runner call, whether it reached
    one)."""
    script = scripts.get(name)
    if not isinstance(script, str) or depth > 5:
        return [], False
    steps: list[str] = []
    for segment in re.split(r"&&|\|\||;|\|", script):
        try:
            tokens = [t for t in shlex.split(segment) if t]
        except ValueError:
            continue
        program = _strip_env(" ".join(shlex.quote(t) for t in tokens)).split()
        if not program:
            continue
        if _runner_call(program, {}) is not None:
            return steps, True
        subs: list[str] = []
        if Path(program[0]).name in _RUN_ALL:
            subs = _run_all_scripts(scripts, program[1:])
        elif program[0] in ("npm", "yarn", "pnpm") and len(program) > 1:
            explicit = program[1] in ("run", "run-script") and len(program) > 2
            subs = [program[2] if explicit else program[1]]
        if subs:
            for sub in subs:
                if _calls(scripts, sub, depth + 1):
                    sub_steps, reached = _steps(scripts, sub, depth + 1)
                    steps += sub_steps
                    if reached:
                        return steps, True
                elif sub in scripts and not _CHECK_SCRIPT.search(sub) and sub != "pretest":
                    steps.append(script_step(scripts, sub))
            continue
        base = Path(program[0]).name
        if base in _CHECKERS | _NO_OPS or (base == "tsc" and "--noEmit" in program):
            continue
        steps.append(segment.strip())
    return steps, False


# `npm run X`, `yarn X`, `pnpm run X` in a script's text: X is run as npm would run it.
_RUN_SCRIPT = re.compile(r"\b(?:npm|pnpm|yarn)\s+(?:run(?:-script)?\s+)?([\w:.@/-]+)")


def script_step(scripts: dict[str, Any], name: str) -> str:
    """Script `name` as one shell command, run without npm (whose own release may not run on
    the task's Node: npm 11 refuses Node 14): its `pre`/`post` scripts around it and the
    `npm run Y` in it replaced by Y's text; a comment says which script it is."""
    return f"{_script_text(scripts, name, 0)}  # npm run {name}"


def _script_text(scripts: dict[str, Any], name: str, depth: int) -> str:
    parts = [
        scripts[n] for n in (f"pre{name}", name, f"post{name}") if isinstance(scripts.get(n), str)
    ]
    text = " && ".join(f"( {part} )" for part in parts)
    if depth >= 5:
        return text

    def inline(m: re.Match[str]) -> str:
        sub = m[1]
        return f"( {_script_text(scripts, sub, depth + 1)} )" if sub in scripts else m[0]

    return _RUN_SCRIPT.sub(inline, text)
