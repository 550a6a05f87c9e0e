"""The bytecode cache: `.pyc` files of a repository's pristine sources, shared by evaluations.

Why: every evaluation gets a fresh checkout, so without it Python compiles again every module
of the repository the tests import (sympy: 1.3 s of a 2.3 s test run, every time).

Why it cannot change a verdict:
- the files are checked-hash pycs (PEP 552): on every import Python hashes the source beside
  it and compiles that source instead when the hash differs, so a file a patch changed never
  runs cached code, and a cached file is exactly what Python would have compiled itself;
- they are compiled from the base commit's files before any patch is applied, by the
  environment's interpreter in isolated mode without `site` (`-I -S`: nothing of the
  repository or its environment runs), in the sandbox (hostile source can exhaust a compiler);
  they are stored under the git blob id the harness read from the base commit's tree, never
  under a name the sandbox chose, and only if they have the checked-hash header;
- they are copied, never linked, into the patched workspace for files no patch touched, through
  directory descriptors that follow no link: a `__pycache__` that is a link or a file, or a
  .pyc already there, is left alone.
Timestamp headers (`seed(..., stamp_before=T)`): hashing every imported source on import cost
sympy's `import sympy` 25 ms of CPU in 0.47 s (399 modules, median of 11, alternating), so a
copy gets the header bare pytest's own pycs have (PEP 552 flags 0: the source's mtime and size,
checked by one stat) when the harness can tell the file is still the base's without reading it:
not a file a patch or the reset touched (`skip`), a regular file (no link followed), its size
the base blob's, and its mtime before T, the moment the evaluation began making its workspace
(minus a second: the header keeps whole seconds). Every write the harness makes to a workspace
after T replaces the file (git apply, patch, the resets, these copies), so a file it changed
has a newer mtime; every later write, by the install step or the tests, gives a newer mtime
too, and Python then compiles the source. Only code in the sandbox that sets an mtime back on
purpose could make Python run the cached base code instead of its edit: the same base code the
untouched file holds, no gain to it, and the guard compares code with its file (genuine.py).
Any other file (a workspace checked out since T, the first of its tree) keeps the checked hash.
Left out: test files (collect.split's rules: tests/ directories, test_*.py, conftest.py...),
since pytest compiles its own rewritten copy of test modules and the rest there is mostly data
for the tests (pylint's 1,500 functional-test inputs); and modules under MIN_SOURCE_BYTES,
which compile about as fast as they copy. Interpreters before 3.7 (no hash-based pycs) get
nothing. The store is CACHE/bytecode/<cache tag>/ (by git blob id, so commits share it); it may
be deleted whole at any time, and `swebounty envs prune` drops the tags no kept environment uses.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import stat
import struct
import threading
from collections import defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from swebounty import safefs
from swebounty.collect.split import SplitRules
from swebounty.envs import Environment
from swebounty.patches import head_tree
from swebounty.repos import git, isolated_git_env
from swebounty.sandbox import Sandbox
from swebounty.sandbox.base import Mount, Policy

log = logging.getLogger(__name__)

ENABLED = True  # bench/overhead_real.py turns it off to measure what it saves
MAX_PYC_BYTES = 16 << 20
# Smaller modules (empty __init__.py files, a line or two) compile about as fast as they copy.
# The floor was 2 KiB while workspaces were written to disk; with the copies in memory, the
# modules of 256 B to 2 KiB save more than they cost: sympy-24152's sandboxed run 1.01 -> 0.88
# CPU s, sympy-23191 1.10 -> 1.03, pylint-7228 and seaborn -0.03, for 2 ms more of copying
# (alternating, median of 5, bench/overhead_real.py's tasks).
MIN_SOURCE_BYTES = 256
_VERSION = re.compile(r"^(\d+)\.(\d+)")
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")  # sha1 or sha256 object ids
# Run with the workspace's files as data only: compile each job's file to OUT/<sha>.pyc.
_COMPILE = r"""
import json, os, py_compile, sys
from concurrent.futures import ProcessPoolExecutor
tag, root = sys.argv[1], sys.argv[2]
if sys.implementation.cache_tag != tag:
    print(json.dumps({"tag": sys.implementation.cache_tag})); sys.exit(3)
def one(job):
    rel, sha = job
    src = os.path.join(root, rel)
    try:
        if os.path.getsize(src) > 8 << 20:
            return sha
        py_compile.compile(src, cfile=sha + ".pyc", dfile=src, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    except Exception:
        return sha
    return None
with open("jobs.json") as f:
    jobs = json.load(f)
workers = max(1, min(len(os.sched_getaffinity(0)), len(jobs) // 50 or 1))
if workers > 1:
    with ProcessPoolExecutor(workers) as pool:
        bad = [s for s in pool.map(one, jobs, chunksize=32) if s]
else:
    bad = [s for s in map(one, jobs) if s]
print(json.dumps({"tag": tag, "bad": bad}))
"""


@dataclass
class Plan:
    """The workspace's Python files that may get cached bytecode, and where the cache is."""

    store: Path  # CACHE/bytecode/<tag>
    tag: str  # sys.implementation.cache_tag, e.g. cpython-311
    files: dict[str, str]  # path in the workspace -> git blob id
    sizes: dict[str, int] = field(default_factory=dict)  # path -> the base blob's size

    def _entry(self, sha: str, suffix: str = ".pyc") -> Path:
        return self.store / sha[:2] / f"{sha}{suffix}"

    def missing(self) -> dict[str, str]:
        """Files with neither a cached pyc nor a record that they do not compile."""
        return {
            rel: sha
            for rel, sha in self.files.items()
            if not self._entry(sha).exists() and not self._entry(sha, ".bad").exists()
        }


def cache_tag(interpreter: str, executable: Path) -> str | None:
    """CPython's cache tag for an environment's interpreter version, if it has checked pycs."""
    match = _VERSION.match(interpreter)
    if not match or "pypy" in executable.name.lower():
        return None
    major, minor = int(match[1]), int(match[2])
    return f"cpython-{major}{minor}" if (major, minor) >= (3, 7) else None


def plan(cache_dir: Path, workspace: Path, interpreter: str, executable: Path) -> Plan | None:
    """What the cache can do for `workspace` (call it before anything changed the checkout).
    A function of HEAD's tree: made once per tree and cache tag (listing and classifying
    pylint's 3,400 files took 25 ms per evaluation)."""
    tag = cache_tag(interpreter, executable)
    if not ENABLED or tag is None:
        return None
    store = cache_dir / "bytecode" / tag
    tree = head_tree(workspace)
    key = (str(store), tree or "", MIN_SOURCE_BYTES)
    found = _plans.get(key) if tree else None
    if found is None:
        found = _plan_files(workspace, tree or "HEAD")
        if tree:
            with _plans_lock:
                _plans[key] = found
                while len(_plans) > _MAX_PLANS:
                    _plans.pop(next(iter(_plans)))
    files, sizes = found
    return Plan(store=store, tag=tag, files=dict(files), sizes=dict(sizes))


_MAX_PLANS = 256  # trees whose plan is kept in memory (a few hundred KiB each at most)
_plans: dict[tuple[str, str, int], tuple[dict[str, str], dict[str, int]]] = {}
_plans_lock = threading.Lock()


def _plan_files(workspace: Path, tree: str) -> tuple[dict[str, str], dict[str, int]]:
    """The modules of `tree` worth caching: path -> git blob id, and path -> blob size."""
    # The base commit's tree, with each blob's size: "<mode> <type> <id> <size>\t<path>".
    listing = git(workspace, "ls-tree", "-r", "-l", "-z", tree, env=isolated_git_env()).stdout
    rules = SplitRules()
    files: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for record in listing.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, rel = record.partition("\t")
        fields = meta.split()
        if len(fields) != 4 or fields[0] not in ("100644", "100755") or not rel.endswith(".py"):
            continue
        if not _SHA.match(fields[2]) or not fields[3].isdigit() or rules.classify(rel) == "test":
            continue
        if int(fields[3]) >= MIN_SOURCE_BYTES:
            files[rel], sizes[rel] = fields[2], int(fields[3])
    packages = {rel.rpartition("/")[0] for rel in files_named(listing, "__init__.py")}
    files = {rel: sha for rel, sha in files.items() if _importable(rel, packages)}
    return files, {rel: sizes[rel] for rel in files}


def files_named(listing: bytes, name: str) -> list[str]:
    """Paths in an `ls-tree -z` listing whose file name is `name`."""
    paths = [r.partition("\t")[2] for r in listing.decode("utf-8", "surrogateescape").split("\0")]
    return [p for p in paths if p == name or p.endswith("/" + name)]


def _importable(rel: str, packages: set[str]) -> bool:
    """A top-level module, or one in a chain of regular packages (each directory has its
    __init__.py) from the top or from src/ or lib/: what `import` reaches. The rest (pylint's
    doc examples, scripts, fixtures) is read as data if at all."""
    dirs = rel.split("/")[:-1]
    if dirs and dirs[0] in ("src", "lib") and "/".join(dirs[:1]) not in packages:
        dirs = dirs[1:]
        prefix = rel.split("/")[0] + "/"
    else:
        prefix = ""
    return all(prefix + "/".join(dirs[: i + 1]) in packages for i in range(len(dirs)))


def prepare(
    cache_dir: Path,
    env: Environment,
    workspace: Path,
    lease: Callable[[], AbstractContextManager[Sandbox]],
    policy: Policy,
    out: Path,
) -> Plan | None:
    """The plan for a fresh checkout of the base commit, its misses compiled while the
    workspace is still the base's alone. Never raises: the cache only saves time."""
    try:
        pyc = plan(cache_dir, workspace, env.interpreter, env.interpreter_executable)
        if pyc is not None and pyc.missing():
            with lease() as sandbox:
                compile_missing(
                    pyc, workspace, env.interpreter_executable, [env.interpreter_prefix],
                    sandbox, policy, out,
                )  # fmt: skip
    except Exception as exc:  # the tests run the same without it
        log.warning("bytecode cache not used for %s: %s: %s", workspace, type(exc).__name__, exc)
        return None
    return pyc


def compile_missing(
    pyc: Plan, workspace: Path, python: Path, mounts: list[Path], sandbox: Sandbox,
    policy: Policy, out: Path,
) -> int:  # fmt: skip
    """Compile what the store lacks from the pristine `workspace` in the sandbox; returns how
    many files were added. `out` must not exist; it is the sandbox's only writable place."""
    jobs = pyc.missing()
    if not jobs:
        return 0
    out.mkdir(mode=0o700)
    # A file, not stdin: a pipe's buffer is the sandbox's limit for stdin, and sympy's list of
    # files is larger.
    (out / "jobs.json").write_text(json.dumps(sorted(jobs.items())))
    sandbox.prepare_workdir(out)
    run = sandbox.run(
        [str(python), "-I", "-S", "-c", _COMPILE, pyc.tag, str(workspace)],
        workdir=out,
        mounts=[Mount(path=workspace), *(Mount(path=p) for p in mounts)],
        policy=policy.model_copy(update={"env": {}, "timeout_s": min(policy.timeout_s, 600.0)}),
    )
    try:
        report = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        report = None
    if run.returncode != 0 or not isinstance(report, dict) or report.get("tag") != pyc.tag:
        log.warning(
            "bytecode cache: compiling %d files failed (exit %s): %s",
            len(jobs), run.returncode, (run.stderr or run.stdout)[-500:],
        )  # fmt: skip
        return 0
    bad = set(report.get("bad") or ()) & set(jobs.values())
    added = 0
    for sha in sorted(set(jobs.values())):
        data = None if sha in bad else safefs.read_beneath(out, f"{sha}.pyc", MAX_PYC_BYTES)
        good = data is not None and _checked_hash_pyc(data)
        if not good and sha not in bad:
            log.debug("bytecode cache: no usable pyc for %s", sha)
            continue
        _store(pyc._entry(sha, ".pyc" if good else ".bad"), data if good and data else b"")
        added += good
    return added


def _checked_hash_pyc(data: bytes) -> bool:
    """A PEP 552 header whose flags say "hash-based, checked" (bit 0 and bit 1)."""
    return len(data) > 16 and data[2:4] == b"\r\n" and int.from_bytes(data[4:8], "little") == 3


def _store(path: Path, data: bytes) -> None:
    """Write a store entry atomically: a concurrent evaluation sees it whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def seed(pyc: Plan, workspace: Path, skip: set[str], *, stamp_before: float | None = None) -> int:
    """Copy the cached pycs of the files no patch touched (`skip`) into the patched workspace;
    returns how many were copied. Never follows a link, never replaces a file. With
    `stamp_before` (when the evaluation began making `workspace`), a copy whose source is
    plainly the base's gets a timestamp header (see the module docstring)."""
    by_dir: dict[str, list[tuple[str, str, int | None]]] = defaultdict(list)
    for rel, sha in pyc.files.items():
        if rel not in skip:
            parent, _, name = rel.rpartition("/")
            by_dir[parent].append((name, sha, pyc.sizes.get(rel)))
    copied = 0
    for parent, entries in by_dir.items():
        try:
            with safefs.open_dir(workspace, parent.split("/") if parent else []) as dfd:
                copied += _seed_dir(pyc, dfd, entries, stamp_before)
        except OSError:
            continue  # gone, a link or not a directory after the patch: no bytecode there
    return copied


def _timestamp_header(
    dfd: int, name: str, size: int | None, stamp_before: float | None
) -> bytes | None:
    """Bytes 4-16 of a timestamp pyc for the source `name`, if it is plainly the base's file."""
    if stamp_before is None or size is None:
        return None
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size != size or st.st_mtime >= stamp_before - 1:
        return None
    return struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF, size & 0xFFFFFFFF)


def _seed_dir(
    pyc: Plan, dfd: int, entries: list[tuple[str, str, int | None]], stamp_before: float | None
) -> int:
    # One open per cached file, no stat and no Path: a stat, a Path and read_bytes per file
    # were two thirds of seeding sympy's 622 modules.
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    store = str(pyc.store)
    cache_fd = -1
    copied = 0
    try:
        for name, sha, size in entries:
            try:
                src = os.open(f"{store}/{sha[:2]}/{sha}.pyc", os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # not cached (it did not compile, or the cache was cleared)
            try:
                if cache_fd < 0:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir("__pycache__", 0o755, dir_fd=dfd)
                    # a link here raises: not followed
                    cache_fd = os.open("__pycache__", flags, dir_fd=dfd)
                header = _timestamp_header(dfd, name, size, stamp_before)
                try:
                    fd = os.open(
                        f"{name[:-3]}.{pyc.tag}.pyc",
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                        0o644,
                        dir_fd=cache_fd,
                    )
                except OSError as exc:
                    if exc.errno in (errno.EEXIST, errno.ELOOP):
                        continue  # the repository's own file, or a link: not ours to replace
                    raise
                try:
                    first = True
                    while chunk := os.read(src, 1 << 20):
                        if first and header is not None and _checked_hash_pyc(chunk):
                            chunk = chunk[:4] + header + chunk[16:]
                        first = False
                        view = memoryview(chunk)
                        while view:
                            view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
                copied += 1
            finally:
                os.close(src)
    finally:
        if cache_fd >= 0:
            os.close(cache_fd)
    return copied
