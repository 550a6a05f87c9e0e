"""Sources a project's build would download, provided from a local folder (envs/sources.py):
the build copy gets `build/NAME-VERSION` and its `system_NAME` switch is not forced; without
the source nothing changes; the keys of the builds say which was used; names read from a
project never reach outside the build copy."""

from __future__ import annotations

import configparser
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from fake_index import spec
from repo_helpers import git_repo
from swebounty.envs import EnvManager
from swebounty.envs.build import Builder
from swebounty.envs.buildcopy import copy_project, prepare
from swebounty.envs.cache import CacheLayout
from swebounty.envs.models import EnvBuildError, ResolvedSpec
from swebounty.envs.natives import built, seed
from swebounty.envs.sources import Sources, wanted
from swebounty.envs.tasklayer import ProjectInstall

# As matplotlib's setupext.py (3.3-3.7) finds, or downloads, the sources it builds.
SETUPEXT = """\
import configparser, os, sys
from pathlib import Path
LOCAL_FREETYPE_VERSION = '2.6.1'
LOCAL_QHULL_VERSION = '2020.2'
mplsetup_cfg = os.environ.get('MPLSETUPCFG') or 'mplsetup.cfg'
config = configparser.ConfigParser()
if os.path.exists(mplsetup_cfg):
    config.read(mplsetup_cfg)
options = {
    'system_freetype': config.getboolean('libs', 'system_freetype', fallback=False),
    'system_qhull': config.getboolean('libs', 'system_qhull', fallback=False),
}

def get_and_extract_tarball(urls, sha, dirname):
    toplevel = Path("build", dirname)
    if not toplevel.exists():
        raise IOError(f"Failed to download any of the following: {urls}")
    return toplevel

def freetype():
    if options['system_freetype']:
        return 'system'
    src_path = Path('build', f'freetype-{LOCAL_FREETYPE_VERSION}')
    get_and_extract_tarball(['https://download.savannah.gnu.org/x'], 'sha', src_path.name)
    return 'local ' + (src_path / 'VERSION').read_text().strip()

def qhull():
    if options['system_qhull']:
        return 'system'
    return 'local ' + Path(f'build/qhull-{LOCAL_QHULL_VERSION}/src').read_text()
"""
SETUP = "from setupext import freetype, qhull\nprint('freetype', freetype(), 'qhull', qhull())\n"


def _project(root: Path, helper: str = SETUPEXT) -> Path:
    return git_repo(root, {"setupext.py": helper, "setup.py": SETUP})


def _folder(root: Path, version: str = "2.6.1") -> Path:
    (root / f"freetype-{version}").mkdir(parents=True)
    (root / f"freetype-{version}" / "VERSION").write_text(f"{version}\n")
    return root


def _build(project: Path) -> str:
    proc = subprocess.run(["python3", "setup.py"], cwd=project, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _switches(project: Path) -> dict[str, str]:
    parser = configparser.ConfigParser()
    parser.read_string((project / "mplsetup.cfg").read_text())
    return dict(parser["libs"])


def test_the_names_are_read_from_the_helpers_as_matplotlib_writes_them(tmp_path: Path) -> None:
    helper = SETUPEXT.replace(
        "LOCAL_FREETYPE_VERSION = '2.6.1'\n",
        "TESTING_VERSION_OF_FREETYPE = '2.6.1'\n"
        "if sys.platform.startswith('win') and platform.machine() == 'ARM64':\n"
        "    LOCAL_FREETYPE_VERSION = '2.11.1'\n"
        "else:\n"
        "    LOCAL_FREETYPE_VERSION = TESTING_VERSION_OF_FREETYPE\n",
    )
    assert sorted(wanted(_project(tmp_path / "p", helper))) == [
        "freetype-2.11.1",
        "freetype-2.6.1",
        "qhull-2020.2",
    ]
    assert wanted(_project(tmp_path / "py2", "print 'an old setup.py'\n")) == []


def test_the_build_copy_gets_the_provided_source(tmp_path: Path) -> None:
    ws = _project(tmp_path / "ws")
    copy = tmp_path / "copy"
    notes = copy_project(ws, copy, Sources(_folder(tmp_path / "sources")))
    assert (copy / "build" / "freetype-2.6.1" / "VERSION").read_text() == "2.6.1\n"
    # Its switch is not forced; the others still are (qhull has no source here).
    assert _switches(copy) == {"system_qhull": "True"}
    assert _build(copy) == "freetype local 2.6.1 qhull system"
    assert any("build/freetype-2.6.1 from the sources folder (tree:" in n for n in notes)
    assert "build copy: mplsetup.cfg [libs] system_qhull = True" in notes
    # The workspace the tests see is untouched.
    assert not (ws / "build").exists() and not (ws / "mplsetup.cfg").exists()


def test_without_the_source_the_build_uses_the_system_libraries(tmp_path: Path) -> None:
    ws = _project(tmp_path / "ws")
    for n, sources in enumerate([None, Sources(tmp_path / "none"), Sources(_folder(tmp_path / "s", "2.10.0"))]):  # fmt: skip
        copy = tmp_path / f"copy{n}"
        copy_project(ws, copy, sources)
        assert not (copy / "build").exists()
        assert _switches(copy) == {"system_freetype": "True", "system_qhull": "True"}
        assert _build(copy) == "freetype system qhull system"


def test_a_tarball_is_extracted_and_a_bad_one_left_out(tmp_path: Path) -> None:
    folder = tmp_path / "sources"
    folder.mkdir()

    def tarball(name: str, members: dict[str, bytes]) -> None:
        with tarfile.open(folder / f"{name}.tar.gz", "w:gz") as tar:
            for member, data in members.items():
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

    tarball("freetype-2.6.1", {"freetype-2.6.1/VERSION": b"2.6.1\n"})
    tarball("qhull-2020.2", {"qhull-2020.2/src": b"x", "../escaped": b"x"})
    ws = _project(tmp_path / "ws")
    copy = tmp_path / "copy"
    copy_project(ws, copy, Sources(folder))
    assert _build(copy) == "freetype local 2.6.1 qhull system"
    assert not (tmp_path / "escaped").exists() and not (copy / "build" / "qhull-2020.2").exists()


@pytest.mark.parametrize(
    "helper",
    [
        "from pathlib import Path\nP = Path('build', '../evil-1.0')\n",
        "p = f'build/../evil-1.0/src'\n",
        "import os\nV = '../1.0'\np = os.path.join('build', f'evil-{V}')\n",
        "from pathlib import Path\nV = '1.0/../../../evil-1.0'\nP = Path('build', f'evil-{V}')\n",
    ],
)
def test_a_name_that_leaves_the_build_folder_is_refused(tmp_path: Path, helper: str) -> None:
    folder = tmp_path / "sources"
    (folder / "evil-1.0").mkdir(parents=True)
    (folder / "evil-1.0" / "f").write_text("x")
    ws = _project(tmp_path / "ws", helper)
    assert wanted(ws) == []
    copy = tmp_path / "copy"
    assert copy_project(ws, copy, Sources(folder)) == []
    assert not (copy / "build").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "sources", "ws"]


def test_a_build_folder_linked_out_of_the_copy_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = _project(tmp_path / "ws")
    (ws / "build").symlink_to(outside)
    subprocess.run(["git", "add", "build"], cwd=ws, check=True)
    subprocess.run(["git", "commit", "-qm", "link"], cwd=ws, check=True, capture_output=True)
    copy = tmp_path / "copy"
    copy_project(ws, copy, Sources(_folder(tmp_path / "sources")))
    assert list(outside.iterdir()) == []
    assert (copy / "build").is_dir() and not (copy / "build").is_symlink()
    assert _build(copy) == "freetype local 2.6.1 qhull system"


def _spec_key(tmp_path: Path, ws: Path, rspec: ResolvedSpec, sources: Path | None) -> str:
    """The key Builder.ensure gives `rspec` (its build is stopped before it starts)."""
    manager = EnvManager(tmp_path / "cache", offline=True, sources_dir=sources)
    keys: list[str] = []

    def stop(self: Builder, rspec: ResolvedSpec, spec_key: str, *args: object) -> None:
        keys.append(spec_key)
        raise EnvBuildError("stopped", kind="other")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Builder, "_build", stop)
        with pytest.raises(EnvBuildError):
            manager.ensure(rspec, ws)
    return keys[0]


def test_the_keys_change_with_the_provided_source(tmp_path: Path) -> None:
    ws = _project(tmp_path / "ws")
    folder = _folder(tmp_path / "sources")
    rspec = spec([]).model_copy(update={"install_project": True})
    system = _spec_key(tmp_path, ws, rspec, None)
    # No source for this project: every key stays what it was.
    assert _spec_key(tmp_path, ws, rspec, tmp_path / "empty") == system
    provided = _spec_key(tmp_path, ws, rspec, folder)
    (folder / "freetype-2.6.1" / "VERSION").write_text("2.6.1 patched\n")
    changed = _spec_key(tmp_path, ws, rspec, folder)
    assert len({system, provided, changed}) == 3
    # The extensions built against the system's library are not reused with the source, and
    # the other way round.
    with_source = CacheLayout(tmp_path / "c", Sources(folder))
    without = CacheLayout(tmp_path / "c")
    assert without.key_part(ws) == {} and list(with_source.key_part(ws)["sources"]) == [
        "freetype-2.6.1"
    ]
    project = tmp_path / "built"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "_ext.so").write_bytes(b"\x7fELF")
    info = ProjectInstall(natives=["pkg/_ext.so"])
    seed(without, env_key="e", workspace=ws, project=project, info=info, version_env={})
    assert built(without, env_key="e", workspace=ws, version_env={}) is not None
    assert built(with_source, env_key="e", workspace=ws, version_env={}) is None
    seed(with_source, env_key="e", workspace=ws, project=project, info=info, version_env={})
    assert built(with_source, env_key="e", workspace=ws, version_env={}) is not None


def test_the_build_log_says_which_sources_were_used(tmp_path: Path) -> None:
    ws = _project(tmp_path / "ws")
    log = tmp_path / "build.log"
    why: list[str] = []
    prepare(ws, tmp_path / "copy", name=None, vcs_tag_prefix=None, cutoff=None,
            release_hint=None, lookup=False, why=why,
            sources=Sources(_folder(tmp_path / "sources")), log_path=log)  # fmt: skip
    text = log.read_text()
    assert "# build copy: build/freetype-2.6.1 from the sources folder (tree:" in text
    assert "# build copy: mplsetup.cfg [libs] system_qhull = True" in text
    assert "system_freetype" not in text
    assert any("build/freetype-2.6.1" in w for w in why)
