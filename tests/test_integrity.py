"""The workspace the hidden tests run in: base test infrastructure, no compiled files added."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from swebounty import integrity
from swebounty.integrity import infra_manifest, revert_test_infra, strip_compiled
from swebounty.patches import apply_patch

BASE = {
    "pkg/__init__.py": "VALUE = 1\n",
    "tests/test_a.py": "def test_a():\n    assert True\n",
    "tests/conftest.py": 'pytest_plugins = ["tests.plugin"]\n',
    "tests/plugin.py": "def pytest_configure(config):\n    pass\n",
    "setup.cfg": "[metadata]\nname = pkg\n\n[tool:pytest]\naddopts = -q\n",
    "pyproject.toml": '[project]\nname = "pkg"\n\n[tool.pytest.ini_options]\naddopts = "-p tests.extra"\n',
    "tests/extra.py": "X = 1\n",
}


def git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, input=data, capture_output=True, check=True
    ).stdout


def base_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    for rel, text in BASE.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return path


def test_every_kind_of_test_infrastructure_goes_back_to_the_base(tmp_path: Path) -> None:
    repo = base_repo(tmp_path / "ws")
    edits = {
        "tests/conftest.py": "import pytest\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    yield\n",
        "tests/plugin.py": "def pytest_configure(config):\n    raise SystemExit(0)\n",
        "tests/extra.py": "X = 2\n",  # named by the base's `-p` option
        "conftest.py": "# a new root conftest\n",
        "pytest.toml": '[pytest]\naddopts = ["-p", "evil"]\n',
        ".pytest.toml": "[pytest]\n",
        "tests/sub/pytest.ini": "[pytest]\naddopts = -p evil\n",
        "tox.ini": "[pytest]\naddopts = -p evil\n",
        "sitecustomize.py": "import os\n",
        "pkg/usercustomize.py": "import os\n",
        "evil.pth": "import os\n",
        # packaging changes stay; pytest's part of the same file does not
        "setup.cfg": BASE["setup.cfg"].replace("name = pkg", "name = pkg2"),
        "pyproject.toml": BASE["pyproject.toml"].replace("tests.extra", "evil"),
        "pkg/__init__.py": "VALUE = 2\n",  # the fix itself: untouched
    }
    for rel, text in edits.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    reverted = revert_test_infra(repo)
    assert set(reverted) == set(edits) - {"setup.cfg", "pkg/__init__.py"}
    for rel, text in BASE.items():
        expected = edits[rel] if rel in ("setup.cfg", "pkg/__init__.py") else text
        assert (repo / rel).read_text() == expected, rel
    for rel in set(edits) - set(BASE):
        assert not os.path.lexists(repo / rel), rel
    assert revert_test_infra(repo) == []


def test_the_base_infrastructure_is_read_once_per_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[str] = []
    real = integrity._head_infra

    def counting(ws: Path, tree: str) -> dict[str, bytes]:
        read.append(ws.name)
        return real(ws, tree)

    monkeypatch.setattr(integrity, "_head_infra", counting)
    monkeypatch.setattr(integrity, "_base_infra", {})  # other tests' checkouts share the tree
    for name in ("one", "two"):  # two checkouts of one tree, each with a planted plugin
        repo = base_repo(tmp_path / name)
        (repo / "tests" / "plugin.py").write_text("raise SystemExit(0)\n")
        (repo / "conftest.py").write_text("# new\n")
        assert revert_test_infra(repo) == ["conftest.py", "tests/plugin.py"]
        assert (repo / "tests" / "plugin.py").read_text() == BASE["tests/plugin.py"]
    assert read == ["one"]
    # Another tree is read anew, and its own plugins are what it is reverted to.
    other = base_repo(tmp_path / "other")
    (other / "tests" / "plugin.py").write_text("# changed in the base\n")
    git(other, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "other")
    (other / "tests" / "plugin.py").write_text("raise SystemExit(0)\n")
    assert revert_test_infra(other) == ["tests/plugin.py"]
    assert (other / "tests" / "plugin.py").read_text() == "# changed in the base\n"
    assert read == ["one", "other"]


def test_a_base_tree_git_cannot_list_is_an_integrity_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swebounty import headtree

    repo = base_repo(tmp_path / "ws")
    monkeypatch.setattr(integrity, "_base_infra", {})
    monkeypatch.setattr(headtree, "_listings", headtree.OrderedDict())
    real = headtree._run

    def broken(argv: list[str], cwd: Path, data: bytes | None = None) -> object:
        if "ls-tree" in argv:  # e.g. an object missing from a damaged mirror
            return subprocess.CompletedProcess(argv, 128, b"", b"fatal: not a tree object")
        return real(argv, cwd, data)

    monkeypatch.setattr(headtree, "_run", broken)
    with pytest.raises(integrity.IntegrityError, match="cannot list the base commit"):
        revert_test_infra(repo)


def test_a_link_in_place_of_a_conftest_is_replaced_and_never_followed(tmp_path: Path) -> None:
    repo = base_repo(tmp_path / "ws")
    outside = tmp_path / "outside.py"
    outside.write_text("host\n")
    (repo / "tests" / "conftest.py").unlink()
    (repo / "tests" / "conftest.py").symlink_to(outside)
    os.mkfifo(repo / "conftest.py")
    assert set(revert_test_infra(repo)) == {"tests/conftest.py", "conftest.py"}
    assert (repo / "tests" / "conftest.py").read_text() == BASE["tests/conftest.py"]
    assert outside.read_text() == "host\n"
    manifest = infra_manifest(repo)
    files = manifest["files"]
    assert isinstance(files, dict)
    assert bytes.fromhex(files["tests/conftest.py"]).decode() == BASE["tests/conftest.py"]


def test_compiled_files_a_patch_adds_are_removed(tmp_path: Path) -> None:
    repo = base_repo(tmp_path / "ws")
    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(
        b"\xa7\r\r\n" + b"\0" * 12
    )
    (repo / "pkg" / "fast.so").write_bytes(b"\x7fELF\x02\x01")
    (repo / "tool").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)))
    (repo / "data.bin").write_bytes(bytes(range(256)))  # data: kept (flagged by grading)
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "--binary").decode()
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfdx")
    assert apply_patch(repo, patch) == "git"
    removed = strip_compiled(repo, patch)
    assert set(removed) == {"pkg/__pycache__/__init__.cpython-311.pyc", "pkg/fast.so", "tool"}
    assert not (repo / "pkg" / "__pycache__").exists()
    assert (repo / "data.bin").exists()
