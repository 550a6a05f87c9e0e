"""What a JavaScript/TypeScript repository says about itself at its base commit.

Node version constraints (`.nvmrc`, `.node-version`, `engines.node`, the CI matrix), the
package manager (`packageManager`, the lockfile's kind), the lockfile, and the test runner the
project's own `test` script uses (read by `node_scripts`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from swebounty.envs.node_scripts import RunnerCall, find_runner, other_runner_calls
from swebounty.envs.node_versions import Constraints, normalize_pin
from swebounty.envs.projectfiles import MAX_CONFIG_BYTES, hash_file, read_config, read_head

LOCKFILES = {
    "package-lock.json": "npm",
    "npm-shrinkwrap.json": "npm",
    "yarn.lock": "yarn",
    "pnpm-lock.yaml": "pnpm",
}


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
    text = read_config(path, workspace, errors="strict")
    if text is None:
        raise ValueError(
            f"{path} is larger than {MAX_CONFIG_BYTES} bytes, or a link out of the repository: "
            "not read"
        )
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("package.json is not a JSON object")
    return data


def read_project(workspace: Path) -> NodeProject:
    package = read_package(workspace)
    why: list[str] = []
    pinned = None
    for name in (".nvmrc", ".node-version"):
        text = read_config(workspace / name, workspace)
        if text is not None:
            lines = text.strip().splitlines()
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
    lock_version = _lockfile_version(workspace, lockfile) if lockfile else None
    return NodeProject(
        package=package,
        constraints=Constraints(pinned=pinned, engines=engine, matrix=tuple(matrix)),
        manager=manager,
        manager_version=manager_version,
        manager_hash=manager_hash,
        lockfile=lockfile,
        lockfile_version=lock_version,
        lock_digest=_lock_digest(workspace, package, lockfile),
        runner=find_runner(package, workspace),
        other_calls=other_runner_calls(package),
        why=why,
    )


def _lockfile_version(workspace: Path, lockfile: str) -> int | None:
    text = read_head(workspace / lockfile, workspace, 4000)
    m = re.search(r'"lockfileVersion"\s*:\s*(\d+)|^lockfileVersion:\s*\'?(\d+)', text, re.M)
    return int(m[1] or m[2]) if m else None


def _lock_digest(workspace: Path, package: dict[str, Any], lockfile: str | None) -> str:
    h = hashlib.sha256()
    deps = {k: package.get(k) for k in ("dependencies", "devDependencies", "optionalDependencies",
                                        "peerDependencies", "overrides", "resolutions",
                                        "workspaces", "pnpm")}  # fmt: skip
    h.update(json.dumps(deps, sort_keys=True).encode())
    for name in ([lockfile] if lockfile else []) + [".npmrc", ".yarnrc", ".yarnrc.yml"]:
        # The lockfile is megabytes (hashed in chunks); a missing file, or a link out of the
        # repository, adds nothing, as a missing one always did.
        hash_file(h, workspace / name, workspace, prefix=name.encode() + b"\0")
    return h.hexdigest()[:16]


_MATRIX_KEY = re.compile(r"^\s*-?\s*['\"]?(node[-_]?(?:version|js)?|node)['\"]?\s*:\s*(.*)$", re.I)


def ci_matrix(workspace: Path) -> list[int]:
    """Node majors named in the CI configuration (GitHub workflows, Travis), newest last."""
    files = sorted((workspace / ".github" / "workflows").glob("*.y*ml"))
    files += [workspace / ".travis.yml"]
    majors: set[int] = set()
    for f in files:
        text = read_config(f, workspace)
        if text is None:
            continue
        lines = text.splitlines()
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


_JS_CODE = re.compile(r"\.(?:[cm]?[jt]sx?|vue|svelte)$")


def ecosystem_of(paths: list[str]) -> str:
    """ "node" when most of a change's code files are JavaScript/TypeScript, else "python"."""
    code = [p for p in paths if "." in PurePosixPath(p).name]
    js = sum(1 for p in code if _JS_CODE.search(p))
    return "node" if code and js * 2 >= len(code) else "python"
