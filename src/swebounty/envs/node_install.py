"""How a Node environment's dependencies get installed: which commands to try, in what order,
and how each runs (the machine's npm configuration and downloads outside the registry off).

Lockfile first (`npm ci`, `yarn --frozen-lockfile`, `pnpm --frozen-lockfile`), then without
install scripts, then (npm) a plain install that keeps what the lockfile still allows; without
a lockfile, `npm install --before <cutoff>`, then the newest releases within the ranges.

The install scripts are the repository's code (its package.json's, and those of every package
its lockfile names: hostile, DESIGN.md principle 9). With a build sandbox (envs/buildbox.py)
and npm, yarn 1 or pnpm, an attempt runs in two steps: on the host, the download and unpacking,
which need the registry, with `--ignore-scripts`; then, in the build sandbox, what the install
would have run (`run_scripts`: with npm every dependency's install scripts through `npm
rebuild`, then the root's lifecycle scripts in `npm ci`'s order; see `scripts_plan`), the project folder the only writable place,
no network, no home, no process left. A failure there fails the attempt, as a failing script
did in one step, and the next attempt installs without scripts, as before. node-gyp finds the
headers of the Node it builds for in that Node's own folder (the registry's builds ship them),
as it cannot download them there.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

from swebounty import safefs
from swebounty.envs import buildbox
from swebounty.envs.failures import StepFailed
from swebounty.envs.node_versions import registry_env

log = logging.getLogger(__name__)
_warned = False

INSTALL_TIMEOUT_S = 1800
# Install scripts that fetch browsers or binaries from hosts other than the registry fail
# offline; none of them is needed to run unit tests.
_NO_DOWNLOADS = {
    "PUPPETEER_SKIP_DOWNLOAD": "1",
    "PUPPETEER_SKIP_CHROMIUM_DOWNLOAD": "1",
    "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    "CYPRESS_INSTALL_BINARY": "0",
    "ELECTRON_SKIP_BINARY_DOWNLOAD": "1",
    "HUSKY": "0",
    "HUSKY_SKIP_INSTALL": "1",
    "DISABLE_OPENCOLLECTIVE": "1",
    "ADBLOCK": "1",
    "CI": "1",
}
# The checkout's own configuration must not name a program for the install on the host to run
# (the repository's code, outside the build sandbox): yarn 1 runs a `yarn-path` from .yarnrc
# instead of itself, npm the `git` of a project .npmrc for git dependencies, npm 6 an
# `onload-script`. The environment outranks a project's .npmrc and .yarnrc.
_NO_PROJECT_PROGRAMS = {
    "YARN_IGNORE_PATH": "1",
    "npm_config_git": "git",
    "npm_config_onload_script": "",
    "npm_config_pnpmfile": ".pnpmfile.cjs",  # pnpm's hooks: its own name only (see host_hooks)
}


def install_attempts(
    manager: str, version: str, lockfile: str | None, cutoff: datetime | None
) -> list[tuple[list[str], str]]:
    """Install commands to try in order, each with what it means for the environment."""
    quiet = ["--no-audit", "--no-fund"] if manager == "npm" else []
    if manager == "yarn":
        if version.startswith("1."):
            base = ["install", "--frozen-lockfile", "--non-interactive", "--ignore-engines"]
            return [(base, ""), ([*base, "--ignore-scripts"], "installed without install scripts")]
        return [(["install", "--immutable"], "")]
    if manager == "pnpm":
        base = ["install", "--frozen-lockfile"]
        return [(base, ""), ([*base, "--ignore-scripts"], "installed without install scripts")]
    if lockfile:
        attempts = [(["ci", *quiet], ""), (["ci", *quiet, "--ignore-scripts"],
                                            "installed without install scripts")]  # fmt: skip
        # package.json and the lockfile out of step: npm ci refuses; npm install keeps the
        # lockfile's versions wherever the manifest still allows them.
        attempts.append((["install", *quiet], "lockfile out of step with package.json: "
                         "npm install kept what it could"))  # fmt: skip
        attempts.append((["install", *quiet, "--legacy-peer-deps"], "lockfile out of step with "
                         "package.json: npm install kept what it could, peer conflicts let pass"))  # fmt: skip
        return attempts
    before = cutoff.strftime("%Y-%m-%dT%H:%M:%SZ") if cutoff else None
    attempts = []
    if before:
        attempts.append(
            (["install", *quiet, f"--before={before}"], f"npm install --before {before}")
        )
    plain = ("the registry could not answer --before (its publish times are not the real "
             "ones): newest versions within package.json's ranges" if before
             else "no lockfile: newest versions within package.json's ranges")  # fmt: skip
    attempts.append((["install", *quiet], plain))
    # npm 7+ refuses peer dependency conflicts that the npm of older projects let pass
    # (ERESOLVE): install as that npm did.
    attempts.append((["install", *quiet, "--legacy-peer-deps"],
                     f"{plain}; peer dependency conflicts let pass (--legacy-peer-deps)"))  # fmt: skip
    return attempts


def run_install(
    argv: list[str], cwd: Path, node_bin: Path, root: Path, logf: Path, offline: bool,
    split: bool = False,
) -> bool:  # fmt: skip
    """Run one install attempt on the host. `split`: the install scripts run in the build
    sandbox (never here): the checkout's configuration names no program to run here, and pnpm
    copies from its store rather than hard-linking (a script in the sandbox, which is handed the
    tree, could otherwise change the store's files, every environment's)."""
    env = {
        **registry_env(),
        **_NO_DOWNLOADS,
        "PATH": f"{node_bin}:{cwd / 'node_modules' / '.bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(cwd.parent / "home"),
        "npm_config_cache": str(root / "npm-cache"),
        "YARN_CACHE_FOLDER": str(root / "npm-cache" / "yarn"),
        "YARN_ENABLE_GLOBAL_CACHE": "false",
        "YARN_NODE_LINKER": "node-modules",
        "YARN_ENABLE_TELEMETRY": "0",
        "npm_config_store_dir": str(root / "npm-cache" / "pnpm-store"),
        "COREPACK_ENABLE_STRICT": "0",
        "npm_config_engine_strict": "false",
        "npm_config_nodedir": str(node_headers(node_bin) or ""),
    }
    if split:
        env.update(_NO_PROJECT_PROGRAMS)
    if offline:
        env["npm_config_offline"] = "true"
        env["YARN_ENABLE_OFFLINE_MODE"] = "1"
    if split:
        env["npm_config_package_import_method"] = "copy"
    (cwd.parent / "home").mkdir(exist_ok=True)
    with logf.open("a") as log_fh:
        log_fh.write(f"$ {' '.join(argv)}\n")
        log_fh.flush()
        try:
            proc = subprocess.run(
                argv, cwd=cwd, env=env, stdout=log_fh, stderr=subprocess.STDOUT,
                timeout=INSTALL_TIMEOUT_S,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            log_fh.write(f"\n(timed out after {INSTALL_TIMEOUT_S} s)\n")
            return False
        log_fh.write(f"\n(exit {proc.returncode})\n")
    if proc.returncode != 0:
        # A failed attempt may leave half a tree behind; the next one starts clean.
        shutil.rmtree(cwd / "node_modules", ignore_errors=True)
    return proc.returncode == 0


# What `npm ci` and `npm install` run in the project itself once the dependencies are in place,
# in that order (npm 7+; npm 6 knew no pre/postprepare).
ROOT_EVENTS = ("preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare",
               "postprepare")  # fmt: skip
_NPM6_ROOT_EVENTS = ("preinstall", "install", "postinstall", "prepublish", "prepare")
_STRIP = (
    "const fs = require('fs'); const p = JSON.parse(fs.readFileSync('package.json', 'utf8'));"
    " for (const e of ['preinstall', 'install', 'postinstall']) if (p.scripts) delete p.scripts[e];"
    " fs.writeFileSync('package.json', JSON.stringify(p));"
)


def scripts_in_sandbox(manager: str, version: str) -> bool:
    """Whether this manager's install scripts run in the build sandbox, split from its
    download step (npm, yarn 1, pnpm; yarn 2+ still runs them within the install, on the
    host, which is said once per process; without a sandbox buildbox says it)."""
    global _warned
    if buildbox.sandbox() is None:
        return False
    if manager != "yarn" or version.startswith("1."):
        return True
    if not _warned:
        _warned = True
        log.warning(
            "yarn %s installs run the task repository's and its dependencies' install "
            "scripts on this host (npm's, yarn 1's and pnpm's run in the build sandbox): "
            "build only datasets you trust with yarn 2+ projects",
            version,
        )
    return False


def host_hooks(manager: str, project: Path) -> str | None:
    """What of the checkout's own code the download on the host still runs, said (a warning
    for the build's log): pnpm loads `.pnpmfile.cjs`, its install hooks, and a lockfile made
    with them refuses a frozen install without them (`--ignore-pnpmfile`)."""
    if manager == "pnpm" and os.path.lexists(project / ".pnpmfile.cjs"):
        return (
            "pnpm runs the checkout's .pnpmfile.cjs (its install hooks) on this host while it "
            "downloads the dependencies (the install scripts still run in the build sandbox): "
            "not contained yet"
        )
    return None


def without_scripts(argv: list[str]) -> list[str]:
    """The attempt's download step: the same command with no script run."""
    return argv if "--ignore-scripts" in argv else [*argv, "--ignore-scripts"]


def node_headers(node_bin: Path) -> Path | None:
    """The prefix holding the headers of the Node in `node_bin` (`include/node`), for node-gyp
    (`npm_config_nodedir`), so that native addons build without downloading them: the
    registry's Node builds ship them, a system Node has them when its -dev package is in."""
    prefix = node_bin.parent
    return prefix if (prefix / "include" / "node" / "common.gypi").is_file() else None


def root_scripts(project: Path) -> dict[str, str]:
    """The project's own package.json scripts (read without following a link)."""
    data = safefs.read_beneath(project, "package.json", 4 << 20)
    try:
        package = json.loads(data.decode("utf-8")) if data else {}
    except ValueError:
        return {}
    scripts = package.get("scripts") if isinstance(package, dict) else None
    return (
        {k: v for k, v in scripts.items() if isinstance(v, str)}
        if isinstance(scripts, dict)
        else {}
    )


def scripts_plan(
    cli: list[str], manager: str, version: str, argv: list[str], scripts: dict[str, str]
) -> str:
    """The shell script that runs, in a project installed by `argv` with --ignore-scripts,
    what the install would have run. yarn 1 has no rebuild: the same install again, from its
    cache (`--offline`), every package relinked (`--force`: else it skips the dependencies'
    scripts). pnpm's `rebuild` runs the dependencies' and then the root's. npm: `npm_plan`."""
    if manager == "yarn":
        again = [a for a in argv if a != "--ignore-scripts"]
        return "set -e\n" + shlex.join([*cli, *again, "--offline", "--force"])
    if manager == "pnpm":
        return "set -e\n" + shlex.join([*cli, "rebuild"])
    return npm_plan(cli, version, scripts)


def npm_plan(cli: list[str], version: str, scripts: dict[str, str]) -> str:
    """What npm's install would have run: every dependency's install scripts (`npm
    rebuild`), then the root's lifecycle events that package.json defines, in npm ci's order,
    each alone."""
    npm = shlex.join(cli)
    lines = ["set -e"]
    major = version.split(".")[0]
    if major.isdigit() and int(major) < 7:
        # npm 6 rebuilds the dependencies only; its `run X` runs preX and postX too.
        lines.append(f"{npm} rebuild")
        events = [e for e in _NPM6_ROOT_EVENTS if e in scripts]
        if "install" in scripts:
            events = [e for e in events if e not in ("preinstall", "postinstall")]
        lines += [f"{npm} run {e}" for e in events]
        return "\n".join(lines)
    # npm 7+: `rebuild` runs the root's pre/install/postinstall too, between the dependencies'
    # phases; npm ci runs them after every dependency's. So it runs without them here.
    own = [e for e in ROOT_EVENTS[:3] if e in scripts]
    if own:
        lines += [
            "cp package.json /tmp/.swebounty-package.json",
            f"{shlex.quote(cli[0])} -e {shlex.quote(_STRIP)}",
            f"{npm} rebuild || {{ code=$?; cp /tmp/.swebounty-package.json package.json; "
            "exit $code; }",
            "cp /tmp/.swebounty-package.json package.json",
        ]
    else:
        lines.append(f"{npm} rebuild")
    # `run X --ignore-scripts` runs X alone, without its pre and post scripts.
    lines += [f"{npm} run --ignore-scripts {e}" for e in ROOT_EVENTS if e in scripts]
    return "\n".join(lines)


def run_scripts(
    cli: list[str], manager: str, version: str, argv: list[str], cwd: Path, node_bin: Path,
    root: Path, logf: Path,
) -> bool:  # fmt: skip
    """Run in the build sandbox the install scripts an install with `--ignore-scripts` left
    out (`scripts_plan`); False when they fail (the caller then starts from a fresh copy)."""
    headers = node_headers(node_bin)
    env = {
        **_NO_DOWNLOADS,
        "PATH": f"{node_bin}:{cwd / 'node_modules' / '.bin'}:/usr/local/bin:/usr/bin:/bin",
        # No machine configuration, no registry, a cache of its own that dies with the step.
        "npm_config_userconfig": "/tmp/.npmrc-user",
        "npm_config_globalconfig": "/tmp/.npmrc-global",
        "npm_config_cache": "/tmp/.npm",
        "npm_config_offline": "true",
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        "npm_config_engine_strict": "false",
        "npm_config_nodedir": str(headers or ""),
        "COREPACK_ENABLE_STRICT": "0",
        **_NO_PROJECT_PROGRAMS,  # the same yarn as the download's
        # yarn 1 installs again from its cache, pnpm finds its store: both read-only here.
        "YARN_CACHE_FOLDER": str(root / "npm-cache" / "yarn"),
        "npm_config_store_dir": str(root / "npm-cache" / "pnpm-store"),
        "npm_config_package_import_method": "copy",
        "npm_config_side_effects_cache": "false",
    }
    # The Node and the package manager, read-only (a system Node is under /usr, seen anyway).
    reads = [node_bin.parent, Path(cli[-1]).parents[1]]
    if manager == "yarn":
        reads.append(root / "npm-cache" / "yarn")
    if manager == "pnpm":
        reads.append(root / "npm-cache" / "pnpm-store")
    plan = scripts_plan(cli, manager, version, argv, root_scripts(cwd))
    argv = ["/bin/sh", "-c", plan]
    try:
        buildbox.run_step("install scripts", argv, logf, workdir=cwd, reads=reads, env=env,
                          timeout=INSTALL_TIMEOUT_S, limit_address_space=False)  # fmt: skip
        ok = True
    except StepFailed as exc:
        with logf.open("a") as log_fh:
            log_fh.write(f"\n(the install scripts failed in the build sandbox: {exc.kind})\n")
        ok = False
    finally:
        buildbox.reclaim(cwd)
    return ok


def drop_escaping_links(root: Path) -> list[str]:
    """Remove every link under `root` whose target is absolute or leads out of `root`; return
    them, relative. Installs link only within the project (`.bin`, pnpm's `.pnpm`, a
    monorepo's packages); a link out of it is an install script's (they ran in the build
    sandbox, where the host's files it names were not), and the host and the tests' sandbox
    (which mounts `node_modules`) would follow it to the host's files."""
    dropped: list[str] = []
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                continue
            target = os.readlink(path)
            inside = os.path.normpath(os.path.join(os.path.relpath(dirpath, root), target))
            if os.path.isabs(target) or inside == ".." or inside.startswith("../"):
                os.unlink(path)
                dropped.append(os.path.relpath(path, root))
    return dropped


def fresh_copy(workspace: Path, build: Path) -> None:
    """The whole checkout (the root package's own install scripts may need its files) at
    `build`, whatever was there removed without following a link, and without the links the
    checkout holds out of the project (the install on the host would write through them)."""
    safefs.remove_tree(build)
    shutil.copytree(workspace, build, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    drop_escaping_links(build)
