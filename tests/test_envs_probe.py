"""An environment whose tests cannot import is not done (envs/probe.py, envs/repair.py): a
package that breaks on import here is left out, a module nobody installed is added, a change
that makes collection worse is undone. Offline, with a stand-in for uv whose "index" has a
package raising at import (as cfgrib does without the ecCodes library).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import uv as uv_package

from repo_helpers import git_repo
from swebounty.envs import DepSet, EnvManager, ResolvedSpec
from swebounty.envs.interpreters import discover
from swebounty.envs.probe import read_probe, top_level_owners

HOST_SITE = str(Path(pytest.__file__).resolve().parent.parent)

# compile: every requested name at 1.0, less `--excludes`; install: a module per pin, those
# named broken* raising RuntimeError on import; the venv sees the host's pytest via a .pth.
FAKE_UV = """#!{python}
import glob, json, os, subprocess, sys
args = sys.argv[1:]
open({calls!r}, "a").write(json.dumps(args) + "\\n")
if args[0] == "venv":
    sys.exit(subprocess.call([{real!r}, *args]))
BASE = {{"pip", "setuptools", "wheel", "pytest"}}
if args[:2] == ["pip", "compile"]:
    text = open(next(a for a in args if a.endswith(".in"))).read()
    skip = set()
    if "--excludes" in args:
        skip = set(open(args[args.index("--excludes") + 1]).read().split())
    for name in sorted(set(text.split()) - skip):
        print(name + "==1.0")
    sys.exit(0)
if args[:2] == ["pip", "install"]:
    python = args[args.index("--python") + 1]
    site = glob.glob(os.path.join(os.path.dirname(python), "..", "lib", "python*",
                                  "site-packages"))[0]
    open(os.path.join(site, "host.pth"), "w").write({host!r} + "\\n")
    for line in open(args[args.index("-r") + 1]).read().split():
        name = line.split("==")[0]
        if "==" not in line or name in BASE:
            continue
        os.makedirs(os.path.join(site, name), exist_ok=True)
        body = ("raise RuntimeError('lib' + {{0!r}} + '.so not found')".format(name)
                if name.startswith("broken") else "")
        open(os.path.join(site, name, "__init__.py"), "w").write(body + "\\n")
        meta = os.path.join(site, name + "-1.0.dist-info")
        os.makedirs(meta, exist_ok=True)
        open(os.path.join(meta, "METADATA"), "w").write("Name: " + name + "\\n")
        open(os.path.join(meta, "top_level.txt"), "w").write(name + "\\n")
sys.exit(0)  # freeze
"""


def fake_uv(tmp_path: Path) -> Path:
    script = tmp_path / "uv"
    script.write_text(
        FAKE_UV.format(
            python=sys.executable,
            calls=str(tmp_path / "calls.jsonl"),
            real=uv_package.find_uv_bin(),
            host=HOST_SITE,
        )
    )
    script.chmod(0o755)
    return script


def spec(plans: list[DepSet]) -> ResolvedSpec:
    found = discover()
    if not found:
        pytest.skip("needs a Python interpreter")
    return ResolvedSpec(
        python=found[0].version,
        cutoff=datetime.now(timezone.utc) - timedelta(days=30),
        install_project=False,
        plans=plans,
    )


def calls(tmp_path: Path) -> list[list[str]]:
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    return [json.loads(c) for c in lines]


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
