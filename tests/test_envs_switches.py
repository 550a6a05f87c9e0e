"""A build copy turns on the project's own `system_*` build options (matplotlib's FreeType and
Qhull), read from its build helpers; the workspace the tests see is never written."""

from __future__ import annotations

import configparser
import subprocess
import textwrap
from pathlib import Path

from repo_helpers import git_repo
from swebounty.envs.buildcopy import copy_project
from swebounty.envs.switches import system_library_env, system_library_options

# As matplotlib 3.4-3.7's setupext.py reads its build options.
SETUPEXT = """\
import configparser, os, sys
mplsetup_cfg = os.environ.get('MPLSETUPCFG') or 'mplsetup.cfg'
config = configparser.ConfigParser()
if os.path.exists(mplsetup_cfg):
    config.read(mplsetup_cfg)
options = {
    'backend': config.get('rc_options', 'backend', fallback=None),
    'system_freetype': config.getboolean(
        'libs', 'system_freetype', fallback=sys.platform.startswith(('aix', 'os400'))),
    'system_qhull': config.getboolean('libs', 'system_qhull',
                                      fallback=False),
}
"""
# The build fails unless both are set, as matplotlib's does offline (it downloads the sources).
SETUP = """\
import sys
from setupext import options
missing = [k for k in ('system_freetype', 'system_qhull') if not options[k]]
if missing:
    sys.exit('downloading freetype-2.6.1.tar.gz failed: ' + ', '.join(missing))
print('backend', options['backend'])
"""


def _read(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read_string(path.read_text())
    return parser


def test_the_options_are_read_from_the_build_helpers(tmp_path: Path) -> None:
    (tmp_path / "setupext.py").write_text(SETUPEXT)
    assert system_library_options(tmp_path) == (
        "MPLSETUPCFG",
        "mplsetup.cfg",
        {"libs": ["system_freetype", "system_qhull"]},
    )
    # matplotlib 3.3: the options lived in setup.cfg.
    (tmp_path / "setupext.py").write_text(SETUPEXT.replace("mplsetup.cfg", "setup.cfg"))
    assert system_library_options(tmp_path) == (
        "MPLSETUPCFG",
        "setup.cfg",
        {"libs": ["system_freetype", "system_qhull"]},
    )


def test_a_project_without_such_options_is_left_alone(tmp_path: Path) -> None:
    ws = git_repo(tmp_path / "ws", {"setup.py": "from setuptools import setup\nsetup()\n"})
    copy_project(ws, tmp_path / "copy")
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == [".git", "setup.py"]
    # A file that reads a configuration but asks it for no system_* option: nothing to set.
    assert system_library_options(git_repo(tmp_path / "b", {"setupext.py": SETUPEXT[:120]})) is None


def test_the_build_copy_builds_against_the_system_libraries(tmp_path: Path) -> None:
    ws = git_repo(
        tmp_path / "ws",
        {
            "setupext.py": SETUPEXT,
            "setup.py": SETUP,
            "mplsetup.cfg": "[rc_options]\nbackend = Agg\n\n[libs]\nsystem_qhull = False\n",
        },
    )
    offline = subprocess.run(["python3", "setup.py"], cwd=ws, capture_output=True, text=True)
    assert offline.returncode != 0 and "downloading" in offline.stderr  # without the rule
    copy = tmp_path / "copy"
    copy_project(ws, copy)
    built = subprocess.run(["python3", "setup.py"], cwd=copy, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert "backend Agg" in built.stdout, "what else the file said is kept"
    config = _read(copy / "mplsetup.cfg")
    assert config.getboolean("libs", "system_freetype")
    assert config.getboolean("libs", "system_qhull")
    # The workspace the tests see is untouched.
    assert "system_freetype" not in (ws / "mplsetup.cfg").read_text()
    assert (
        subprocess.run(
            ["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True
        ).stdout
        == ""
    )


def test_an_unreadable_configuration_is_replaced(tmp_path: Path) -> None:
    ws = git_repo(
        tmp_path / "ws",
        {"setupext.py": SETUPEXT, "mplsetup.cfg": textwrap.dedent("not [ini\n= at all\n")},
    )
    copy_project(ws, tmp_path / "copy")
    assert _read(tmp_path / "copy" / "mplsetup.cfg").getboolean("libs", "system_freetype")


def test_an_install_in_the_sandbox_is_given_the_configuration_by_its_variable(
    tmp_path: Path,
) -> None:
    """The workspace is the tests': the configuration goes in the task's layer, named by the
    variable the build reads, holding what the workspace's own file says as well."""
    ws = git_repo(
        tmp_path / "ws",
        {
            "setupext.py": SETUPEXT,
            "setup.py": SETUP,
            "mplsetup.cfg": "[rc_options]\nbackend = Agg\n",
        },
    )
    layer = tmp_path / "layer"
    layer.mkdir()
    env = system_library_env(ws, layer)
    assert list(env) == ["MPLSETUPCFG"] and Path(env["MPLSETUPCFG"]).parent == layer
    built = subprocess.run(
        ["python3", "setup.py"],
        cwd=ws,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", **env},
    )
    assert built.returncode == 0, built.stderr
    assert "backend Agg" in built.stdout
    assert (
        subprocess.run(
            ["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True
        ).stdout
        == ""
    )
    assert system_library_env(git_repo(tmp_path / "plain", {"setup.py": "x = 1\n"}), layer) == {}
