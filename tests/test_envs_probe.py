"""An environment whose tests cannot import is not done (envs/probe.py, envs/repair.py): a
package that breaks on import here is left out, a module nobody installed is added, a change
that makes collection worse is undone. Offline, with a stand-in for uv whose "index" has a
package raising at import (as cfgrib does without the ecCodes library).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from fake_index import calls, fake_uv, spec
from repo_helpers import git_repo
from swebounty.envs import DepSet, EnvManager
from swebounty.envs.probe import collection_targets, probe, read_probe, top_level_owners
from swebounty.envs.projectfiles import MAX_CONFIG_BYTES


def test_a_broken_optional_package_is_left_out_and_a_missing_one_added(tmp_path: Path) -> None:
    ws = git_repo(
        tmp_path / "ws",
        {
            # The project tolerates the optional package's absence, not its breakage.
            "pkg/__init__.py": "try:\n    import brokenio\nexcept ImportError:\n"
            "    brokenio = None\n",
            "conftest.py": "import helperlib\n",  # a test dependency no plan declares
            "tests/test_a.py": "import pkg\n\n\ndef test_a():\n    assert pkg.brokenio is None\n",
        },
    )
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    env = manager.ensure(spec([DepSet(label="all extras", lines=["brokenio", "six"])]), ws)
    assert "helperlib==1.0" in env.lock and "six==1.0" in env.lock
    assert "brokenio==1.0" not in env.lock
    assert "# probe added helperlib" in env.lock and "# probe left out brokenio" in env.lock
    why = "\n".join(env.why)
    assert "the conftest does not load" in why and "helperlib is not installed" in why
    assert "brokenio breaks on import (RuntimeError: libbrokenio.so not found)" in why
    assert "probe: kept (leave out brokenio): the base commit's tests collect" in why
    excluded = [c for c in calls(tmp_path) if "--excludes" in c]
    assert excluded, "the broken package was left out by the resolver, not by editing a lock"
    log = (manager.cache.spec_dir(env.spec_key or "") / "build.log").read_text()
    assert "probe collection" in log and "libbrokenio.so not found" in log
    # The environment the spec records is the repaired one, and it is reused as it is.
    again = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    assert again.ensure(spec([DepSet(label="all extras", lines=["brokenio", "six"])]), ws).key == (
        env.key
    )


def test_leaving_out_a_package_the_project_needs_is_undone(tmp_path: Path) -> None:
    ws = git_repo(
        tmp_path / "ws",
        {
            "pkg/__init__.py": "import brokencore\n",  # not optional: leaving it out is worse
            "tests/test_a.py": "import pkg\n\n\ndef test_a():\n    pass\n",
        },
    )
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    plans = [DepSet(label="all extras", lines=["brokencore"]), DepSet(label="no extras")]
    env = manager.ensure(spec(plans), ws)
    assert "brokencore==1.0" in env.lock and "# probe" not in env.lock
    why = "\n".join(env.why)
    assert "probe: not kept (leave out brokencore): collection: 1 error(s)" in why
    assert "kept plan" not in why  # the plan without it is no better: the first stands


def test_read_probe_names_the_import_the_project_made(tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "python3.8" / "site-packages"
    for dist, top in (("cfgrib", "cfgrib"), ("eccodes-python", "gribapi")):
        meta = site / f"{dist}-1.0.dist-info"
        meta.mkdir(parents=True)
        (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\n")
        (meta / "RECORD").write_text(f"{top}/__init__.py,,\n{dist}-1.0.dist-info/METADATA,,\n")
    output = f"""
==================================== ERRORS ====================================
______________ ERROR collecting xarray/tests/test_backends.py ______________
xarray/tests/__init__.py:70: in <module>
    has_cfgrib, requires_cfgrib = _importorskip("cfgrib")
{site}/cfgrib/__init__.py:19: in <module>
    from .cfmessage import CfMessage
{site}/gribapi/bindings.py:35: in <module>
    raise RuntimeError("ecCodes library not found")
E   RuntimeError: ecCodes library not found
______________ ERROR collecting xarray/tests/test_plot.py ______________
xarray/tests/test_plot.py:3: in <module>
    import seaborn
E   ModuleNotFoundError: No module named 'seaborn'
!!!!!!!!!!!!!!!!!!! Interrupted: 2 errors during collection !!!!!!!!!!!!!!!!!!!!
"""
    found = read_probe(output, 2, [site], {"xarray"})
    assert found.errors == 2 and not found.conftest_failed
    assert found.broken == {"cfgrib": "RuntimeError: ecCodes library not found"}
    assert found.missing == {"seaborn": "ModuleNotFoundError: No module named 'seaborn'"}
    assert top_level_owners(site) == {"cfgrib": "cfgrib", "gribapi": "eccodes-python"}
    # The project's own modules, and the interpreter's, are never packages to add.
    own = read_probe(output.replace("seaborn", "xarray.core"), 2, [site], {"xarray"})
    assert "xarray" not in own.missing and "xarray.core" not in own.missing
    conftest = read_probe(
        "ImportError while loading conftest '/p/conftest.py'.\nconftest.py:1: in <module>\n"
        "    import PIL\nE   ModuleNotFoundError: No module named 'PIL'\n",
        4,
        [site],
        set(),
    )
    assert conftest.conftest_failed and conftest.missing == {
        "Pillow": "ModuleNotFoundError: No module named 'PIL'"
    }
    assert conftest.badness > found.badness  # nothing collects at all is worst


def test_the_probe_collects_the_tests_not_the_scripts_beside_them(tmp_path: Path) -> None:
    # sympy's bin/test_optional_dependencies.py runs half of sympy's tests when imported.
    script = "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('ran')\n"
    ws = git_repo(
        tmp_path / "ws",
        {
            "pkg/__init__.py": "",
            "pkg/tests/test_inner.py": "def test_inner():\n    pass\n",
            "tests/test_outer.py": "def test_outer():\n    pass\n",
            "test_root.py": "def test_root():\n    pass\n",
            "bin/test_script.py": script,
            "doc/test_doc.py": script,
        },
    )
    assert collection_targets(ws) == ["pkg", "test_root.py", "tests"]
    log = tmp_path / "probe.log"
    reads = [Path(sys.prefix), Path(sys.base_prefix)]
    found = probe(Path(sys.executable), ws, [], {"pkg"}, dict(os.environ), log, reads=reads)
    assert found.clean, found.describe()
    assert not (ws / "bin" / "ran").exists() and not (ws / "doc" / "ran").exists()
    collected = log.read_text()
    assert "test_inner" in collected and "test_outer" in collected and "test_root" in collected


def test_the_probe_collects_without_rewriting_assertions(tmp_path: Path) -> None:
    """Rewriting every test module was most of the probe's cost (sympy: 130 CPU-s per
    environment, 25 without); it changes nothing about what imports."""
    conftest = (
        "import pathlib\n\n\ndef pytest_configure(config):\n"
        "    mode = config.getoption('assertmode')\n"
        "    pathlib.Path(__file__).with_name('mode').write_text(mode)\n"
    )
    ws = git_repo(tmp_path / "ws", {"conftest.py": conftest, "tests/test_a.py": "def test_a():\n"
                                    "    assert 1\n"})  # fmt: skip
    reads = [Path(sys.prefix), Path(sys.base_prefix)]
    found = probe(Path(sys.executable), ws, [], set(), dict(os.environ), tmp_path / "log",
                  reads=reads)  # fmt: skip
    assert found.clean, found.describe()
    assert (ws / "mode").read_text() == "plain"


def test_a_configured_testpaths_is_the_projects_own_answer(tmp_path: Path) -> None:
    for config, text in (
        ("pytest.ini", "[pytest]\ntestpaths = checks\n"),
        ("setup.cfg", "[tool:pytest]\ntestpaths =\n    checks\n"),
        ("pyproject.toml", '[tool.pytest.ini_options]\ntestpaths = ["checks"]\n'),
    ):
        ws = git_repo(tmp_path / config, {config: text, "pkg/__init__.py": ""})
        assert collection_targets(ws) == [], config
    # Nothing recognisable as the project's tests: the whole root, as pytest would.
    bare = git_repo(tmp_path / "bare", {"t/check_x.py": "", "README": ""})
    assert collection_targets(bare) == ["."]
    # src layouts, test folders of other names, and no symlinked or hidden entries.
    ws = git_repo(
        tmp_path / "other",
        {"src/pkg/__init__.py": "", "testsuite/test_a.py": "", "unit_tests/test_b.py": "",
         ".hidden/test_c.py": ""},
    )  # fmt: skip
    (ws / "tests").symlink_to(ws / "testsuite")
    assert collection_targets(ws) == ["src", "testsuite", "unit_tests"]


def test_an_oversized_pytest_config_is_read_as_absent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The repository decides how large pytest.ini is: one over the bound is not read whole,
    its `testpaths` is not the answer, and the log says why. One at the bound still counts
    (its `testpaths` on the last line: the file is read to its end, not cut short)."""
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "__init__.py").write_text("")
    tail = "testpaths = checks\n"
    head = "[pytest]\n# " + "x" * (MAX_CONFIG_BYTES - 12 - len(tail)) + "\n"
    (ws / "pytest.ini").write_text(head + tail)
    assert (ws / "pytest.ini").stat().st_size == MAX_CONFIG_BYTES
    assert collection_targets(ws) == []
    (ws / "pytest.ini").write_text(head.replace("# ", "# x", 1) + tail)  # one byte over
    with caplog.at_level(logging.WARNING, logger="swebounty.envs.projectfiles"):
        assert collection_targets(ws) == ["pkg"]
    assert "pytest.ini is larger than" in caplog.text
    # A link is not the project's own file, whatever its size (as before the bound).
    (ws / "pytest.ini").unlink()
    (ws / "real.ini").write_text("[pytest]\ntestpaths = checks\n")
    (ws / "pytest.ini").symlink_to(ws / "real.ini")
    assert collection_targets(ws) == ["pkg"]
