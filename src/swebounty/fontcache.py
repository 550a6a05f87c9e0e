"""The font cache: matplotlib's list of fonts, built once per environment, copied into each run.

Why: the first time matplotlib is imported with no font list in its cache directory
(~/.cache/matplotlib: in the sandbox's private, fresh /tmp) it scans the system's fonts and its
own, and writes the list there. Every sandboxed run started without one: seaborn's tests spent
0.24 s of CPU building it again each time.

Why it cannot change a verdict, nor let one run reach another:
- the list is built by the environment's own matplotlib, in the sandbox, with the test run's
  variables (HOME=/tmp...) and nothing of the workspace (`python -I` in an empty directory):
  the list the run would have built itself, since every run sees the same fonts;
- it is kept in the environment's directory (CACHE/envs/<key>/fontcache/<fingerprint>/: gone
  when the environment is rebuilt or pruned), under a fingerprint of the font directories
  (installing or removing system fonts builds it again), written by the harness from what the
  build returned (regular files with a plain name and a bounded size), and mounted read-only;
- the run's first process (pytest_guard/run_pytest.py) copies it into the run's private /tmp,
  where matplotlib looks for it, before anything of the task runs: a test may change its copy,
  never the kept one.
Environments without matplotlib get nothing; nor do runs whose cache directory is not in their
private /tmp (MPLCONFIGDIR or XDG_CACHE_HOME set elsewhere, the unsafe backend's shared /tmp).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import uuid
from pathlib import Path

from swebounty import safefs
from swebounty.envs import Environment
from swebounty.sandbox import Sandbox
from swebounty.sandbox.base import Mount, Policy

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MAX_FILE_BYTES = 16 << 20
# Where matplotlib and fontconfig find fonts on Linux (font_manager.X11FontDirectories).
FONT_DIRS = (
    "/usr/share/fonts",
    "/usr/local/share/fonts",
    "/usr/X11R6/lib/X11/fonts",
    "/usr/X11/lib/X11/fonts",
    "/usr/lib/openoffice/share/fonts/truetype",
    "/etc/fonts",
)
_WHERE = ("HOME", "MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")
_NAME = re.compile(r"^fontlist[A-Za-z0-9_.-]{0,60}$", re.IGNORECASE)  # fontlist-v330.json
# Run by the environment's interpreter in an empty directory: copy out the font list(s).
_BUILD = r"""
import json, os, shutil
import matplotlib
import matplotlib.font_manager
cache = matplotlib.get_cachedir()
names = sorted(n for n in os.listdir(cache) if n.lower().startswith("fontlist"))
names = [n for n in names if os.path.isfile(os.path.join(cache, n))]
for n in names:
    shutil.copyfile(os.path.join(cache, n), n)
print(json.dumps({"cachedir": cache, "files": names}))
"""


def has_matplotlib(env: Environment) -> bool:
    minor = ".".join(env.interpreter.split(".")[:2])
    return (env.path / "lib" / f"python{minor}" / "site-packages" / "matplotlib").is_dir()


def fingerprint(variables: dict[str, str]) -> str:
    """What the font list depends on besides the environment: where matplotlib keeps it and
    looks for the user's fonts, and every system font directory's identity and mtime (a
    directory's mtime changes when a font is added to it or removed)."""
    h = hashlib.sha256(json.dumps([variables.get(k) for k in _WHERE]).encode())
    for root in FONT_DIRS:
        for top, dirs, _ in os.walk(root):
            dirs.sort()
            try:
                st = os.stat(top)
            except OSError:
                continue
            h.update(f"{top}\0{st.st_ino}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:16]


def seeds(
    env: Environment, sandbox: Sandbox, policy: Policy, variables: dict[str, str]
) -> dict[str, str]:
    """Files to copy into the run's private /tmp before it starts: {path inside: kept copy},
    the kept copies built first if this environment has none yet. Never raises: the run is
    the same without them, only slower."""
    if not sandbox.isolated or not has_matplotlib(env):
        return {}
    try:
        kept = env.path.parent / "fontcache" / fingerprint(variables)
        if not (kept / MANIFEST).is_file():
            _build(env, sandbox, policy, variables, kept)
        manifest = json.loads((kept / MANIFEST).read_text())
    except Exception as exc:
        log.warning("font cache not used for %s: %s: %s", env.key, type(exc).__name__, exc)
        return {}
    cachedir = manifest.get("cachedir")
    if not isinstance(cachedir, str) or not _private(cachedir):
        return {}
    return {f"{cachedir}/{name}": str(kept / name) for name in manifest.get("files", [])}


def _private(path: str) -> bool:
    """An absolute, normalized path under the sandbox's own /tmp."""
    return path.startswith("/tmp/") and os.path.normpath(path) == path


def _build(
    env: Environment, sandbox: Sandbox, policy: Policy, variables: dict[str, str], kept: Path
) -> None:
    """Build the font list in the sandbox and keep it at `kept` (atomically: a concurrent
    evaluation sees it whole or not at all). A build that fails is kept as a manifest with no
    files, so that it is not tried again on every run."""
    kept.parent.mkdir(mode=0o755, exist_ok=True)
    work = kept.parent / f".build-{uuid.uuid4().hex[:8]}"
    out, tmp = work / "out", work / "kept"
    work.mkdir(mode=0o700)
    try:
        out.mkdir()
        tmp.mkdir(mode=0o755)
        sandbox.prepare_workdir(out)
        run = sandbox.run(
            [str(env.python), "-I", "-c", _BUILD],
            workdir=out,
            mounts=[Mount(path=env.path), Mount(path=env.interpreter_prefix)],
            policy=policy.model_copy(
                update={"env": variables, "timeout_s": min(policy.timeout_s, 300.0)}
            ),
        )
        manifest = _collect(run.stdout, out, tmp)
        if manifest is None and run.timed_out:
            raise TimeoutError("building the font list timed out")  # a busy machine: retry
        if manifest is None:
            log.warning(
                "font cache: building it for %s failed (exit %s): %s",
                env.key, run.returncode, (run.stderr or run.stdout)[-500:],
            )  # fmt: skip
            manifest = {"cachedir": None, "files": []}
        (tmp / MANIFEST).write_text(json.dumps(manifest))
        for child in tmp.iterdir():
            child.chmod(0o644)
        try:
            os.rename(tmp, kept)
        except OSError:
            if not (kept / MANIFEST).is_file():  # else another evaluation kept one first
                raise
    finally:
        safefs.remove_tree(work)


def _collect(stdout: str, out: Path, tmp: Path) -> dict[str, object] | None:
    """Copy the files the build reported from `out` (the sandbox's) to `tmp` (the harness's),
    checked; the manifest, or None if the build's report is not what _BUILD prints."""
    try:
        report = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    if not isinstance(report, dict):
        return None
    cachedir, names = report.get("cachedir"), report.get("files")
    if not isinstance(cachedir, str) or not isinstance(names, list) or not names:
        return None
    if not all(isinstance(n, str) and _NAME.match(n) for n in names) or len(names) > 8:
        return None
    for name in names:
        data = safefs.read_beneath(out, name, MAX_FILE_BYTES)
        if data is None:
            return None
        (tmp / name).write_bytes(data)
    return {"cachedir": cachedir, "files": sorted(names)}
