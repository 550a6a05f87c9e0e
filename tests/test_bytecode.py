"""The bytecode cache: what it compiles, how it stores, where it copies, and what it refuses.

The compile step runs in the real bwrap sandbox (marked `sandbox`); the copying needs none.
"""

from __future__ import annotations

import json
import os
import py_compile
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swebounty import bytecode
from swebounty.cli import app
from swebounty.repos import make_workspace
from swebounty.sandbox import BwrapSandbox, bwrap_available
from swebounty.sandbox.base import Policy

DEFAULT_MIN_SOURCE_BYTES = bytecode.MIN_SOURCE_BYTES  # before the fixture below changes it

PYTHON = Path(sys.executable).resolve()  # the real interpreter, not the venv's link
TAG = sys.implementation.cache_tag
VERSION = ".".join(map(str, sys.version_info[:3]))

FILES = {
    "pkg/__init__.py": "from pkg.mod import VALUE\n",
    "pkg/mod.py": "VALUE = 1\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/deep.py": "DEEP = 'deep'\n",
    "doc/examples/bad.py": "import os\n",  # in no package: read as data, if at all
    "pkg/broken.py": "def f(:\n",  # does not compile: remembered, never retried
    "json.py": "raise SystemExit(7)\n",  # would break the compiler if the repo were on sys.path
    "sitecustomize.py": "raise SystemExit(9)\n",  # would stop the compiler if `site` ran
    "tests/test_mod.py": "def test_v():\n    pass\n",  # rewritten by pytest: not compiled
    "tests/functional/data.py": "x = 1\n",  # test data, mostly never imported: left out
    "conftest.py": "",
    "pkg/mod_test.py": "",
    "README.txt": "not python\n",
}


@pytest.fixture(autouse=True)
def every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files here are tiny: cache them all (the size rule has its own test)."""
    monkeypatch.setattr(bytecode, "MIN_SOURCE_BYTES", 0)


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo), *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def mirror(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "mirror"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / "link.py").symlink_to("pkg/mod.py")  # a link is not a source of its own
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def workspace(tmp_path: Path, mirror: tuple[Path, str], name: str) -> Path:
    return make_workspace(mirror[0], mirror[1], tmp_path / name)


def plan_for(tmp_path: Path, ws: Path) -> bytecode.Plan:
    pyc = bytecode.plan(tmp_path / "cache", ws, VERSION, PYTHON)
    assert pyc is not None
    return pyc


def test_cache_tag_only_for_interpreters_with_checked_pycs() -> None:
    assert bytecode.cache_tag("3.7.16", Path("/x/python3.7")) == "cpython-37"
    assert bytecode.cache_tag("3.12.1", Path("/x/python3.12")) == "cpython-312"
    assert bytecode.cache_tag("3.6.15", Path("/x/python3.6")) is None  # no PEP 552
    assert bytecode.cache_tag("2.7.18", Path("/x/python2.7")) is None
    assert bytecode.cache_tag("3.10.0", Path("/x/pypy3.10")) is None


def test_plan_lists_the_sources_that_are_not_tests(
    tmp_path: Path, mirror: tuple[Path, str]
) -> None:
    pyc = plan_for(tmp_path, workspace(tmp_path, mirror, "ws"))
    assert sorted(pyc.files) == [
        "json.py", "pkg/__init__.py", "pkg/broken.py", "pkg/mod.py", "pkg/sub/__init__.py",
        "pkg/sub/deep.py", "sitecustomize.py",
    ]  # fmt: skip
    assert pyc.tag == TAG
    blob = git(mirror[0], "rev-parse", "HEAD:pkg/mod.py").strip()
    assert pyc.files["pkg/mod.py"] == blob


def test_only_modules_worth_copying_are_cached(
    tmp_path: Path, mirror: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bytecode, "MIN_SOURCE_BYTES", 8 << 10)
    repo = mirror[0]
    (repo / "pkg" / "big.py").write_text("X = 1\n" + "# a long module\n" * 600)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "big")
    ws = make_workspace(repo, git(repo, "rev-parse", "HEAD").strip(), tmp_path / "ws")
    assert list(plan_for(tmp_path, ws).files) == ["pkg/big.py"]


def test_modules_of_a_few_hundred_bytes_are_cached_by_default(
    tmp_path: Path, mirror: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """sympy's many modules of 256 B to 2 KiB cost a fresh checkout of sympy-24152 0.13 s of
    CPU to compile in every evaluation, and 3 ms to copy; an empty __init__.py is not worth
    a file copy."""
    monkeypatch.setattr(bytecode, "MIN_SOURCE_BYTES", DEFAULT_MIN_SOURCE_BYTES)
    repo = mirror[0]
    (repo / "pkg" / "small.py").write_text("X = 1\n" + "# a short module\n" * 16)  # 278 B
    (repo / "pkg" / "tiny.py").write_text("X = 1\n" + "#" * 200 + "\n")  # 207 B
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "small")
    ws = make_workspace(repo, git(repo, "rev-parse", "HEAD").strip(), tmp_path / "ws")
    files = plan_for(tmp_path, ws).files
    assert "pkg/small.py" in files and "pkg/tiny.py" not in files
    assert "pkg/__init__.py" not in files


def test_a_trees_plan_is_made_once(
    tmp_path: Path, mirror: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    real = bytecode._plan_files

    def counting(ws: Path, tree: str) -> dict[str, str]:
        made.append(tree)
        return real(ws, tree)

    monkeypatch.setattr(bytecode, "_plan_files", counting)
    monkeypatch.setattr(bytecode, "_plans", {})
    first = plan_for(tmp_path, workspace(tmp_path, mirror, "ws1"))
    first.files.clear()  # each plan's files are its own
    again = plan_for(tmp_path, workspace(tmp_path, mirror, "ws2"))
    assert len(made) == 1 and "pkg/mod.py" in again.files
    # Another tree (a new commit), or another size rule: planned anew.
    repo = mirror[0]
    (repo / "pkg" / "new.py").write_text("Y = 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "new")
    ws = make_workspace(repo, git(repo, "rev-parse", "HEAD").strip(), tmp_path / "ws3")
    assert "pkg/new.py" in plan_for(tmp_path, ws).files and len(made) == 2
    monkeypatch.setattr(bytecode, "MIN_SOURCE_BYTES", 1)
    plan_for(tmp_path, ws)
    assert len(made) == 3


def test_importable_modules_are_in_packages_from_the_top_src_or_lib() -> None:
    packages = {"pkg", "pkg/sub", "src/lib2", "lib/lib3", "doc/pkg"}
    assert bytecode._importable("setup.py", packages)
    assert bytecode._importable("pkg/sub/m.py", packages)
    assert bytecode._importable("src/lib2/m.py", packages)
    assert bytecode._importable("lib/lib3/m.py", packages)
    assert not bytecode._importable("doc/pkg/m.py", packages)  # doc/ is no package
    assert not bytecode._importable("pkg/nopkg/m.py", packages)
    assert not bytecode._importable("scripts/m.py", packages)


def test_disabled_or_old_interpreters_get_no_plan(
    tmp_path: Path, mirror: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path, mirror, "ws")
    assert bytecode.plan(tmp_path / "cache", ws, "3.6.15", Path("/x/python3.6")) is None
    monkeypatch.setattr(bytecode, "ENABLED", False)
    assert bytecode.plan(tmp_path / "cache", ws, VERSION, PYTHON) is None


def _compile(tmp_path: Path, ws: Path, pyc: bytecode.Plan, out: str) -> int:
    ok, why = bwrap_available()
    if not ok:
        pytest.skip(why)
    mounts = [Path(sys.base_prefix)]
    policy = Policy(timeout_s=120)
    return bytecode.compile_missing(pyc, ws, PYTHON, mounts, BwrapSandbox(), policy, tmp_path / out)


@pytest.mark.sandbox
def test_compiled_once_in_the_sandbox_then_used_from_the_cache(
    tmp_path: Path, mirror: tuple[Path, str]
) -> None:
    ws = workspace(tmp_path, mirror, "ws")
    pyc = plan_for(tmp_path, ws)
    assert _compile(tmp_path, ws, pyc, "out1") == 6  # all but pkg/broken.py
    store = pyc.store
    entries = sorted(p.name for p in store.rglob("*.*"))
    assert len([e for e in entries if e.endswith(".pyc")]) == 6
    assert [e for e in entries if e.endswith(".bad")] == [f"{pyc.files['pkg/broken.py']}.bad"]
    for path in store.rglob("*.pyc"):
        data = path.read_bytes()
        assert int.from_bytes(data[4:8], "little") == 3  # PEP 552: hash-based, checked
    # Everything is known now, the broken file too: nothing is compiled again.
    again = plan_for(tmp_path, workspace(tmp_path, mirror, "ws2"))
    assert again.missing() == {}
    assert _compile(tmp_path, ws, again, "out2") == 0
    assert not (tmp_path / "out2").exists()  # not even a sandbox started

    # A later workspace gets the pycs; Python uses them and does not write its own.
    ws3 = workspace(tmp_path, mirror, "ws3")
    assert bytecode.seed(plan_for(tmp_path, ws3), ws3, skip={"pkg/sub/deep.py"}) == 5
    cached = ws3 / "pkg" / "__pycache__" / f"mod.{TAG}.pyc"
    assert cached.read_bytes() == (store / cached_name(pyc, "pkg/mod.py")).read_bytes()
    assert not (ws3 / "pkg" / "sub" / "__pycache__" / f"deep.{TAG}.pyc").exists()  # skipped
    before = cached.stat().st_mtime_ns
    assert imported(ws3, "pkg.mod", "VALUE") == 1
    assert cached.stat().st_mtime_ns == before

    # The source changed after the copy (as a patch would change it): Python sees that the
    # hash no longer matches and runs the new source, never the cached code.
    (ws3 / "pkg" / "mod.py").write_text("VALUE = 2\n")
    assert imported(ws3, "pkg.mod", "VALUE") == 2


def cached_name(pyc: bytecode.Plan, rel: str) -> str:
    sha = pyc.files[rel]
    return f"{sha[:2]}/{sha}.pyc"


def imported(ws: Path, module: str, name: str) -> object:
    # -I: the tree's json.py must not shadow the standard library's here either
    code = f"import sys; sys.path.append({str(ws)!r}); import json, {module} as m; "
    code += f"print(json.dumps(m.{name}))"
    out = subprocess.run(
        [str(PYTHON), "-I", "-c", code], cwd=ws, check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def _fill_store(pyc: bytecode.Plan) -> None:
    """Store entries written by hand: enough for the copying tests, no sandbox needed."""
    for sha in pyc.files.values():
        path = pyc.store / sha[:2] / f"{sha}.pyc"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x00\x00\r\n" + (3).to_bytes(4, "little") + bytes(16))


def test_seeding_never_follows_a_link_nor_replaces_a_file(
    tmp_path: Path, mirror: tuple[Path, str]
) -> None:
    ws = workspace(tmp_path, mirror, "ws")
    pyc = plan_for(tmp_path, ws)
    _fill_store(pyc)
    outside = tmp_path / "outside"
    outside.mkdir()
    # What a patch could leave: a __pycache__ that is a link out of the tree, a directory
    # turned into a link, a .pyc of its own in place.
    (ws / "pkg" / "__pycache__").symlink_to(outside)
    git(ws, "rm", "-rq", "pkg/sub")
    (ws / "pkg" / "sub").symlink_to(outside)
    (ws / "__pycache__").mkdir()
    own = ws / "__pycache__" / f"json.{TAG}.pyc"
    own.write_bytes(b"theirs")
    copied = bytecode.seed(pyc, ws, skip=set())
    assert copied == 1  # sitecustomize.py only
    assert list(outside.iterdir()) == []
    assert own.read_bytes() == b"theirs"
    assert (ws / "__pycache__" / f"sitecustomize.{TAG}.pyc").is_file()


def test_a_store_entry_without_the_checked_hash_header_is_not_stored(
    tmp_path: Path, mirror: tuple[Path, str]
) -> None:
    assert bytecode._checked_hash_pyc(b"\x00\x00\r\n" + (3).to_bytes(4, "little") + bytes(9))
    unchecked = b"\x00\x00\r\n" + (1).to_bytes(4, "little") + bytes(9)  # hash, not checked
    timestamp = b"\x00\x00\r\n" + bytes(13)
    assert not bytecode._checked_hash_pyc(unchecked)
    assert not bytecode._checked_hash_pyc(timestamp)


@pytest.mark.sandbox
def test_a_tree_of_many_files_compiles(tmp_path: Path) -> None:
    """More files than a pipe's buffer can list (the list goes to the sandbox in a file)."""
    repo = tmp_path / "big"
    for n in range(800):
        path = repo / "package_with_a_rather_long_name" / f"module_number_{n:04d}_of_many.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"N = {n}\n")
    (repo / "package_with_a_rather_long_name" / "__init__.py").write_text("")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    ws = make_workspace(repo, git(repo, "rev-parse", "HEAD").strip(), tmp_path / "ws")
    pyc = plan_for(tmp_path, ws)
    assert len(json.dumps(sorted(pyc.files.items()))) > 64 << 10
    assert _compile(tmp_path, ws, pyc, "out") == 801


def _demo(cache: Path, runs: Path, run_id: str) -> dict[str, object]:
    ok, why = bwrap_available()
    if not ok:
        pytest.skip(why)
    argv = ["eval", "--demo", "--gold", "--run-id", run_id, "--cache-dir", str(cache)]
    result = CliRunner().invoke(app, [*argv, "--runs-dir", str(runs)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads((runs / run_id / "report.json").read_text())
    assert isinstance(report, dict)
    return report


@pytest.mark.sandbox
@pytest.mark.network
def test_evaluations_fill_the_cache_then_copy_from_it_and_a_broken_cache_costs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, runs = tmp_path / "cache", tmp_path / "runs"
    copied: list[int] = []
    seed = bytecode.seed
    monkeypatch.setattr(bytecode, "seed", lambda *a, **k: copied.append(seed(*a, **k)) or 0)
    assert _demo(cache, runs, "first")["resolved_instances"] == 4
    assert list((cache / "bytecode").rglob("*.pyc"))
    assert len(copied) == 4 and all(n > 0 for n in copied)  # the demo's package, every task

    def broken(*a: object, **k: object) -> int:
        raise RuntimeError("a bug in the cache")

    monkeypatch.setattr(bytecode, "plan", broken)
    assert _demo(cache, runs, "broken")["resolved_instances"] == 4


def _compiled_store(pyc: bytecode.Plan, ws: Path) -> None:
    """Real checked-hash store entries, compiled here (the seeding tests need no sandbox)."""
    for rel, sha in pyc.files.items():
        entry = pyc.store / sha[:2] / f"{sha}.pyc"
        entry.parent.mkdir(parents=True, exist_ok=True)
        mode = py_compile.PycInvalidationMode.CHECKED_HASH
        py_compile.compile(str(ws / rel), cfile=str(entry), invalidation_mode=mode)


def _flags(pyc_file: Path) -> int:
    return int.from_bytes(pyc_file.read_bytes()[4:8], "little")


def test_a_plainly_untouched_source_gets_a_timestamp_pyc_anything_else_the_checked_hash(
    tmp_path: Path, mirror: tuple[Path, str]
) -> None:
    ws = workspace(tmp_path, mirror, "ws")
    pyc = plan_for(tmp_path, ws)
    _compiled_store(pyc, ws)
    old = time.time() - 100
    for rel in pyc.files:
        os.utime(ws / rel, (old, old))
    began = time.time()
    # Written after the evaluation began but missing from `skip` (a bug elsewhere): same
    # size as the base's, so only its mtime tells. Another keeps its old mtime, new size.
    (ws / "pkg" / "mod.py").write_text("VALUE = 3\n")
    (ws / "pkg" / "sub" / "deep.py").write_text("DEEP = 'changed'\n")
    os.utime(ws / "pkg" / "sub" / "deep.py", (old, old))
    assert bytecode.seed(pyc, ws, skip=set(), stamp_before=began) == 6
    cache = ws / "pkg" / "__pycache__"
    init = cache / f"__init__.{TAG}.pyc"
    assert _flags(init) == 0  # timestamp: the source's own mtime and size
    assert init.read_bytes()[8:16] == struct.pack("<II", int(old), len(FILES["pkg/__init__.py"]))
    assert _flags(cache / f"mod.{TAG}.pyc") == 3  # written since `began`: checked hash
    assert _flags(ws / "pkg" / "sub" / "__pycache__" / f"deep.{TAG}.pyc") == 3  # size differs
    before = init.stat().st_mtime_ns
    assert imported(ws, "pkg.mod", "VALUE") == 3  # the file as it is, never the base's code
    assert imported(ws, "pkg.sub.deep", "DEEP") == "changed"
    assert init.stat().st_mtime_ns == before  # the timestamp pyc was used, not rewritten

    # An edit made later (by the install step, by the tests) moves the mtime: Python sees it
    # and compiles the source, even at the same size.
    same_size = "VALUE = 4  #".ljust(len(FILES["pkg/__init__.py"]) - 1, "x") + "\n"
    (ws / "pkg" / "__init__.py").write_text(same_size)
    assert imported(ws, "pkg", "VALUE") == 4

    # Without `stamp_before` every copy keeps the checked hash.
    ws2 = workspace(tmp_path, mirror, "ws2")
    for rel in pyc.files:
        os.utime(ws2 / rel, (old, old))
    assert bytecode.seed(plan_for(tmp_path, ws2), ws2, skip=set()) == 6
    assert {_flags(p) for p in ws2.rglob("*.pyc")} == {3}
