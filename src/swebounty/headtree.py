"""What a workspace's HEAD (its base commit) holds, read with git: HEAD's tree, the entries of
its paths, its blobs; and how the harness runs git and GNU patch (a fixed environment, a time
bound). What is read from a tree id is remembered: a tree's id hashes its content.

Every evaluation asks for the entries of the test patch's files (patches.reset_files) and of
pytest's own modules (pytest_guard.runner_config): each question was a `git ls-tree` process;
now the first lists the tree once and later ones read that listing.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections import OrderedDict
from pathlib import Path

from swebounty import safefs
from swebounty.diffs import PatchError

COMMAND_TIMEOUT = 120.0
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # sha1 or sha256

# Git and GNU patch must behave the same whatever the host's configuration says.
_TOOL_ENV = {
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_LITERAL_PATHSPECS": "1",
    "QUOTING_STYLE": "literal",
    "PATCH_GET": "0",
}


def raise_if_interrupted(proc: subprocess.CompletedProcess[bytes]) -> None:
    """Ctrl-C in a terminal reaches the whole process group: a git this harness started dies of
    it a moment before the main thread learns of it. Its failure is the interruption, not a fact
    about the task (a missing commit, a patch that does not apply): raise it as one, so the
    attempt is not saved as an `error` verdict whatever the timing (runs.evaluate_run)."""
    if proc.returncode == -signal.SIGINT:
        raise KeyboardInterrupt(f"{Path(str(proc.args[0])).name} was interrupted")


def _run(
    argv: list[str], cwd: Path, data: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            input=data,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
            env=_tool_env(),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise PatchError(f"{' '.join(argv[:3])} took over {COMMAND_TIMEOUT:.0f}s") from exc
    except FileNotFoundError as exc:
        raise PatchError(f"{argv[0]} is not installed; install it and retry") from exc
    raise_if_interrupted(proc)  # Ctrl-C, not a fact about the patch
    return proc


def _tool_env() -> dict[str, str]:
    # An inherited GIT_DIR, GIT_INDEX_FILE or GIT_WORK_TREE would point git at another repo.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, **_TOOL_ENV}


def _output(proc: subprocess.CompletedProcess[bytes]) -> str:
    return (proc.stderr + proc.stdout).decode("utf-8", errors="replace")


def head_tree(workspace: Path) -> str | None:
    """The id of HEAD's tree in `workspace` (None if it has none): what a fresh checkout
    holds, so a key for what is read from it before any patch (spec, bytecode plan, the
    base's test infrastructure). One git process (~2 ms, three times per evaluation) the first
    time a commit is met; then HEAD's commit id is read from .git (HEAD and its loose ref, no
    link followed) and its tree remembered: a commit's id hashes its tree's, so the pair never
    changes (and every workspace of one base tree has the same commit, repos.make_workspace)."""
    if not (workspace / ".git").exists():
        return None  # never a repository above it: git would look there
    head = _head_commit(workspace)
    if head is not None and head in _commit_trees:
        return _commit_trees[head]
    git_dir = f"--git-dir={workspace / '.git'}"
    proc = _run(["git", git_dir, "rev-parse", "HEAD^{commit}", "HEAD^{tree}", "--"], workspace)
    ids = proc.stdout.decode("ascii", "replace").split()[:-1]  # the last is the "--"
    if proc.returncode != 0 or len(ids) != 2 or not all(_OBJECT_ID.fullmatch(i) for i in ids):
        return None
    if len(_commit_trees) >= 4096:
        _commit_trees.clear()
    _commit_trees[ids[0]] = ids[1]
    return ids[1]


_commit_trees: dict[str, str] = {}  # commit id -> its tree's id


def _head_commit(workspace: Path) -> str | None:
    """HEAD's commit id as .git holds it (a commit id, or a ref to a loose branch file), or
    None when it is anything else (a packed ref, a link, reftable...): then git is asked."""
    head = safefs.read_beneath(workspace, ".git/HEAD", 4096)
    text = (head or b"").decode("ascii", "replace").strip()
    if text.startswith("ref: refs/heads/"):
        try:
            ref = safefs.read_beneath(workspace, f".git/{text[5:]}", 4096)
        except OSError:  # a name with ".." in it
            return None
        text = (ref or b"").decode("ascii", "replace").strip()
    return text if _OBJECT_ID.fullmatch(text) else None


def head_entries(workspace: Path, paths: list[str]) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob id) in HEAD for each of `paths` that HEAD has as a file (or a
    submodule, mode 160000). Looked up in HEAD's tree's listing (tree_listing): no git process
    once the tree was listed."""
    tree = head_tree(workspace)
    listing = tree_listing(workspace, tree) if tree else None
    if listing is not None:
        return {p: listing[p] for p in paths if p in listing}
    proc = _run(["git", "ls-tree", "-r", "-z", "--full-tree", "HEAD", "--", *paths], workspace)
    if proc.returncode != 0:
        raise PatchError(f"cannot list HEAD in {workspace}: {_output(proc).strip()}")
    wanted = set(paths)
    return {p: e for p, e in _entries(proc.stdout).items() if p in wanted}


def tree_listing(workspace: Path, tree: str) -> dict[str, tuple[str, str]] | None:
    """path -> (mode, object id) of every file, link and submodule of `tree` (an id from
    head_tree), listed once (one git process; a tree's id hashes its content, so the listing
    never changes) and remembered for _LISTED_TREES trees; None for a tree of more than
    _LISTED_MAX entries (then each question is one git process, as before)."""
    with _listings_lock:
        found = _listings.get(tree, _UNLISTED)
        if found is not _UNLISTED:
            _listings.move_to_end(tree)
            return found
    proc = _run(["git", "ls-tree", "-r", "-z", "--full-tree", tree], workspace)
    if proc.returncode != 0:
        raise PatchError(f"cannot list {tree} in {workspace}: {_output(proc).strip()}")
    entries = _entries(proc.stdout)
    listing = entries if len(entries) <= _LISTED_MAX else None
    with _listings_lock:
        _listings[tree] = listing
        while len(_listings) > _LISTED_TREES:
            _listings.popitem(last=False)
    return listing


def _entries(out: bytes) -> dict[str, tuple[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, _kind, sha = meta.decode().split()
        entries[name.decode("utf-8", "surrogateescape")] = (mode, sha)
    return entries


# A run meets a few trees many times (attempts, base runs, reruns); pylint's listing of ~4,000
# entries is well under a MiB, and a task's evaluation asks for entries twice or more.
_LISTED_TREES = 16
_LISTED_MAX = 200_000
_UNLISTED: dict[str, tuple[str, str]] = {}
_listings: OrderedDict[str, dict[str, tuple[str, str]] | None] = OrderedDict()
_listings_lock = threading.Lock()


def read_blobs(workspace: Path, shas: list[str]) -> dict[str, bytes]:
    """The contents of blobs `shas` from the workspace's repository (one git process)."""
    unique = list(dict.fromkeys(shas))
    if not unique:
        return {}
    proc = _run(
        ["git", "cat-file", "--batch"], workspace, "".join(s + "\n" for s in unique).encode()
    )
    if proc.returncode != 0:
        raise PatchError(f"cannot read base blobs in {workspace}: {_output(proc).strip()}")
    out, pos, blobs = proc.stdout, 0, {}
    for sha in unique:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if len(header) != 3 or header[0].decode() != sha:
            raise PatchError(f"git cat-file gave {out[pos:end]!r} for {sha}")
        size = int(header[2])
        blobs[sha] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return blobs
