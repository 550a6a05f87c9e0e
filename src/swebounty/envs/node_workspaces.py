"""Monorepos: which workspace package runs a task's tests, and every package's `node_modules`.

npm, yarn and pnpm workspaces install one `node_modules` at the root, one in each package that
needs versions of its own, and links from the root's to the packages themselves
(`node_modules/@scope/pkg -> ../packages/pkg`, pnpm's `packages/a/node_modules/b -> ../../b`).
A root test script that hands the work to the packages (`npm run test --workspaces`, `pnpm -r
test`, `lerna run test`, `yarn workspaces run test`, `turbo run test`) names no runner: the
tests then run as the package holding them runs them, from its directory, with its own runner
and flags (`packages_of_tests`).

An environment keeps the root's `node_modules` and each package's own (`keep_nested_modules`).
A task's workspace gets them back as directories of links (`link_modules`): links to the
environment's read-only entries, and the install's own relative links copied as they are, so
that a link to a workspace package lands on the task's (patched) copy of that package, not on
the tree the environment was installed from.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from swebounty import safefs
from swebounty.envs.node_scripts import RunnerCall, delegates_to_workspaces, find_runner

NESTED = "nested"  # CACHE/node/envs/<key>/nested/<package dir>/node_modules
_MAX_DEPTH = 4  # packages/<group>/<name>: how deep a workspace package may sit


def is_monorepo(workspace: Path, package: dict[str, Any]) -> bool:
    """npm/yarn `workspaces` in package.json, or pnpm's `pnpm-workspace.yaml`."""
    return bool(package.get("workspaces")) or (workspace / "pnpm-workspace.yaml").is_file()


def package_runner(workspace: Path, rel: str) -> RunnerCall | None:
    """The runner call of the package at `workspace/rel` (read without following links)."""
    data = safefs.read_beneath(workspace, f"{rel}/package.json", 4 << 20)
    if data is None:
        return None
    try:
        package = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(package, dict) or delegates_to_workspaces(package):
        return None
    return find_runner(package)


def packages_of_tests(workspace: Path, files: list[str]) -> dict[str, tuple[RunnerCall, list[str]]]:
    """For each workspace package holding some of `files`: its runner call and those files,
    relative to it. Files in no package with a runner of its own are left out."""
    found: dict[str, tuple[RunnerCall, list[str]]] = {}
    calls: dict[str, RunnerCall | None] = {}
    for f in files:
        parents = [p.as_posix() for p in PurePosixPath(f).parents if p.as_posix() != "."]
        for rel in parents:
            if rel not in calls:
                calls[rel] = package_runner(workspace, rel)
            call = calls[rel]
            if call is not None:
                found.setdefault(rel, (call, []))[1].append(f[len(rel) + 1 :])
                break
    return found


def workspace_packages(workspace: Path) -> dict[str, RunnerCall]:
    """Every package below the root (not in node_modules) whose own test script runs a
    runner, by directory. Links are not followed: the tree may hold what a patch planted."""
    found: dict[str, RunnerCall] = {}
    for dirpath, dirs, files in os.walk(workspace):
        rel = Path(dirpath).relative_to(workspace)
        dirs[:] = sorted(
            d for d in dirs if d not in ("node_modules", ".git") and len(rel.parts) < _MAX_DEPTH
        )
        if rel.parts and "package.json" in files:
            call = package_runner(workspace, rel.as_posix())
            if call is not None:
                found[rel.as_posix()] = call
    return found


def plan_package_runs(
    workspace: Path,
    test_files: list[str],
    patch_files: list[str],
    expected: list[str],
    file_of: Callable[[str], str | None],
) -> tuple[list[tuple[RunnerCall, list[str] | None, str]], list[str]]:
    """How a monorepo whose root hands its tests to the packages runs a task's tests: per
    package (runner call, files relative to it or None for its whole suite, its directory),
    and the expected ids as paths from the root.

    Ids may name files from the root (`packages/app/test/a.test.js`) or as the package's own
    runner names them (`test/a.test.js`: Multi-SWE-bench's ids of insomnia, read from each
    package's log): such an id belongs to the package where that file is, the packages the
    test patch changes first (its test files, else any file: a snapshot). Ids that name no
    file run those packages' whole suites.
    """
    touched = packages_of_tests(workspace, test_files or patch_files)
    calls = {**workspace_packages(workspace), **{r: call for r, (call, _) in touched.items()}}
    order = [*touched, *(r for r in calls if r not in touched)]
    runs: dict[str, set[str]] = {
        r: set(local if test_files else []) for r, (_, local) in touched.items()
    }
    whole = False
    mapped: list[str] = []
    for test_id in expected:
        name = file_of(test_id) or ""
        owner = next((r for r in order if name.startswith(r + "/")), None)
        if owner is not None:
            local = name[len(owner) + 1 :]
            mapped.append(test_id)
        else:
            local = name
            owner = next(
                (r for r in order if name and safefs.exists_beneath(workspace, f"{r}/{name}")), None
            )
            mapped.append(f"{owner}/{test_id}" if owner else test_id)
        if owner is None:
            whole = True
        else:
            runs.setdefault(owner, set()).add(local)
    plan = [(calls[r], None if whole and r in touched else sorted(files) or None, r)
            for r, files in runs.items()]  # fmt: skip
    return plan, mapped


# ---------------------------------------------------------------------------- node_modules


def keep_nested_modules(build: Path, env_dir: Path) -> list[str]:
    """Move the packages' own `node_modules` out of an install tree into the environment;
    return the package directories that had one."""
    kept: list[str] = []
    for dirpath, dirs, _files in os.walk(build):
        rel = Path(dirpath).relative_to(build)
        if "node_modules" in dirs and rel.parts:
            os.renames(Path(dirpath) / "node_modules", env_dir / NESTED / rel / "node_modules")
            kept.append(rel.as_posix())
        dirs[:] = [d for d in dirs if d not in ("node_modules", ".git")]
        if len(rel.parts) >= _MAX_DEPTH:
            dirs.clear()
    return sorted(kept)


def nested_packages(env_dir: Path) -> list[str]:
    """The package directories whose own `node_modules` the environment kept."""
    root = env_dir / NESTED
    if not root.is_dir():
        return []
    return sorted(p.parent.relative_to(root).as_posix() for p in root.rglob("node_modules")
                  if p.is_dir() and "node_modules" not in p.parent.relative_to(root).parts)  # fmt: skip


def has_project_links(modules: Path) -> bool:
    """Whether the install linked packages of the project itself (links leaving node_modules)."""
    for entry in _entries(modules):
        if entry.is_symlink():
            target = os.readlink(entry.path)
            depth = len(Path(entry.path).relative_to(modules).parts) - 1
            if not os.path.isabs(target) and target.startswith("../" * (depth + 1)):
                return True
    return False


def _entries(modules: Path) -> list[os.DirEntry[str]]:
    out: list[os.DirEntry[str]] = []
    with os.scandir(modules) as it:
        for entry in it:
            if entry.name.startswith("@") and entry.is_dir(follow_symlinks=False):
                with os.scandir(entry.path) as scoped:
                    out.extend(scoped)
            else:
                out.append(entry)
    return out


def link_modules(source: Path, workspace: Path, rel: str) -> bool:
    """Make `workspace/rel/node_modules` a directory of links to `source`'s entries (the
    install's own relative links copied as they are). Nothing is done where `rel` is not a
    real directory of the workspace or a `node_modules` is already there (the patch's)."""
    parts = [*(p for p in rel.split("/") if p), "node_modules"]
    try:
        with safefs.open_dir(workspace, parts[:-1]) as parent:
            try:
                os.mkdir("node_modules", 0o755, dir_fd=parent)
            except FileExistsError:
                return False
    except (OSError, safefs.UnsafePathError) as exc:
        if isinstance(exc, OSError) and exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            raise
        return False
    with safefs.open_dir(workspace, parts) as dest, os.scandir(source) as it:
        for entry in it:
            if entry.name.startswith("@") and entry.is_dir(follow_symlinks=False):
                os.mkdir(entry.name, 0o755, dir_fd=dest)
                scope_parts = [*parts, entry.name]
                with safefs.open_dir(workspace, scope_parts) as scope, os.scandir(entry) as items:
                    for item in items:
                        _link_entry(item, scope)
            else:
                _link_entry(entry, dest)
    return True


def _link_entry(entry: os.DirEntry[str], dir_fd: int) -> None:
    target = os.readlink(entry.path) if entry.is_symlink() else entry.path
    if entry.is_symlink() and os.path.isabs(target):
        target = os.path.realpath(entry.path)
    os.symlink(target, entry.name, dir_fd=dir_fd)
