"""The collection probe: do the base commit's tests even import in a freshly built environment?

An environment is not done when its tests cannot start. Two causes are the environment's, not
the code's, and both are named by the traceback pytest prints while collecting:
- an installed package that breaks on import here: an optional extra that needs a system
  library the machine lacks (`cfgrib` raises `RuntimeError: ecCodes library not found`, and
  every xarray test module imports it through `xarray/tests/__init__.py`), a plugin of another
  era. The package is the first frame of the traceback inside the environment's
  site-packages: the import the project made, not what that package imported in turn;
- a module no plan brought in (`ImportError while loading conftest ... No module named
  'hypothesis'`): its distribution, by the import name (or `IMPORT_NAMES`).

`probe` runs `pytest --collect-only` on the build copy (the same code every task of the spec
starts from), in the build sandbox (buildbox.py: the conftest is the repository's code), on the
project's test locations (`collection_targets`: its configured `testpaths`, else its packages and
test folders), never on scripts beside them: sympy's `bin/test_optional_dependencies.py` runs
half of sympy's test suite when imported, which made every sympy probe take over 10 minutes. And
`read_probe` turns what it printed into a `Probe`: how bad collection is, the packages to leave
out and the distributions to add. build.py acts on it (`fix_collection`), keeping a change only
when collection gets better.

Without assertion rewriting (`--assert=plain`): what imports and what breaks is the same, and
rewriting every test module was most of the cost. Collecting all of sympy took 130 CPU-s for
each of its environments (most of a sympy task's evaluation from cold), 25 without it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from swebounty import safefs
from swebounty.envs import buildbox
from swebounty.envs.failures import StepFailed
from swebounty.envs.projectfiles import read_config

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 900.0
CACHE_DIR = ".swebounty-probe-cache"
# Import names whose distribution is named otherwise (a fact about those packages, not about
# any repository); every other missing module is looked up under its own name.
IMPORT_NAMES = {
    "PIL": "Pillow",
    "yaml": "PyYAML",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "cv2": "opencv-python",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "attr": "attrs",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "jwt": "PyJWT",
    "google.protobuf": "protobuf",
    "mpl_toolkits": "matplotlib",
    "tlz": "toolz",  # toolz ships `tlz` (cytoolz if installed, else toolz) since 0.10
    "IPython": "ipython",
    "sortedcontainers": "sortedcontainers",
    "Bio": "biopython",
    "serial": "pyserial",
    "zmq": "pyzmq",
    "MySQLdb": "mysqlclient",
    "psycopg2": "psycopg2-binary",
}
# Never left out: the test runner and the tools every environment has.
KEEP = {"pytest", "_pytest", "pluggy", "py", "pip", "setuptools", "pkg_resources", "wheel"}
# Modules of the interpreter itself: a missing one (`_lzma`, `tkinter`) is no distribution.
STDLIB_HINT = re.compile(r"^_|^(tkinter|lzma|bz2|sqlite3|readline|curses|dbm|ssl)$")

_SECTION = re.compile(r"^_{3,} ERROR collecting (.+?) _{3,}\s*$", re.M)
_CONFTEST = re.compile(r"^ImportError while loading conftest '([^']+)'", re.M)
_MISSING = re.compile(r"No module named '?([A-Za-z_][\w.]*)'?")
_ERROR_LINE = re.compile(r"^E\s+(.+)$", re.M)


@dataclass
class Probe:
    """What collecting the base commit's tests said about the environment."""

    ran: bool = False  # False: pytest could not be run or timed out: nothing is known
    conftest_failed: bool = False  # no test could be collected at all
    errors: int = 0  # test modules that failed at collection
    broken: dict[str, str] = field(default_factory=dict)  # distribution -> the error it raised
    missing: dict[str, str] = field(default_factory=dict)  # distribution -> the error naming it
    detail: str = ""  # exit code, and pytest's last line

    @property
    def badness(self) -> tuple[int, int]:
        """Lower is better: a conftest that fails to load loses every test."""
        return (1 if self.conftest_failed else 0, self.errors)

    @property
    def clean(self) -> bool:
        return self.ran and self.badness == (0, 0)

    def describe(self) -> str:
        if not self.ran:
            return f"collection could not be checked ({self.detail})"
        if self.clean:
            return "the base commit's tests collect"
        what = "the conftest does not load" if self.conftest_failed else f"{self.errors} error(s)"
        causes = [f"{d} breaks on import ({why})" for d, why in self.broken.items()]
        causes += [f"{d} is not installed ({why})" for d, why in self.missing.items()]
        return f"collection: {what}" + (f"; {'; '.join(causes)}" if causes else "")


def probe(
    python: Path,
    project: Path,
    sites: list[Path],
    roots: set[str],
    env: dict[str, str],
    log_path: Path,
    timeout: float = PROBE_TIMEOUT,
    reads: list[Path] | None = None,
) -> Probe:
    """Collect the tests of `project` with `python` (which imports the project and the
    environment whose site-packages are `sites`). `roots`: the project's own top-level import
    names, never a package to add or leave out. Collecting runs the repository's conftest.py:
    in the build sandbox (buildbox.py), writing only `project`, seeing `reads` (the
    interpreter, the environment, the layer) read-only."""
    # The cache stays on (plugins read config.cache: testing.pytest_command), in the tree
    # (the sandbox's only writable place) under a name no install keeps, removed after.
    cache = project / CACHE_DIR
    argv = [str(python), "-m", "pytest", "--collect-only", "-q", "--tb=short", "--assert=plain"]
    argv += ["-o", f"cache_dir={cache}", "-W", "ignore", *collection_targets(project)]
    try:
        output = buildbox.run_step("probe collection", argv, log_path, workdir=project,
                                   reads=reads or [], env=env, timeout=timeout)  # fmt: skip
        code = 0
    except StepFailed as exc:
        if exc.kind == "timeout":
            return Probe(detail=f"timed out after {timeout:.0f} s")
        output, code = exc.output, 1
    finally:
        safefs.remove_tree(cache)
    return read_probe(output, code, sites, roots)


# Where pytest reads its options; a `testpaths` there is the project's own answer.
_CONFIGS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_TESTPATHS = re.compile(r"^\s*testpaths\s*=", re.M)
_TEST_DIR = re.compile(r"^test|[_-]tests?$", re.I)  # tests, testing, testsuite, unit_tests
_TEST_FILE = re.compile(r"^test_.*\.py$|_test\.py$")


def collection_targets(project: Path) -> list[str]:
    """What the probe collects: nothing named when the project configures `testpaths` (pytest
    then collects those), else its packages (at the root or under src/), its test folders and
    root test modules. Not the rest of the root: scripts and docs there (bin/, release/,
    doc/) are not the tests any task runs, and importing them may run anything. Nothing
    recognisable: the whole root, as pytest would."""
    for name in _CONFIGS:
        text = read_config(project / name, project, follow_links=False)
        if text is not None and _TESTPATHS.search(text):
            return []
    targets: list[str] = []
    for entry in sorted(project.iterdir()):
        if entry.is_symlink() or entry.name.startswith("."):
            continue
        if entry.is_dir():
            package = (entry / "__init__.py").is_file() or entry.name == "src"
            if package or _TEST_DIR.search(entry.name):
                targets.append(entry.name)
        elif _TEST_FILE.match(entry.name):
            targets.append(entry.name)
    return targets or ["."]


def read_probe(output: str, code: int, sites: list[Path], roots: set[str]) -> Probe:
    """The Probe of what `pytest --collect-only` printed."""
    owners: dict[str, str] = {}
    for site in sites:
        owners.update(top_level_owners(site))
    found = Probe(ran=True)
    lines = [line for line in output.strip().splitlines() if line.strip()]
    found.detail = f"exit {code}: {lines[-1].strip('= ') if lines else 'no output'}"
    blocks: list[str] = []
    conftest = _CONFTEST.search(output)
    if conftest:
        found.conftest_failed = True
        after = _SECTION.search(output, conftest.end())
        blocks.append(output[conftest.start() : after.start() if after else len(output)])
    marks = list(_SECTION.finditer(output))
    found.errors = len(marks)
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(output)
        blocks.append(output[mark.end() : end])
    if code and not blocks and "error" in found.detail.lower():
        found.errors = 1  # an error pytest reported without a section of its own
    for block in blocks:
        _read_block(block, sites, owners, roots, found)
    return found


def _read_block(
    block: str, sites: list[Path], owners: dict[str, str], roots: set[str], found: Probe
) -> None:
    errors = _ERROR_LINE.findall(block)
    said = errors[-1].strip() if errors else block.strip().splitlines()[-1].strip()
    said = said[:200]
    missing = _MISSING.search(errors[-1]) if errors else None
    if missing:
        module = missing.group(1)
        top = module.split(".")[0]
        if top not in roots and not STDLIB_HINT.match(top):
            dist = IMPORT_NAMES.get(module) or IMPORT_NAMES.get(top) or top
            if canonicalize_name(dist) not in {canonicalize_name(k) for k in KEEP}:
                found.missing.setdefault(dist, said)
            return
    for top in _site_frames(block, sites):
        if top in roots or top in KEEP:
            continue
        dist = owners.get(top)
        if dist and canonicalize_name(dist) not in {canonicalize_name(k) for k in KEEP}:
            found.broken.setdefault(dist, said)
        return  # the outermost frame inside the environment: the import the project made


def _site_frames(block: str, sites: list[Path]) -> list[str]:
    """Top-level names of the traceback's frames inside `sites`, outermost first."""
    tops: list[str] = []
    prefixes = sorted({str(s).rstrip("/") + "/" for s in sites}, key=len, reverse=True)
    for line in block.splitlines():
        for prefix in prefixes:
            at = line.find(prefix)
            if at < 0:
                continue
            rest = line[at + len(prefix) :]
            name = re.match(r"[A-Za-z_][\w]*", rest)
            if name:
                tops.append(name.group(0))
            break
    return tops


def top_level_owners(site: Path) -> dict[str, str]:
    """Top-level import name -> the distribution that installed it, from the metadata in
    `site` (top_level.txt, else the first part of each RECORD path)."""
    found: dict[str, str] = {}
    if not site.is_dir():
        return found
    for meta in sorted([*site.glob("*.dist-info"), *site.glob("*.egg-info")]):
        dist = _dist_name(meta)
        tops: set[str] = set()
        top_level = meta / "top_level.txt"
        record = meta / "RECORD"
        if top_level.is_file():
            tops = {t.strip() for t in top_level.read_text(errors="replace").split() if t}
        elif record.is_file():
            for row in record.read_text(errors="replace").splitlines():
                first = row.split(",", 1)[0].split("/", 1)[0]
                if first and not first.endswith((".dist-info", ".data", ".pth")) and first != "..":
                    tops.add(first[:-3] if first.endswith(".py") else first)
        for top in tops:
            found.setdefault(top.split("/")[0], dist)
    return found


def _dist_name(meta: Path) -> str:
    for name in ("METADATA", "PKG-INFO"):
        path = meta / name
        if path.is_file():
            m = re.search(r"^Name:\s*(\S+)", path.read_text(errors="replace"), re.M)
            if m:
                return m.group(1)
    return meta.name.split("-")[0]


def own_roots(project: Path) -> set[str]:
    """The project's top-level import names (packages and modules at its root or in src/)."""
    roots: set[str] = set()
    for base in (project, project / "src"):
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            if entry.is_dir() and (entry / "__init__.py").is_file():
                roots.add(entry.name)
            elif entry.suffix == ".py":
                roots.add(entry.stem)
    return roots
