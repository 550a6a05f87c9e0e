"""The harness's pytest command keeps pytest's cache out of the workspace without turning the
cache plugin off: plugins that read `config.cache` (pytest-pep8, pytest-flakes) stop a run
with an INTERNALERROR when it is off (issue 25)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from repo_helpers import git_repo
from swebounty.testing import parse_junit, pytest_command, relocated
from test_pytest_guard import _guarded_run

# A plugin of the pep8/flakes kind: it keeps mtimes in the cache between runs.
CONFTEST = """
def pytest_configure(config):
    seen = config.cache.get("plugin/mtimes", {})
    config.cache.set("plugin/mtimes", dict(seen, runs=seen.get("runs", 0) + 1))
"""


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_plugin_reading_the_cache_runs_and_the_workspace_gets_no_cache(tmp_path: Path) -> None:
    ws = git_repo(
        tmp_path / "ws",
        {"conftest.py": CONFTEST, "test_a.py": "def test_one():\n    assert True\n"},
    )
    out = tmp_path / "out"
    out.mkdir()
    junit = out / "junit.xml"
    argv = pytest_command([sys.executable, "-m", "pytest"], ["test_a.py"], junit, rootdir=ws)
    proc = run(argv, ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert parse_junit(junit)["test_a.py::test_one"].status == "passed"
    assert not (ws / ".pytest_cache").exists() and not (ws / ".cache").exists()
    assert (out / "swebounty-pytest-cache").is_dir()

    # What the harness used to pass: the same plugin cannot even start.
    at = next(i for i, a in enumerate(argv) if a.startswith("cache_dir="))
    off = [*argv[: at - 1], "-p", "no:cacheprovider", *argv[at + 1 :]]
    broken = run(off, ws)
    assert broken.returncode != 0 and "cache" in broken.stdout + broken.stderr


def test_an_unsandboxed_run_moves_the_junit_file_and_the_cache_together(tmp_path: Path) -> None:
    args = pytest_command([], ["t.py"], Path("/tmp/swebounty-junit.xml"))
    moved = relocated(args, tmp_path / "junit.xml")
    assert f"--junitxml={tmp_path / 'junit.xml'}" in moved
    assert f"cache_dir={tmp_path / 'swebounty-pytest-cache'}" in moved
    assert not any("/tmp/swebounty" in a for a in moved) and len(moved) == len(args)


# astropy 2-3's pytest plugin: an ini option named like pytest's own cache_dir (for astropy's
# cache), and a folder made in it at each test's setup.
ASTROPY_CACHE_CONFTEST = """
import os

def pytest_addoption(parser):
    parser.addini("cache_dir", "the Astropy cache during tests", default=None)

def pytest_runtest_setup(item):
    cache_dir = item.config.getini("cache_dir")
    path = os.path.join(cache_dir or "", "astropy")
    if cache_dir and not os.path.exists(path):  # as astropy.config.paths.get_cache_dir
        os.mkdir(path)
"""


def test_a_plugin_sharing_the_cache_dir_option_finds_its_folder(tmp_path: Path) -> None:
    """`-o cache_dir=` reaches such a plugin too: its folder exists before the tests run."""
    run = _guarded_run(
        Path(sys.prefix), tmp_path, tamper=False, files={"base:conftest.py": ASTROPY_CACHE_CONFTEST}
    )
    assert run is not None and run.problems == []
    assert run.statuses == {"tests/test_x.py::test_ok": "passed",
                            "tests/test_x.py::test_bad": "failed"}  # fmt: skip
