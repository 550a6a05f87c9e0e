"""A stand-in for uv over a tiny fake index, for environment tests that must run offline:
`pip compile` pins every requested name at 1.0 (less `--excludes`; a name starting `missing`
does not exist), `pip install` writes a module per pin (those named broken* raise RuntimeError
on import, as cfgrib does without the ecCodes library; one named nobuild* fails the install, as
an sdist that cannot build here), and the venv gets a copy of the host's pytest."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import uv as uv_package

from swebounty.envs import DepSet, ResolvedSpec
from swebounty.envs.interpreters import discover

HOST_SITE = str(Path(pytest.__file__).resolve().parent.parent)

# compile: every requested name at 1.0, less `--excludes`; install: a module per pin, those
# named broken* raising RuntimeError on import; the venv gets a copy of the host's pytest.
FAKE_UV = """#!{python}
import glob, json, os, shutil, subprocess, sys
RUNNER = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py.py", "exceptiongroup",
          "tomli", "typing_extensions.py", "pygments")
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
    names = set(word.split("==")[0] for word in text.split())
    if any(n.startswith("missing") for n in names - skip):
        sys.stderr.write("error: No solution found when resolving dependencies\\n  cause: "
                         "Because there are no versions of missingdist, we can conclude...\\n")
        sys.exit(1)
    for name in sorted(names - skip):
        print(name + "==1.0")
    sys.exit(0)
if args[:2] == ["pip", "install"]:
    python = args[args.index("--python") + 1]
    site = glob.glob(os.path.join(os.path.dirname(python), "..", "lib", "python*",
                                  "site-packages"))[0]
    # The test runner itself, copied in: the build sandbox shows the venv, not the host's.
    for top in RUNNER:
        found = os.path.join({host!r}, top)
        if os.path.isdir(found) and not os.path.exists(os.path.join(site, top)):
            shutil.copytree(found, os.path.join(site, top), symlinks=True)
        elif os.path.isfile(found):
            shutil.copy(found, site)
    pins = open(args[args.index("-r") + 1]).read().split()
    for name in (line.split("==")[0] for line in pins):
        if name.startswith("nobuild"):  # an sdist whose build needs what the machine lacks
            sys.stderr.write("error: Failed to build `" + name + "==1.0`\\n")
            sys.exit(1)
    for line in pins:
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
