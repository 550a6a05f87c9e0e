"""Workspaces linked from a pristine checkout: the same tree as a checkout of their own, owned
as their sandbox needs, and nothing the harness does to one reaches the checkout or the next
workspace."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from swebounty import pristine
from swebounty.patches import apply_patch, reset_files
from swebounty.pristine import PRISTINE_DIR, linked_workspace
from swebounty.repos import git, isolated_git_env, make_workspace
from swebounty.safefs import write_beneath

FILES = {
    "pkg/__init__.py": "def f():\n    return 1\n",
    "pkg/data.txt": "one\ntwo\nthree\n",
    "tests/test_f.py": "from pkg import f\n\n\ndef test_f():\n    assert f() == 1\n",
    "run.sh": "#!/bin/sh\necho hi\n",
}
PATCH = """\
--- a/pkg/__init__.py
+++ b/pkg/__init__.py
@@ -1,2 +1,2 @@
 def f():
-    return 1
+    return 2
"""
FUZZY = """\
--- a/pkg/data.txt
+++ b/pkg/data.txt
@@ -1,3 +1,3 @@
 uno
-two
+TWO
 three
"""


def _mirror(path: Path) -> tuple[Path, str]:
    env = isolated_git_env()
    path.mkdir(parents=True)
    for name, text in FILES.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    (path / "run.sh").chmod(0o755)
    os.symlink("pkg/data.txt", path / "link.txt")
    git(path, "init", "-q", env=env)
    git(path, "add", "-A", env=env)
    git(path, "commit", "-qm", "base", env=env)
    return path, git(path, "rev-parse", "HEAD", env=env).stdout.decode().strip()


def _tree(root: Path) -> dict[str, tuple[str, int, bytes]]:
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        st = path.lstat()
        kind = "l" if path.is_symlink() else "d" if path.is_dir() else "f"
        data = (
            os.readlink(path).encode() if kind == "l" else path.read_bytes() if kind == "f" else b""
        )
        found[rel] = (kind, stat.S_IMODE(st.st_mode) if kind != "l" else 0, data)
    return found


def _owner() -> tuple[int, int]:
    # As root, another uid, as the sandbox's; else our own (chown to it changes nothing).
    return (54321, 54321) if os.geteuid() == 0 else (os.getuid(), os.getgid())


def test_a_linked_workspace_is_the_checkout_linked_to_one_kept_copy(tmp_path: Path) -> None:
    mirror, commit = _mirror(tmp_path / "origin")
    memory = tmp_path / "memory"
    memory.mkdir()
    plain = make_workspace(mirror, commit, tmp_path / "plain")
    # A tree met once is checked out as before: nothing kept for a tree a run meets once.
    once = linked_workspace(mirror, commit, memory / "o" / "ws", memory_dir=memory,
                            owner=_owner())  # fmt: skip
    assert _tree(once) == _tree(plain) and not (memory / PRISTINE_DIR).exists()
    first = linked_workspace(mirror, commit, memory / "a" / "ws", memory_dir=memory,
                             owner=_owner())  # fmt: skip
    second = linked_workspace(mirror, commit, memory / "b" / "ws", memory_dir=memory,
                              owner=_owner())  # fmt: skip
    assert _tree(first) == _tree(plain) == _tree(second)
    (kept,) = (memory / PRISTINE_DIR).iterdir()
    assert stat.S_IMODE((memory / PRISTINE_DIR).stat().st_mode) == 0o700
    source = kept / "workspace" / "pkg" / "__init__.py"
    assert (first / "pkg" / "__init__.py").stat().st_ino == source.stat().st_ino
    assert (source.stat().st_uid, source.stat().st_gid) == _owner()
    # git works there as this user (it refuses a repository another user owns), and the
    # index is the workspace's own: patches.py rewrites it in place.
    assert first.stat().st_uid == os.geteuid() and (first / ".git").stat().st_uid == os.geteuid()
    assert (first / ".git" / "index").stat().st_ino != (second / ".git" / "index").stat().st_ino
    # .git's objects are links (git never writes them in place), its other files copies; the
    # checkout's directories are the kept one's owner's, as its files.
    objects = [p for p in (first / ".git" / "objects").rglob("*") if p.is_file()]
    assert objects and all(p.stat().st_nlink > 1 for p in objects)
    assert all(p.stat().st_nlink == 1 for p in (first / ".git").iterdir() if p.is_file())
    assert ((first / "pkg").stat().st_uid, (first / "pkg").stat().st_gid) == _owner()
    assert git(first, "status", "--porcelain").stdout == b""


def test_what_the_harness_does_to_a_workspace_never_reaches_the_next(tmp_path: Path) -> None:
    mirror, commit = _mirror(tmp_path / "origin")
    memory = tmp_path / "memory"
    memory.mkdir()
    for n in range(2):  # the second workspace of a tree is the first linked one
        first = linked_workspace(mirror, commit, memory / f"a{n}" / "ws", memory_dir=memory,
                                 owner=_owner())  # fmt: skip
    assert (memory / PRISTINE_DIR).is_dir()
    assert apply_patch(first, PATCH) == "git"
    assert apply_patch(first, FUZZY) == "fuzz"  # GNU patch: a context line differs
    write_beneath(first, "tests/test_f.py", b"changed\n")
    reset_files(first, ["run.sh"])
    assert (first / "pkg" / "__init__.py").read_text().endswith("return 2\n")
    second = linked_workspace(mirror, commit, memory / "b" / "ws", memory_dir=memory,
                              owner=_owner())  # fmt: skip
    assert _tree(second) == _tree(make_workspace(mirror, commit, tmp_path / "plain"))


def test_the_kept_checkouts_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Room for two of these tiny trees (each counts whole pages): not for a third.
    monkeypatch.setattr(pristine, "PRISTINE_BYTES", 2 * (len(FILES) + 2) * 4096 + 4096)
    memory = tmp_path / "memory"
    memory.mkdir()
    for n in range(4):
        mirror, commit = _mirror(tmp_path / f"origin{n}")
        (mirror / "n.txt").write_text(str(n))  # a tree of its own
        git(mirror, "add", "-A", env=isolated_git_env())
        git(mirror, "commit", "-qm", "n", env=isolated_git_env())
        commit = git(mirror, "rev-parse", "HEAD").stdout.decode().strip()
        for m in range(2):
            ws = linked_workspace(mirror, commit, memory / f"w{n}{m}" / "ws",
                                  memory_dir=memory, owner=_owner())  # fmt: skip
            assert (ws / "n.txt").read_text() == str(n)
    assert len(list((memory / PRISTINE_DIR).iterdir())) == 2


def test_a_worker_that_leases_again_gets_the_slot_it_gave_back(tmp_path: Path) -> None:
    # Its uid owns the kept checkouts of the trees it ran: alternating between slots kept
    # every tree once per slot, and linked from none until each slot had met it twice.
    from swebounty.evalcontext import EvalContext

    ctx = EvalContext.create(cache_dir=tmp_path / "c", runs_dir=tmp_path / "r", sandbox="unsafe",
                             workers=2)  # fmt: skip
    with ctx.lease() as one, ctx.lease() as two:
        assert one is not two  # two slots, each of its own uid
    with ctx.lease() as last:
        pass
    for _ in range(3):
        with ctx.lease() as again:
            assert again is last
    ctx.close()
