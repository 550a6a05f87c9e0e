"""What runs before a Node task's tests: the build steps its `npm test` would run first.

`pretest`, the test script's steps before its runner (`npm run build && mocha`), or — when the
script names none but the tests import what only the build makes (`require('../build')`, a
package `main` in `dist/` that the checkout lacks) — the project's `build` script. They run in
the sandbox like the tests, from the base commit's scripts; their output goes to the logs. A
step that fails is logged, not fatal: the tests then fail as they would after `npm test`.
The files the tests are made of are checked after the steps and put back if a step changed
them. And the words for a project whose runner cannot be found or cannot run what is needed.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from swebounty import safefs
from swebounty.envs.node_scripts import RunnerCall, build_steps, script_step, test_script
from swebounty.node.buildcache import build_key, keep, listing, restore
from swebounty.sandbox.base import Mount, Policy

log = logging.getLogger(__name__)

EvalContext = Any  # evalcontext.EvalContext (imported by the modules that import this one)

_IMPORT = re.compile(
    r"""(?:require\(\s*|\bfrom\s+|\bimport\s*\(\s*)['"](\.{1,2}(?:/[^'"\s]*)?)['"]"""
)
_EXTENSIONS = (".js", ".cjs", ".mjs", ".jsx", ".ts", ".cts", ".mts", ".tsx", ".d.ts", ".json")
_RESOLVE = ("", *_EXTENSIONS, *(f"/index{e}" for e in _EXTENSIONS), "/package.json")
_MAX_TEST_FILE = 1 << 20


def steps_for(package: dict[str, Any], workspace: Path, test_files: list[str]) -> list[str]:
    """The shell commands to run before the tests (see the module docstring)."""
    steps = build_steps(package)
    scripts = package.get("scripts")
    if steps or not isinstance(scripts, dict) or not isinstance(scripts.get("build"), str):
        return steps
    return [script_step(scripts, "build")] if needs_build(package, workspace, test_files) else []


def needs_build(package: dict[str, Any], workspace: Path, test_files: list[str]) -> bool:
    """Whether the tests import what the checkout does not hold (built output the build
    script makes): a relative import of a test file that resolves to nothing, or the package
    itself (`require('..')`, its own name) when its `main` is not in the checkout. A `main`
    that is missing but that no test imports does not count (dayjs's is its minified build)."""
    main = package.get("main")
    main_missing = isinstance(main, str) and bool(main.strip())
    main_missing = main_missing and not _resolves(workspace, str(main).strip())
    name = package.get("name")
    for rel in test_files:
        try:
            data = safefs.read_beneath(workspace, rel, _MAX_TEST_FILE)
        except OSError:
            continue
        text = data.decode("utf-8", errors="replace") if data else ""
        for target in _IMPORT.findall(text):
            path = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
            if path == "." and main_missing:
                return True
            if path != "." and not _resolves(workspace, path):
                return True
        if main_missing and isinstance(name, str) and _imports_package(text, name):
            return True
    return False


def _imports_package(text: str, name: str) -> bool:
    quoted = re.escape(name)
    return bool(
        re.search(rf"""(?:require\(\s*|\bfrom\s+|\bimport\s*\(\s*)['"]{quoted}['"]""", text)
    )


def _resolves(workspace: Path, rel: str) -> bool:
    rel = posixpath.normpath(rel.removeprefix("./"))
    if rel.startswith("..") or rel.startswith("/"):
        return True  # outside the checkout: not the build's to make
    # TypeScript's ESM style names the output (`./a.js` for `./a.ts`).
    stem = re.sub(r"\.[cm]?jsx?$", "", rel)
    for candidate in [rel + suffix for suffix in _RESOLVE] + [stem + e for e in _EXTENSIONS]:
        try:
            if safefs.exists_beneath(workspace, candidate):
                return True
        except OSError:
            continue
    return False


def run_build_steps(
    ctx: EvalContext,
    package: dict[str, Any],
    workspace: Path,
    test_files: list[str],
    guarded: list[str],
    mounts: list[Mount],
    policy: Policy,
    scratch: Path,
    tree: str,
) -> tuple[str, list[str]]:
    """Run the build steps in the sandbox: (their log, the `guarded` files a step changed and
    that were put back as they were). `tree`: what the workspace's files are a function of
    (base commit, patches, environment): the same tree's build is reused (buildcache.py)."""
    steps = steps_for(package, workspace, test_files)
    if not steps:
        return "", []
    cache, key = ctx.cache_dir / "node" / "builds", build_key(tree, *steps)
    reused = restore(cache, key, workspace)
    if reused is not None:
        return f"{len(steps)} build step(s) of this tree ran before: {reused} file(s) reused", []
    files_before = listing(workspace)
    before = {rel: _read(workspace, rel) for rel in guarded}
    outputs, ok = [], True
    for step in steps:
        with ctx.lease() as sandbox:
            sandbox.prepare_workdir(scratch)
            run = sandbox.run(["/bin/sh", "-c", step], workdir=workspace, mounts=mounts,
                              policy=policy)  # fmt: skip
        outputs.append(f"$ {step}\n(exit code {run.returncode} after {run.seconds:.1f} s)\n"
                       f"{run.stdout}\n--- stderr ---\n{run.stderr}")  # fmt: skip
        if run.returncode != 0 or run.timed_out:
            ok = False
            log.warning("build step %r failed (exit code %s)", step, run.returncode)
    restored = []
    for rel, data in before.items():
        if _read(workspace, rel) != data:
            if data is None:
                safefs.remove_beneath(workspace, rel)
            else:
                safefs.write_beneath(workspace, rel, data)
            restored.append(f"{rel} (after the build steps)")
    if ok and not restored:  # only a build that went well, and touched no test, is kept
        cache.mkdir(parents=True, exist_ok=True)
        keep(cache, key, workspace, files_before)
    return "\n\n".join(outputs), restored


def _read(workspace: Path, rel: str) -> bytes | None:
    try:
        return safefs.read_beneath(workspace, rel, 64 << 20)
    except OSError:
        return None


def no_runner(package: dict[str, Any]) -> str:
    """Why no runner call could be planned, naming the project's test script."""
    known = "jest, vitest, mocha, jasmine, node --test"
    script = test_script(package)
    if script is None:
        return (f"no test runner found ({known}): the project has no test script, its "
                "dependencies name none, and no workspace package holds the test files")  # fmt: skip
    return (f"the project's test script {script!r} runs no test runner swebounty knows ({known}), "
            "not even through the files it runs, and its dependencies name none it could run "
            "the test files with")  # fmt: skip


def unnamed_tests(call: RunnerCall, files: list[str]) -> str:
    """Why a runner found inside a script of the project's own cannot run the expected tests."""
    have = f"the test files {', '.join(files)}" if files else "no test file"
    return (f"the project's test script {call.script!r} is a program of its own; swebounty runs "
            f"{call.runner} (which it names) on the test files it can name, but some expected "
            f"test ids name no file (it has {have}), and {call.runner}'s default suite is not "
            "what the script runs")  # fmt: skip
