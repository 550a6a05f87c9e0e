"""A hostile Node repository's install scripts, run while its environment is built.

A dataset names the repository, so its package.json scripts and those of every package its
manifest names are hostile (principle 9). This project's own lifecycle scripts (preinstall,
install, postinstall, prepare) and those of its dependency (a local tarball: no registry) try
to (a) write outside the project: the user's home, the swebounty cache and npm's download
cache; (b) read a host secret and ship it in `node_modules` (every task's tests load it), or
through the lockfile the build keeps (replaced by a link to the secret), or through links
in `node_modules` to the host's files (the host reads it, the tests' sandbox mounts it); (c)
leave a process
running. Run on the host (main before the build sandbox took them), each succeeds; with the
download on the host and the scripts in the build sandbox, none does, and the scripts still
run, in the order the manager's install runs them: npm (the machine's, no registry needed),
yarn 1 and pnpm (fetched from the registry once). An honest dependency's native addon (node-gyp) still builds there,
offline, with the headers of the Node it builds for.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import uuid
from pathlib import Path

import pytest

from security.leftovers import kill_marked, survivors
from swebounty.envs.node_build import NodeCache, NodeSpec
from swebounty.sandbox import bwrap_available

OK, WHY = bwrap_available()
NODE, NPM = shutil.which("node"), shutil.which("npm")
pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(not OK, reason=f"no bubblewrap sandbox: {WHY}"),
    pytest.mark.skipif(NODE is None or NPM is None, reason="no node and npm on this machine"),
]

ATTACK = """\
const fs = require('fs'), path = require('path'), cp = require('child_process');
const where = process.argv[2];
const modules = path.join(process.env.INIT_CWD || process.cwd(), 'node_modules');
fs.appendFileSync(path.join(modules, '.order'), where + '\\n');
for (const target of TARGETS) {
  try { fs.writeFileSync(target + '.' + where, 'written by ' + where); } catch (e) {}
}
let stolen;
try { stolen = fs.readFileSync(SECRET, 'utf8'); } catch (e) { stolen = 'nothing: ' + e.code; }
fs.writeFileSync(path.join(modules, 'stolen-' + where + '.js'),
                 'module.exports = ' + JSON.stringify(stolen) + ';\\n');
if (where === 'root-postinstall') {  // the lockfile the build keeps: a link to the secret
  for (const lock of ['package-lock.json', 'yarn.lock', 'pnpm-lock.yaml']) {
    try { fs.rmSync(lock); fs.symlinkSync(SECRET, lock); } catch (e) {}
  }
  // node_modules, which the host reads and the tests' sandbox mounts: links to host files
  try { fs.symlinkSync(path.dirname(SECRET), path.join(modules, 'planted')); } catch (e) {}
  try { fs.symlinkSync('../'.repeat(20) + SECRET.slice(1), path.join(modules, 'planted-rel')); }
  catch (e) {}
}
cp.spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600000)', MARKER],
         {detached: true, stdio: 'ignore'}).unref();
"""
# yarn 1 runs a `yarn-path` of the checkout's .yarnrc in its own place: on the host, for the
# download, unless told not to.
YARN_PATH = """\
const fs = require('fs');
for (const target of TARGETS) {
  try { fs.writeFileSync(target + '.yarn-path', 'written by yarn-path'); } catch (e) {}
}
process.exit(1);
"""
DEP_EVENTS = ("preinstall", "install", "postinstall")
ROOT_EVENTS = ("preinstall", "install", "postinstall", "prepare")
_DEPS = [f"dep-{e}" for e in DEP_EVENTS]
_ROOT = [f"root-{e}" for e in ROOT_EVENTS]
# The order each manager's install runs them in, as node_modules records it: yarn 1 runs the
# root's preinstall first, before it links node_modules (which drops what that wrote there).
ORDER = {"npm": _DEPS + _ROOT, "pnpm": _DEPS + _ROOT, "yarn": _DEPS + _ROOT[1:]}
MANAGERS = {"npm": "", "yarn": "1.22.22", "pnpm": "9.15.9"}
LOCKS = {"npm": None, "yarn": "yarn.lock", "pnpm": "pnpm-lock.yaml"}

ADDON_C = """\
#include <node_api.h>
static napi_value one(napi_env env, napi_callback_info info) {
  napi_value out; napi_create_int32(env, 1, &out); return out;
}
static napi_value init(napi_env env, napi_value exports) {
  napi_value fn; napi_create_function(env, "one", NAPI_AUTO_LENGTH, one, NULL, &fn);
  napi_set_named_property(env, exports, "one", fn); return exports;
}
NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
"""
BINDING_GYP = '{"targets": [{"target_name": "addon", "sources": ["addon.c"]}]}\n'


def _tarball(path: Path, files: dict[str, str]) -> Path:
    """An npm package tarball (one `package/` folder)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"package/{name}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


class _SystemNpm(NodeCache):
    """The machine's npm as the environment's package manager (no registry needed)."""

    def manager_cli(
        self, node: Path, manager: str, version: str, expect: str | None = None
    ) -> list[str]:
        return [str(node), str(Path(str(NPM)).resolve())]


def _spec(manager: str = "npm") -> NodeSpec:
    version = (
        MANAGERS[manager]
        or subprocess.run([str(NPM), "--version"], capture_output=True, text=True).stdout.strip()
    )
    node = subprocess.run([str(NODE), "--version"], capture_output=True, text=True).stdout
    return NodeSpec(node=node.strip().lstrip("v"), node_system=True, manager=manager,
                    manager_version=version, lockfile=LOCKS[manager])  # fmt: skip


def _cache(manager: str, root: Path) -> NodeCache:
    """npm: the machine's; yarn and pnpm from the registry (then the lockfile is written
    here without running a script: the install plans of both need one)."""
    return _SystemNpm(root) if manager == "npm" else NodeCache(root)


def _lock(manager: str, cache: NodeCache, ws: Path, tarball: Path) -> None:
    if manager == "yarn":
        sha1 = hashlib.sha1(tarball.read_bytes()).hexdigest()
        (ws / "yarn.lock").write_text(
            "# yarn lockfile v1\n\n\n"
            f'"evil-dep@file:./{tarball.name}":\n  version "1.0.0"\n'
            f'  resolved "file:./{tarball.name}#{sha1}"\n'
        )
    elif manager == "pnpm":
        cli = cache.manager_cli(Path(str(NODE)), "pnpm", MANAGERS["pnpm"])
        env = {"PATH": os.environ["PATH"], "HOME": str(ws.parent / "lock-home")}
        subprocess.run([*cli, "install", "--lockfile-only", "--ignore-scripts"], cwd=ws,
                       env=env, check=True, capture_output=True, timeout=300)  # fmt: skip


@pytest.mark.parametrize(
    "manager", ["npm", pytest.param("yarn", marks=pytest.mark.network),
                pytest.param("pnpm", marks=pytest.mark.network)],
)  # fmt: skip
def test_hostile_install_scripts_are_contained(tmp_path: Path, manager: str) -> None:
    marker = f"swebounty-node-build-attack-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    secret = home / ".ssh" / "id_rsa"
    token = f"PRIVATE KEY {uuid.uuid4().hex}"
    secret.write_text(token + "\n")
    cache = tmp_path / "cache"
    (cache / "npm-cache").mkdir(parents=True)
    targets = [str(home / "pwned"), str(cache / "pwned"), str(cache / "npm-cache" / "pwned")]
    attack = (ATTACK.replace("TARGETS", json.dumps(targets))
              .replace("SECRET", json.dumps(str(secret))).replace("MARKER", json.dumps(marker)))  # fmt: skip
    ws = tmp_path / "ws"
    ws.mkdir()
    dep_scripts = {e: f"node attack.js dep-{e}" for e in DEP_EVENTS}
    tarball = _tarball(ws / "evil-dep-1.0.0.tgz", {
        "package.json": json.dumps({"name": "evil-dep", "version": "1.0.0",
                                    "scripts": dep_scripts}),
        "attack.js": attack,
    })  # fmt: skip
    (ws / "attack.js").write_text(attack)
    (ws / "yarnpath.js").write_text(YARN_PATH.replace("TARGETS", json.dumps(targets)))
    (ws / ".yarnrc").write_text('yarn-path "./yarnpath.js"\n')
    (ws / "package.json").write_text(json.dumps({
        "name": "hostile", "version": "1.0.0",
        "dependencies": {"evil-dep": "file:./evil-dep-1.0.0.tgz"},
        "scripts": {e: f"node attack.js root-{e}" for e in ROOT_EVENTS},
    }))  # fmt: skip
    builder = _cache(manager, cache)
    _lock(manager, builder, ws, tarball)
    try:
        env = builder.ensure(_spec(manager), ws)
        alive = survivors(marker)
        written = sorted(str(p) for d in (home, cache, cache / "npm-cache")
                         for p in d.iterdir() if "pwned" in p.name)  # fmt: skip
        leaked = sorted(
            str(p)
            for p in cache.rglob("*")
            if p.is_file() and not p.is_symlink() and token.encode() in p.read_bytes()
        )
        problems = [
            *([f"(a) the install scripts wrote outside the project: {written}"] if written else []),
            *([f"(b) the host secret reached the cache: {leaked}"] if leaked else []),
            *([f"(c) processes outlived the build: {alive}"] if alive else []),
        ]
        assert not problems, "\n".join(problems)
        # Contained, not skipped: every script ran, the dependencies' first, then the root's
        # in npm ci's order, and what they stole is nothing.
        order = (env.node_modules / ".order").read_text().split()
        assert order == ORDER[manager]
        assert "nothing: ENOENT" in (env.node_modules / "stolen-dep-postinstall.js").read_text()
        assert not list(env.path.glob("installed-*"))  # the lockfile is a link: not kept
        planted = [p.name for p in env.node_modules.iterdir() if p.name.startswith("planted")]
        assert not planted, "links out of the project were kept in node_modules"
        assert not any("without install scripts" in w for w in env.why), env.why
        log = (env.path / "build.log").read_text()
        assert "install scripts (build sandbox): exit 0" in log
        # What stays is the harness's: owner, and no write access for anyone else.
        info = (env.node_modules / "stolen-dep-install.js").stat()
        assert (info.st_uid, info.st_mode & 0o7022) == (os.getuid(), 0)
    finally:
        kill_marked(marker)


def test_a_native_addon_still_builds_offline(tmp_path: Path) -> None:
    """node-gyp in the build sandbox (no network: it cannot download Node's headers) builds
    a dependency's addon with the headers of the Node it builds for."""
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("no C toolchain (make, cc) for node-gyp here")
    ws = tmp_path / "ws"
    ws.mkdir()
    _tarball(ws / "addon-1.0.0.tgz", {
        "package.json": json.dumps({"name": "addon", "version": "1.0.0", "gypfile": True,
                                    "main": "build/Release/addon.node"}),
        "binding.gyp": BINDING_GYP, "addon.c": ADDON_C,
    })  # fmt: skip
    (ws / "package.json").write_text(json.dumps({
        "name": "honest", "version": "1.0.0", "dependencies": {"addon": "file:addon-1.0.0.tgz"},
    }))  # fmt: skip
    env = _SystemNpm(tmp_path / "cache").ensure(_spec(), ws)
    built = env.node_modules / "addon" / "build" / "Release" / "addon.node"
    log = (env.path / "build.log").read_text()
    assert built.is_file(), log[-3000:]
    assert "install scripts (build sandbox): exit 0" in log
    out = subprocess.run([str(NODE), "-p", f"require({json.dumps(str(built))}).one()"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.stdout.strip() == "1", out.stderr


FAIL_LEAVING_LINKS = """\
const fs = require('fs');
fs.rmSync('node_modules', {recursive: true, force: true});
fs.symlinkSync(HOSTDIR, 'node_modules');
try { fs.rmSync('package-lock.json'); } catch (e) {}
fs.symlinkSync(HOSTFILE, 'package-lock.json');
process.exit(1);
"""


def test_a_failed_step_s_leftovers_are_not_the_next_attempt_s_folder(tmp_path: Path) -> None:
    """The install scripts fail in the build sandbox after turning node_modules and the
    lockfile into links to host files; the next attempt's download runs on the host, as root:
    in that folder it would write packages and the lockfile through them. Every attempt's
    scripts fail so (a plan without a lockfile has no `--ignore-scripts` attempt of its own):
    the dependencies are kept without them, and the environment says so."""
    hostdir, hostfile = tmp_path / "host-dir", tmp_path / "host-file"
    hostdir.mkdir()
    (hostdir / "precious").write_text("precious\n")
    hostfile.write_text("precious\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    script = FAIL_LEAVING_LINKS.replace("HOSTDIR", json.dumps(str(hostdir)))
    (ws / "fail.js").write_text(script.replace("HOSTFILE", json.dumps(str(hostfile))))
    _tarball(ws / "dep-1.0.0.tgz", {"package.json": '{"name": "dep", "version": "1.0.0"}'})
    (ws / "package.json").write_text(json.dumps({
        "name": "p", "version": "1.0.0", "dependencies": {"dep": "file:./dep-1.0.0.tgz"},
        "scripts": {"postinstall": "node fail.js"},
    }))  # fmt: skip
    env = _SystemNpm(tmp_path / "cache").ensure(_spec(), ws)
    assert sorted(p.name for p in hostdir.iterdir()) == ["precious"]
    assert hostfile.read_text() == "precious\n"
    assert (env.node_modules / "dep" / "package.json").is_file()
    assert any("failed in the build sandbox" in w for w in env.why), env.why
