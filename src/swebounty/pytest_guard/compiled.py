"""The guarded runner's own bytecode, compiled once per interpreter version, not once per run.

The sandbox mounts this directory read-only, so Python could never cache the runner's modules
here: every test run compiled run_pytest.py, swebounty_guard.py, genuine.py and machinery.py
(~950 lines) again before pytest started. Instead the harness copies those four files to
CACHE/guard/<cache tag>-<digest of the four>/ beside pycs compiled there by the environment's
interpreter, and starts the runner as that directory's run_pytest.pyc (Python runs a .pyc given
as its script). run_pytest.py loads the guard from its own directory, where it then finds the
copies and their pycs.

Why it cannot change a verdict or open a way in: the files are the harness's own, compiled by
the environment's base interpreter in isolated mode without `site` (`-I -S`: nothing of an
environment or a repository runs), outside the sandbox; the directory is written whole under a
temporary name and renamed, named by the sources' digest (a changed guard gets a new one), and
the sandbox only ever gets it read-only. Its pycs are unchecked-hash (PEP 552): nothing but the
harness writes there, so Python need not read the sources again. The code objects name the
copies as their files (tracebacks, and genuine.py's comparison of code with its file).
Interpreters before 3.7 (no hash-based pycs), or any failure: the sources, compiled per run.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from swebounty.bytecode import cache_tag

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
FILES = (
    "run_pytest.py",
    "swebounty_guard.py",
    "genuine.py",
    "forwarders.py",
    "machinery.py",
    "reportclass.py",
    "junitfile.py",
    "timelimit.py",
    "hypothesis_profile.py",
    "conftests.py",
    "testcalls.py",
    "fixtures.py",
    "reads.py",
)
RUNNER_PYC = "run_pytest.pyc"
# Argv: the temporary directory to write, the final one (the code's file names), the tag.
_COMPILE = r"""
import os, py_compile, sys
tmp, final, tag = sys.argv[1:4]
if sys.implementation.cache_tag != tag:
    sys.exit(3)
mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
for name in sys.argv[4:]:
    stem = name[:-3]
    if name == "run_pytest.py":
        cfile = os.path.join(tmp, stem + ".pyc")
    else:
        cfile = os.path.join(tmp, "__pycache__", stem + "." + tag + ".pyc")
    py_compile.compile(os.path.join(tmp, name), cfile=cfile, dfile=os.path.join(final, name),
                       doraise=True, invalidation_mode=mode)
"""

_made: dict[tuple[str, str], Path | None] = {}
_lock = threading.Lock()


def compiled_runner(cache_dir: Path, interpreter: str, python: Path) -> Path | None:
    """run_pytest.pyc for `python` (the environment's base interpreter, of version
    `interpreter`), compiled on first use; None when the runner must start from its source."""
    tag = cache_tag(interpreter, python)
    if tag is None:
        return None
    cache_dir = cache_dir.resolve()  # the code names its files by this path, in the sandbox too
    key = (str(cache_dir), str(python))
    with _lock:
        if key not in _made:
            _made[key] = _make(cache_dir, tag, python)
        return _made[key]


def _make(cache_dir: Path, tag: str, python: Path) -> Path | None:
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes() + b"\0")
    final = cache_dir / "guard" / f"{tag}-{digest.hexdigest()[:20]}"
    if (final / RUNNER_PYC).is_file():  # only ever renamed into place whole
        return final / RUNNER_PYC
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
    try:
        os.chmod(tmp, 0o755)  # the sandbox uid reads it
        (tmp / "__pycache__").mkdir(mode=0o755)
        for name in FILES:
            shutil.copyfile(HERE / name, tmp / name)
        run = subprocess.run(
            [str(python), "-I", "-S", "-c", _COMPILE, str(tmp), str(final), tag, *FILES],
            capture_output=True,
            text=True,
            env={},
            timeout=120,
            check=False,
        )
        if run.returncode != 0:
            log.warning("guard not precompiled for %s: %s", python, run.stderr[-300:])
            return None
        for path in (tmp, tmp / "__pycache__"):
            for entry in path.iterdir():
                if entry.is_file():
                    os.chmod(entry, 0o644)
        try:
            os.rename(tmp, final)
        except OSError:  # another process made it first: theirs is as good
            if not (final / RUNNER_PYC).is_file():
                raise
        return final / RUNNER_PYC
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("guard not precompiled for %s: %s", python, exc)
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
