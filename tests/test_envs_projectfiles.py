"""The project's configuration files are read bounded: one over MAX_CONFIG_BYTES is absent, and
so is one reached through a link out of the repository (a link inside it is followed)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from swebounty.envs.buildcopy import drop_egg_info_tags
from swebounty.envs.ci import ci_python_versions
from swebounty.envs.node_project import read_project as read_node_project
from swebounty.envs.project import inputs_digest, load_pyproject, read_project
from swebounty.envs.projectfiles import MAX_CONFIG_BYTES, read_config, read_head
from swebounty.envs.requirements import read_requirement_file
from swebounty.envs.tox import ToxConfig


def padded(text: str, size: int) -> str:
    """`text` and a comment line, `size` bytes in all: what it says is still read if read."""
    return text + "#" * (size - len(text) - 1) + "\n"


def test_read_config_reads_as_read_text_did(tmp_path: Path) -> None:
    path = tmp_path / "setup.cfg"
    path.write_bytes(b"[metadata]\r\nname = x\rversion = \xff1\n")
    assert read_config(path, tmp_path) == path.read_text(encoding="utf-8", errors="replace")
    assert read_config(path, tmp_path) == "[metadata]\nname = x\nversion = \ufffd1\n"
    assert read_config(tmp_path / "absent.cfg", tmp_path) is None
    assert read_config(tmp_path, tmp_path) is None  # a directory
    (tmp_path / "d").mkdir()
    assert read_config(tmp_path / "d", tmp_path) is None  # a directory
    link = tmp_path / "tox.ini"
    link.symlink_to(path)
    assert read_config(link, tmp_path) == read_config(path, tmp_path)
    assert read_config(link, tmp_path, follow_links=False) is None


def test_read_config_reads_up_to_the_bound_and_no_further(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(padded("[project]\n", MAX_CONFIG_BYTES))
    assert len(read_config(path, tmp_path) or "") == MAX_CONFIG_BYTES
    path.write_text(padded("[project]\n", MAX_CONFIG_BYTES + 1))
    with caplog.at_level(logging.WARNING, logger="swebounty.envs.projectfiles"):
        assert read_config(path, tmp_path) is None
    assert f"{path} is larger than {MAX_CONFIG_BYTES} bytes" in caplog.text


def test_every_reader_of_the_project_treats_an_oversized_file_as_absent(tmp_path: Path) -> None:
    over = MAX_CONFIG_BYTES + 1
    small, big = tmp_path / "small", tmp_path / "big"
    files = {
        "pyproject.toml": '[project]\nname = "x"\n',
        "tox.ini": "[tox]\nenvlist = py39\n[testenv]\ndeps = pytest\n",
        "requirements.txt": "attrs==21.1\n",
        ".travis.yml": "python:\n  - '3.9'\n",
        "setup.cfg": "[egg_info]\ntag_build = .dev\n",
    }
    for root, size in ((small, None), (big, over)):
        root.mkdir()
        for name, text in files.items():
            (root / name).write_text(text if size is None else padded(text, size))

    # What each reads from a file of ordinary size...
    assert load_pyproject(small)["project"]["name"] == "x"
    tox = ToxConfig.load(small, {})
    assert tox is not None and tox.source == "tox.ini"
    notes: list[str] = []
    assert read_requirement_file(small / "requirements.txt", small, None, notes)[0] == [
        "attrs==21.1"
    ]
    assert ci_python_versions(small) == ["3.9"]
    assert drop_egg_info_tags(small) == ["tag_build = .dev"]

    # ...and from one over the bound: nothing, as if it were not there.
    assert load_pyproject(big) == {}
    assert ToxConfig.load(big, {}) is None  # setup.cfg is over the bound too
    notes = []
    assert read_requirement_file(big / "requirements.txt", big, None, notes) == ([], [])
    assert notes == ["requirement file requirements.txt is too large to read; skipped"]
    assert ci_python_versions(big) == []
    before = (big / "setup.cfg").read_bytes()
    assert drop_egg_info_tags(big) == [] and (big / "setup.cfg").read_bytes() == before


def test_node_readers_treat_an_oversized_file_as_absent(tmp_path: Path) -> None:
    pkg = '{"scripts": {"test": "jest"}, "engines": {"node": ">=16"}}'
    files = {".nvmrc": "v18\n", ".travis.yml": "language: node_js\nnode_js:\n  - 16\n"}
    small, big = tmp_path / "small", tmp_path / "big"
    for root, size in ((small, None), (big, MAX_CONFIG_BYTES + 1)):
        root.mkdir()
        (root / "package.json").write_text(pkg)
        for name, text in files.items():
            (root / name).write_text(text if size is None else padded(text, size))
    project = read_node_project(small)
    assert project.constraints.pinned == "18" and project.constraints.matrix == (16,)
    project = read_node_project(big)
    assert project.constraints.pinned is None and project.constraints.matrix == ()
    assert project.constraints.engines == ">=16"  # package.json itself is of ordinary size
    (big / "package.json").write_text(pkg + " " * MAX_CONFIG_BYTES)
    with pytest.raises(ValueError, match=r"package\.json is larger than"):
        read_node_project(big)
    (big / "package.json").write_bytes(b'{"description": "\xff"}')
    with pytest.raises(UnicodeDecodeError):  # as strict as before: not valid UTF-8, not read
        read_node_project(big)


def test_read_head_is_the_start_of_read_text(tmp_path: Path) -> None:
    path = tmp_path / "yarn.lock"
    text = "__metadata:\r\n  version: 6\r\n" + "\u00e9\U0001f600\r\n" * 5000
    path.write_text(text, newline="")
    whole = path.read_text(errors="replace")
    for chars in (1, 13, 300, 2000, 4000, len(whole) + 10):
        assert read_head(path, tmp_path, chars) == whole[:chars], chars
    assert read_head(tmp_path / "pnpm-lock.yaml", tmp_path, 300) == ""


# What a repository's configuration says, each file readable by one reader or more.
CONFIGS = {
    "pyproject.toml": '[project]\nname = "x"\nrequires-python = ">=3.9"\n',
    "tox.ini": "[tox]\nenvlist = py39\n[testenv]\ndeps = pytest\n",
    "requirements.txt": "attrs==21.1\n",
    ".travis.yml": "python:\n  - '3.9'\n",
    "setup.cfg": "[egg_info]\ntag_build = .dev\n",
    "package.json": '{"engines": {"node": ">=16"}}',
    ".nvmrc": "v18\n",
    "yarn.lock": "__metadata:\n  version: 6\n",
}


def _readers(root: Path) -> dict[str, object]:
    """What each reader of the project's files makes of the repository at `root`."""
    notes: list[str] = []
    requirements = read_requirement_file(root / "requirements.txt", root, None, notes)
    try:
        node: object = read_node_project(root).constraints.pinned
    except ValueError as exc:
        node = str(exc)
    tox = ToxConfig.load(root, {})
    return {
        "pyproject": load_pyproject(root),
        "python": read_project(root).python.requires_python,
        "tox": tox.source if tox else None,
        "requirements": (requirements, notes),
        "ci": ci_python_versions(root),
        "egg_info": drop_egg_info_tags(root),
        "node": node,
        "lockfile": read_head(root / "yarn.lock", root, 11),
    }


def test_a_link_is_followed_inside_the_repository_and_never_out_of_it(tmp_path: Path) -> None:
    """A repository's `setup.cfg -> /etc/passwd` was read on the host (as root, before any
    sandbox) as the project's configuration; setup.cfg's was even written back. Links that
    stay inside the repository are its own files (README -> docs/README)."""
    host = tmp_path / "host"  # stands for /etc: files the repository does not own
    plain, inside, out = tmp_path / "plain", tmp_path / "inside", tmp_path / "out"
    for root in (host, plain, inside / "conf"):
        root.mkdir(parents=True)
        for name, text in CONFIGS.items():
            (root / name).write_text(text)
    inside.joinpath(".github").mkdir()
    out.mkdir()
    for name in CONFIGS:
        (inside / name).symlink_to(Path("conf") / name)  # relative, as git stores them
        (out / name).symlink_to(host / name)
    # A folder on the way out, and `-r` out of the repository.
    (host / "ci").mkdir()
    (host / "ci" / "tests.yml").write_text("jobs:\n  t:\n    python-version: ['3.8']\n")
    (out / ".github").mkdir()
    (out / ".github" / "workflows").symlink_to(host / "ci")
    (inside / ".github" / "workflows").symlink_to(Path("..") / "conf" / "ci")
    (inside / "conf" / "ci").mkdir()
    (inside / "conf" / "ci" / "tests.yml").write_text((host / "ci" / "tests.yml").read_text())

    expected = _readers(plain)
    assert expected["ci"] == ["3.9"] and expected["egg_info"] == ["tag_build = .dev"]
    assert expected["python"] == ">=3.9" and expected["node"] == "18"
    got = _readers(inside)
    assert got.pop("ci") == ["3.8", "3.9"]  # the workflow found through the folder's link
    expected.pop("ci")
    assert got == expected
    assert inputs_digest(inside) == inputs_digest(plain)

    before = {name: (host / name).read_bytes() for name in CONFIGS}
    got = _readers(out)
    assert got == {
        "pyproject": {},
        "python": None,
        "tox": None,
        "requirements": (
            ([], []),
            [f"requirement file {out / 'requirements.txt'} is outside the repository; skipped"],
        ),
        "ci": [],
        "egg_info": [],
        "node": f"{out / 'package.json'} is larger than {MAX_CONFIG_BYTES} bytes, or a link out "
        "of the repository: not read",
        "lockfile": "",
    }
    assert {name: (host / name).read_bytes() for name in CONFIGS} == before  # nothing written
    empty = tmp_path / "empty"
    empty.mkdir()
    assert inputs_digest(out) == inputs_digest(empty)  # left out, as files that are not there

    (plain / "requirements-dev.txt").write_text("-r ../host/requirements.txt\npytest\n")
    notes: list[str] = []
    got_dev = read_requirement_file(plain / "requirements-dev.txt", plain, None, notes)
    assert got_dev == (["pytest"], [])
    assert notes == [f"requirement file {host / 'requirements.txt'} is outside the repository; "
                     "skipped"]  # fmt: skip
    assert read_config(out / "setup.cfg", out) is None
    assert read_config(out / "setup.cfg", host) is None  # not a file of that repository either
