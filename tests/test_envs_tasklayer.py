"""The per-task layer: a tiny venv over a shared site-packages, importing the workspace."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from swebounty.envs.tasklayer import (
    capture,
    make_layer,
    native_stats,
    packaging_digest,
    pip_argv,
    project_files,
    replay,
    site_packages,
)

VERSION = "{}.{}.{}".format(*sys.version_info[:3])
MINOR = "{}.{}".format(*sys.version_info[:2])
INTERP = Path(sysconfig.get_config_var("BINDIR") or Path(sys.executable).parent) / f"python{MINOR}"
if not INTERP.exists():  # pragma: no cover - unusual layouts
    INTERP = Path(sys.executable).resolve()


def run(python: Path, code: str) -> str:
    proc = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_layer_sees_the_shared_site_and_its_pth_files(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "depmod.py").write_text("VALUE = 42\n")
    (shared / "extra.pth").write_text(str(tmp_path / "viapth") + "\n")
    (tmp_path / "viapth").mkdir()
    (tmp_path / "viapth" / "viapth_mod.py").write_text("OK = True\n")
    python = make_layer(tmp_path / "layer", INTERP, VERSION, shared)
    out = run(python, "import sys, depmod, viapth_mod; print(sys.prefix, depmod.VALUE)")
    assert out == f"{tmp_path / 'layer'} 42"
    # The interpreter's own site-packages (where swebounty itself lives) stays invisible.
    proc = subprocess.run([str(python), "-c", "import pydantic"], capture_output=True)
    assert proc.returncode != 0


def fake_install(layer: Path, project: Path, how: str) -> None:
    """What era pips leave behind: legacy develop, a PEP 660 .pth, a strict finder."""
    sp = site_packages(layer, MINOR)
    if how == "develop":
        (sp / "proj.egg-link").write_text(f"{project / 'src'}\n.")
        egg = project / "src" / "proj.egg-info"
        egg.mkdir(parents=True)
        (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: proj\nVersion: 1.2\n")
        (egg / "entry_points.txt").write_text("[console_scripts]\nproj-cli = proj.cli:main\n")
    elif how == "pth":
        (sp / "__editable__.proj-1.2.pth").write_text(f"{project / 'src'}\n")
    else:
        (sp / "__editable__.proj-1.2.pth").write_text("import __editable___proj_1_2_finder; x\n")
        (sp / "__editable___proj_1_2_finder.py").write_text(
            f"MAPPING = {{'proj': {str(project / 'src' / 'proj')!r}}}\n"
        )
    if how != "develop":
        dist = sp / "proj-1.2.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: proj\nVersion: 1.2\n")
        (dist / "entry_points.txt").write_text("[console_scripts]\nproj-cli = proj.cli:main\n")


def make_project(root: Path) -> None:
    pkg = root / "src" / "proj"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("WHERE = 'base'\n")
    (pkg / "cli.py").write_text("def main():\n    print('cli says hi')\n    return 0\n")
    (root / "setup.py").write_text("from setuptools import setup\nsetup(name='proj')\n")


def installed_copy(tmp_path: Path) -> tuple[Path, Path, set[str]]:
    """The build copy `copy` of the project and the layer `layer` its install (a .pth) wrote
    into, with the copy's files before that install."""
    base = tmp_path / "copy"
    make_project(base)
    before = project_files(base)
    layer = tmp_path / "layer"
    make_layer(layer, INTERP, VERSION, tmp_path / "none")
    fake_install(layer, base, "pth")
    return base, layer, before


def test_capture_then_replay_into_a_workspace(tmp_path: Path) -> None:
    for how in ("develop", "pth", "finder"):
        base = tmp_path / how / "copy"
        make_project(base)
        build_layer = tmp_path / how / "build-layer"
        make_layer(build_layer, INTERP, VERSION, tmp_path / "none")
        fake_install(build_layer, base, how)
        info = capture(build_layer, MINOR, base, tmp_path / how / "store")
        assert info.mode == "pth", info.why
        assert info.roots == ["src"] and info.name == "proj"
        assert info.console_scripts == {"proj-cli": "proj.cli:main"}

        ws = tmp_path / how / "ws"
        make_project(ws)
        (ws / "src" / "proj" / "__init__.py").write_text("WHERE = 'workspace'\n")
        layer = tmp_path / how / "task-layer"
        python = make_layer(layer, INTERP, VERSION, tmp_path / "none")
        replay(layer, MINOR, info, tmp_path / how / "store", ws)
        out = run(
            python,
            "import proj, importlib.metadata as m; print(proj.WHERE, m.version('proj'))",
        )
        assert out == "workspace 1.2"
        script = subprocess.run([str(layer / "bin" / "proj-cli")], capture_output=True, text=True)
        assert script.stdout.strip() == "cli says hi"


def test_files_the_install_generated_reach_a_workspace_without_them(tmp_path: Path) -> None:
    base, layer, before = installed_copy(tmp_path)
    # What setuptools_scm's write_to does during the install, plus debris that is not code.
    (base / "src" / "proj" / "_version.py").write_text("version = '1.2'\n")
    (base / "src" / "proj" / "__pycache__").mkdir()
    (base / "src" / "proj" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    (base / "build" / "lib").mkdir(parents=True)
    (base / "build" / "lib" / "junk.py").write_text("")
    (base / "outside.txt").write_text("not under an import root\n")
    store = tmp_path / "store"
    info = capture(layer, MINOR, base, store, before)
    assert info.mode == "pth" and info.generated == ["src/proj/_version.py"]

    ws = tmp_path / "ws"
    make_project(ws)
    task_layer = tmp_path / "task-layer"
    python = make_layer(task_layer, INTERP, VERSION, tmp_path / "none")
    replay(task_layer, MINOR, info, store, ws)
    assert run(python, "from proj._version import version; print(version)") == "1.2"

    # A workspace whose patch brings its own file keeps it.
    ws2 = tmp_path / "ws2"
    make_project(ws2)
    (ws2 / "src" / "proj" / "_version.py").write_text("version = 'patched'\n")
    layer2 = tmp_path / "task-layer2"
    python2 = make_layer(layer2, INTERP, VERSION, tmp_path / "none")
    replay(layer2, MINOR, info, store, ws2)
    assert run(python2, "from proj._version import version; print(version)") == "patched"


def test_compiled_extensions_are_listed_and_unknown_hooks_mean_a_real_install(
    tmp_path: Path,
) -> None:
    base = tmp_path / "copy"
    make_project(base)
    (base / "src" / "proj" / "_speed.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    layer = tmp_path / "layer"
    make_layer(layer, INTERP, VERSION, tmp_path / "none")
    fake_install(layer, base, "pth")
    info = capture(layer, MINOR, base, tmp_path / "store")
    # Built once per tree of build inputs (natives.py) and placed per task: replayable.
    assert info.mode == "pth" and "compiled extensions" in info.why
    assert info.natives == ["src/proj/_speed.cpython-311-x86_64-linux-gnu.so"]

    (base / "src" / "proj" / "_speed.cpython-311-x86_64-linux-gnu.so").unlink()
    sp = site_packages(layer, MINOR)
    (sp / "weird.pth").write_text("import some_hook; some_hook.install()\n")
    info = capture(layer, MINOR, base, tmp_path / "store")
    assert info.mode == "pip" and "import hook" in info.why


def test_compiled_files_the_repository_commits_need_no_rebuild(tmp_path: Path) -> None:
    """Sphinx commits `halibut.cpython-38-x86_64-linux-gnu.so` as a test fixture: a file the
    install left as it was is not an extension to rebuild per task; one it rewrote is."""
    base = tmp_path / "copy"
    make_project(base)
    fixture = base / "tests" / "roots" / "fish" / "halibut.cpython-38-x86_64-linux-gnu.so"
    fixture.parent.mkdir(parents=True)
    fixture.write_bytes(b"\x7fELF fixture")
    prebuilt = native_stats(base)
    assert list(prebuilt) == ["tests/roots/fish/halibut.cpython-38-x86_64-linux-gnu.so"]
    layer = tmp_path / "layer"
    make_layer(layer, INTERP, VERSION, tmp_path / "none")
    fake_install(layer, base, "pth")
    info = capture(layer, MINOR, base, tmp_path / "store", prebuilt=prebuilt)
    assert info.mode == "pth", info.why

    fixture.write_bytes(b"\x7fELF rebuilt by the install")  # build_ext --inplace over it
    info = capture(layer, MINOR, base, tmp_path / "store", prebuilt=prebuilt)
    assert info.natives == ["tests/roots/fish/halibut.cpython-38-x86_64-linux-gnu.so"]
    built = base / "src" / "proj" / "_speed.cpython-38-x86_64-linux-gnu.so"
    built.write_bytes(b"\x7fELF new")
    info = capture(layer, MINOR, base, tmp_path / "store", prebuilt=native_stats(base))
    assert info.mode == "pth", "both files were there, unchanged, before the install"
    assert not info.natives


def test_packaging_digest_tracks_setup_files_only(tmp_path: Path) -> None:
    make_project(tmp_path)
    before = packaging_digest(tmp_path)
    (tmp_path / "src" / "proj" / "__init__.py").write_text("changed\n")
    assert packaging_digest(tmp_path) == before
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = proj\n")
    assert packaging_digest(tmp_path) != before


def test_pip_argv_matches_the_era() -> None:
    new = pip_argv(Path("/l/bin/python"), Path("/ws"), "23.1", editable=True)
    assert new == [
        "/l/bin/python",
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-index",
        "--no-build-isolation",
        "-e",
        "/ws",
    ]
    old = pip_argv(Path("/l/bin/python"), Path("/ws"), "9.0.3", editable=False)
    assert "--no-build-isolation" not in old and old[-1] == "/ws" and "-e" not in old


def test_what_the_build_left_is_kept_only_as_regular_files(tmp_path: Path) -> None:
    """The repository's build wrote the project and the layer: a generated file, metadata
    file, .pth or extension that is a link to a host secret is never copied into the store
    (from there it reached every task's workspace and layer)."""
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY\n")
    base, layer, before = installed_copy(tmp_path)
    pkg = base / "src" / "proj"
    (pkg / "_version.py").symlink_to(secret)  # "generated" by the build
    (pkg / "_speed.cpython-311-x86_64-linux-gnu.so").symlink_to(secret)
    (pkg / "real.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    dist = site_packages(layer, MINOR) / "proj-1.2.dist-info"
    (dist / "LICENSE").symlink_to(secret)
    (site_packages(layer, MINOR) / "evil.pth").symlink_to(secret)
    store = tmp_path / "store"
    info = capture(layer, MINOR, base, store, before)
    assert info.natives == ["src/proj/real.cpython-311-x86_64-linux-gnu.so"]
    assert info.generated == [] and info.name == "proj" and info.mode == "pth", info.why
    assert sorted(p.name for p in (store / "proj-1.2.dist-info").iterdir()) == [
        "METADATA",
        "entry_points.txt",
    ]
    held = [p.read_bytes() for p in store.rglob("*") if p.is_file() and not p.is_symlink()]
    assert not any(b"PRIVATE KEY" in data for data in held)


# What setuptools' editable install (develop, PEP 660) writes in NAME-nspkg.pth for a project
# declaring namespace_packages=["nsp"], its packages under ROOT (setuptools 67, verbatim).
NSPKG_LINE = (
    "import sys, types, os;has_mfs = sys.version_info > (3, 5);p = os.path.join(ROOT, "
    "*('nsp',));importlib = has_mfs and __import__('importlib.util');has_mfs and "
    "__import__('importlib.machinery');m = has_mfs and sys.modules.setdefault('nsp', "
    "importlib.util.module_from_spec(importlib.machinery.PathFinder.find_spec('nsp', "
    "[os.path.dirname(p)])));m = m or sys.modules.setdefault('nsp', types.ModuleType('nsp'));"
    "mp = (m or []) and m.__dict__.setdefault('__path__',[]);(p not in mp) and mp.append(p)\n"
)


def test_namespace_package_lines_are_replayed_rooted_in_the_workspace(tmp_path: Path) -> None:
    """A project declaring setuptools namespace packages gets a NAME-nspkg.pth of code from its
    editable install: it was an 'import hook' that sent every task to pip in its sandbox (which
    rebuilt the extensions against the system's libraries). The template is recognised and
    written again for the workspace; the namespace's __init__.py is still never run."""

    def make(root: Path, where: str) -> None:
        make_project(root)
        (root / "src" / "nsp" / "sub").mkdir(parents=True)
        (root / "src" / "nsp" / "__init__.py").write_text("raise RuntimeError('declared')\n")
        (root / "src" / "nsp" / "sub" / "__init__.py").write_text(f"WHERE = {where!r}\n")

    base = tmp_path / "copy"
    make(base, "base")
    layer = tmp_path / "layer"
    make_layer(layer, INTERP, VERSION, tmp_path / "none")
    fake_install(layer, base, "pth")
    nspkg_pth = site_packages(layer, MINOR) / "proj-1.2-nspkg.pth"
    nspkg_pth.write_text(NSPKG_LINE.replace("ROOT", repr(str(base / "src"))))
    assert run(layer / "bin" / "python", "import nsp.sub; print(nsp.sub.WHERE)") == "base"
    info = capture(layer, MINOR, base, tmp_path / "store")
    assert info.mode == "pth", info.why
    assert info.namespaces == {"nsp": "src"} and info.roots == ["src"]

    ws = tmp_path / "ws"
    make(ws, "workspace")
    task_layer = tmp_path / "task-layer"
    python = make_layer(task_layer, INTERP, VERSION, tmp_path / "none")
    replay(task_layer, MINOR, info, tmp_path / "store", ws)
    assert run(python, "import nsp.sub, proj; print(nsp.sub.WHERE, proj.WHERE)") == (
        "workspace base"
    )

    # Rooted outside the project, or anything added to the line: a real install per task.
    nspkg_pth.write_text(NSPKG_LINE.replace("ROOT", repr(str(tmp_path / "elsewhere"))))
    info = capture(layer, MINOR, base, tmp_path / "store")
    assert info.mode == "pip" and "outside the project" in info.why
    line = NSPKG_LINE.replace("ROOT", repr(str(base / "src")))
    nspkg_pth.write_text(line.rstrip("\n") + ";__import__('os').system('true')\n")
    info = capture(layer, MINOR, base, tmp_path / "store")
    assert info.mode == "pip" and "import hook" in info.why


def test_a_namespace_root_in_a_link_loop_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    """The root comes from the repository's build: a loop of links there sends the project to
    pip (a problem), it does not stop the environment build."""
    from swebounty.envs import nspkg

    project = tmp_path / "project"
    project.mkdir()
    (project / "a").symlink_to(project / "b")
    (project / "b").symlink_to(project / "a")
    (project / "lib").mkdir()
    problems: list[str] = []
    found = {"ns": project / "a" / "x", "ok": project / "lib"}
    assert nspkg.relative(found, project, problems) == {"ok": "lib"}
    assert problems == ["namespace package ns is outside the project"]
