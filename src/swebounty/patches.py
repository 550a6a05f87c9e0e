"""Applying patches in a workspace, and putting files back as they were in the base commit.

Patches are untrusted input, applied on the host: every path a patch names is checked first
(diffs.check_path: no absolute paths, no `..`, nothing under `.git`, which would let a patch
plant a git hook or an fsmonitor command that the harness's next git call would run), GNU patch
is told to read a unified diff only (its ed-script mode runs commands), and a failed attempt is
rolled back before the next one, so a half-applied patch never leaks into the following method.
Reading a diff (the files it names, its lines) is `diffs.py`'s.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

from swebounty import safefs
from swebounty.diffs import (
    DEFAULT_MAX_PATCH_BYTES,
    PatchError,
    check_path,
    check_text,
    files_in_patch,
    parse_patch,
)
from swebounty.headtree import (
    COMMAND_TIMEOUT,
    _output,
    _run,
    head_entries,
    head_tree,
    read_blobs,
)

__all__ = [
    "COMMAND_TIMEOUT",
    "PATCH_METHODS",
    "apply_patch",
    "head_entries",
    "head_tree",
    "read_blobs",
    "reset_files",
]

log = logging.getLogger(__name__)

PATCH_METHODS = ("git", "3way", "fuzz")

# ---------------------------------------------------------------------------- applying


def apply_patch(
    workspace: Path, patch: str | bytes, *, max_bytes: int = DEFAULT_MAX_PATCH_BYTES
) -> str:
    """Apply `patch` in `workspace`; return how: "git", "3way", "fuzz", or "empty" when the
    patch is empty or applied without changing any file (a hunk that removes and adds the same
    lines): then the tree is the base's, and grading treats the submission as empty.

    Tries `git apply`, then `git apply --3way` (needs the preimage blobs, which a workspace's
    base commit has), then GNU `patch --fuzz=3`. The index is left as it was, so every method
    leaves the same kind of result: changed files in the work tree, nothing staged.
    """
    text = check_text(patch, max_bytes)
    if not text.strip():
        return "empty"
    paths = files_in_patch(text)
    if not paths:
        raise PatchError("no file diffs found in the patch; submit a unified diff (git diff)")
    for path in paths:
        check_path(path)
    if not text.endswith("\n"):
        text += "\n"  # git apply calls a last line without newline a corrupt patch
    data = text.encode("utf-8")
    workspace = Path(workspace)
    snapshot = _Snapshot.take(workspace, paths)
    failures = []
    attempts = (("git", _git_apply), ("3way", _git_apply_3way), ("fuzz", _gnu_patch))
    for name, attempt in attempts:
        try:
            error = attempt(workspace, data, paths)
        finally:
            snapshot.restore_index()
        if error is None:
            log.debug("patch applied with %s in %s", name, workspace)
            # Every file a patch may write is in the snapshot (GNU patch is held to the names).
            return "empty" if snapshot.unchanged() else name
        failures.append(f"[{name}] {error.strip() or 'failed without a message'}")
        snapshot.restore_files()
    raise PatchError(
        "patch does not apply (tried git apply, git apply --3way, patch --fuzz=3):\n"
        + "\n".join(failures)
    )


def _git_apply(workspace: Path, data: bytes, paths: list[str]) -> str | None:
    proc = _run(["git", "apply", "--whitespace=nowarn", "-"], workspace, data)
    return None if proc.returncode == 0 else _output(proc)


def _git_apply_3way(workspace: Path, data: bytes, paths: list[str]) -> str | None:
    # --3way implies --index, which insists the index matches the work tree for every path
    # it touches; stage the current files (the caller restores the index afterwards).
    stage = _run(["git", "update-index", "--add", "--remove", "--", *paths], workspace)
    if stage.returncode != 0:
        return _output(stage)
    proc = _run(["git", "apply", "--3way", "--whitespace=nowarn", "-"], workspace, data)
    return None if proc.returncode == 0 else _output(proc)


_PATCH_FILE = re.compile(r"^(?:checking|patching) file (.*?)(?: \((?:renamed|copied) from .*\))?$")


def _gnu_patch(workspace: Path, data: bytes, paths: list[str]) -> str | None:
    if shutil.which("patch") is None:
        return "GNU patch is not installed"
    binary = [d.path for d in parse_patch(data.decode("utf-8")) if d.binary]
    if binary:
        # GNU patch reports success on a binary diff while leaving the file as it was.
        return f"GNU patch cannot apply binary diffs ({', '.join(binary)})"
    # -u: unified only (never ed scripts); --batch --forward: no questions, no reversing;
    # no .orig backups and rejects thrown away, so a failed attempt leaves no litter.
    argv = ["patch", "-p1", "-u", "--fuzz=3", "--batch", "--forward"]
    argv += ["--no-backup-if-mismatch", "--reject-file=-"]
    dry = _run([*argv, "--dry-run"], workspace, data)
    if dry.returncode != 0:
        return _output(dry)
    # GNU patch picks file names by its own rules; never let it write one we did not check.
    named = [m[1] for line in _output(dry).splitlines() if (m := _PATCH_FILE.match(line))]
    stray = [name for name in named if name not in paths]
    if stray:
        return f"patch would write {stray}, which the diff headers do not name"
    proc = _run(argv, workspace, data)
    return None if proc.returncode == 0 else _output(proc)


class _Snapshot:
    """The files a patch touches (and the git index) as they were, to roll back an attempt."""

    def __init__(
        self,
        workspace: Path,
        files: dict[str, tuple[bytes, int] | None],
        index_path: Path | None,
        index: bytes | None,
    ) -> None:
        self.workspace = workspace
        self.files = files
        self.index_path = index_path
        self.index = index

    @classmethod
    def take(cls, workspace: Path, paths: list[str]) -> _Snapshot:
        files: dict[str, tuple[bytes, int] | None] = {}
        for path in paths:
            full = _inside(workspace, path)
            if full.is_symlink():
                files[path] = (os.readlink(full).encode("utf-8", "surrogateescape"), -1)
            elif full.is_file():
                files[path] = (full.read_bytes(), full.stat().st_mode & 0o7777)
            else:
                files[path] = None
        index, index_path = None, _index_path(workspace)
        if index_path is not None and index_path.exists():
            index = index_path.read_bytes()
        return cls(workspace, files, index_path, index)

    def unchanged(self) -> bool:
        """Whether every file is as it was: content, mode, link target, or still absent."""
        return _Snapshot.take(self.workspace, list(self.files)).files == self.files

    def restore_index(self) -> None:
        if self.index_path is None:
            return
        if self.index is None:
            self.index_path.unlink(missing_ok=True)
        else:
            self.index_path.write_bytes(self.index)

    def restore_files(self) -> None:
        for path, saved in self.files.items():
            full = _inside(self.workspace, path)
            _remove(full)
            if saved is None:
                _prune_empty_parents(self.workspace, full)
                continue
            content, mode = saved
            full.parent.mkdir(parents=True, exist_ok=True)
            if mode == -1:
                os.symlink(content.decode("utf-8", "surrogateescape"), full)
            else:
                full.write_bytes(content)
                full.chmod(mode)


def _index_path(workspace: Path) -> Path | None:
    """Where git keeps `workspace`'s index: .git/index when .git is a directory (git's own
    answer then, without a process per patch to ask it), else what git says."""
    dot_git = workspace / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        return dot_git / "index"
    proc = _run(["git", "rev-parse", "--git-path", "index"], workspace)
    return workspace / proc.stdout.decode().strip() if proc.returncode == 0 else None


def _inside(workspace: Path, path: str) -> Path:
    """`workspace/path`, or PatchError when a directory on the way is a symlink.

    Reading or writing through a symlink that a submission planted would reach the host.
    """
    check_path(path)
    current = workspace
    for part in path.split("/")[:-1]:
        current = current / part
        if current.is_symlink():
            raise PatchError(
                f"{path!r} lies beyond the symbolic link {current.relative_to(workspace)}; "
                "refusing to touch it"
            )
    return workspace / path


def _remove(full: Path) -> None:
    if full.is_symlink() or full.is_file():
        full.unlink()
    elif full.is_dir():
        shutil.rmtree(full)


def _prune_empty_parents(workspace: Path, full: Path) -> None:
    parent = full.parent
    while parent != workspace and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


# ---------------------------------------------------------------------------- resetting


def reset_files(workspace: Path, paths: list[str]) -> None:
    """Put each path back as it is in HEAD (the base commit); delete those HEAD lacks.

    The base commit's blobs are written directly, never through `git restore`/`checkout`:
    git decides what to rewrite from the index's stat data, and an edit that kept a file's
    size within the same second as the index was written looked unchanged to it. Links and
    files planted on the way are replaced, never followed (safefs).
    """
    workspace = Path(workspace)
    if not paths:
        return
    for path in paths:
        check_path(path)
    entries = head_entries(workspace, paths)
    blobs = read_blobs(workspace, [sha for mode, sha in entries.values() if mode != "160000"])
    for path in paths:
        entry = entries.get(path)
        try:
            if entry is None:
                # Links planted on the way are replaced by directories, never followed: the
                # test patch must be able to create the file here.
                parts = path.split("/")
                with safefs.open_dir(workspace, parts[:-1], create=True) as dfd:
                    safefs.remove_at(dfd, parts[-1])
                safefs.remove_beneath(workspace, path, prune_empty_parents=True)
                continue
            mode, sha = entry
            if mode == "120000":
                target = blobs[sha].decode("utf-8", "surrogateescape")
                safefs.symlink_beneath(workspace, path, target)
            elif mode == "160000":  # a submodule: an empty directory, as a checkout leaves it
                safefs.remove_beneath(workspace, path)
                with safefs.open_dir(workspace, path.split("/"), create=True):
                    pass
            else:
                safefs.write_beneath(
                    workspace, path, blobs[sha], 0o755 if mode == "100755" else 0o644
                )
        except OSError as exc:
            raise PatchError(f"cannot reset {path!r} to the base commit: {exc}") from exc
