"""The project's metadata, made in the build sandbox and handed to uv as data (projectmeta.py).

What comes back from the sandbox is the repository's to write: a METADATA file is hostile
input, read within bounds, each field validated and re-serialised before uv sees it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from swebounty.envs import buildbox, coremeta
from swebounty.envs.coremeta import build_system, parse_metadata, static_pyproject
from swebounty.envs.failures import StepFailed
from swebounty.envs.metadata import Repair
from swebounty.envs.projectmeta import ProjectMetadata
from swebounty.envs.steps import Uv

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

GOOD = b"""\
Metadata-Version: 2.1
Name: Django
Version: 3.0.dev20190101
Summary: A high-level Python Web framework
Requires-Python: >=3.6
Requires-Dist: pytz
Requires-Dist: sqlparse (>=0.2.2)
Requires-Dist: asgiref ~=3.2
Requires-Dist: argon2-cffi (>=16.1.0) ; extra == 'argon2'
Provides-Extra: argon2
Provides-Extra: bcrypt

The long description, with a line that looks like a header:
Requires-Dist: evil
"""


def test_the_project_s_metadata_is_read_as_uv_is_told_it() -> None:
    repair = parse_metadata(GOOD)
    assert (repair.name, repair.version, repair.python) == ("django", "3.0.dev20190101", ">=3.6")
    assert repair.requires == [
        "pytz",
        "sqlparse>=0.2.2",
        "asgiref~=3.2",
        'argon2-cffi>=16.1.0; extra == "argon2"',
    ]
    assert repair.extras == ["argon2", "bcrypt"]
    config = tomllib.loads(repair.toml())["dependency-metadata"][0]
    assert config == {
        "name": "django",
        "version": "3.0.dev20190101",
        "requires-dist": repair.requires,
        "requires-python": ">=3.6",
        "provides-extras": ["argon2", "bcrypt"],
    }


@pytest.mark.parametrize(
    ("metadata", "why"),
    [
        (b"Name: x\nVersion: 1\n" + b"Requires-Dist: a\n" * 3000, "more than"),
        (b"Name: x\nVersion: 1\nSummary: " + b"x" * (2 << 20) + b"\n", "bytes"),
        (b"Name: x\nName: y\nVersion: 1\n", "2 Name fields"),
        (b"Version: 1\n", "0 Name fields"),
        (b'Name: x"\n  ]\n[[dependency-metadata]]\nVersion: 1\n', "not a project name"),
        (b"Name: ../../etc\nVersion: 1\n", "not a project name"),
        (b"Name: x\nVersion: 1; rm -rf\n", "not a version"),
        (b"Name: x\nVersion: 1\nRequires-Dist: a @ file:///root/.ssh\n", "local path"),
        (b"Name: x\nVersion: 1\nRequires-Dist: a @ git+file:///srv/x\n", "local path"),
        (b"Name: x\nVersion: 1\nRequires-Dist: ;;;\n", "not a requirement"),
        (b"Name: x\nVersion: 1\nProvides-Extra: a b\n", "not an extra"),
        (b"Name: x\nVersion: 1\nRequires-Python: >=3\nRequires-Python: <4\n", "Requires-Py"),
        (b"Name: x\x00\nVersion: 1\n", "NUL"),
    ],
)
def test_hostile_metadata_is_refused(metadata: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_metadata(metadata)


def test_what_uv_would_read_leniently_is_read_so() -> None:
    """uv reads a built METADATA leniently (`pytz (>=2011k)`); so is it read here."""
    repair = parse_metadata(b"Name: x\nVersion: 1\nRequires-Dist: pytz (>=2011k)\n")
    assert repair.requires == ["pytz>=2011"]


def test_a_static_pyproject_needs_no_build() -> None:
    static = {
        "project": {
            "name": "Pkg_A",
            "version": "1.2",
            "dependencies": ["attrs>=20"],
            "optional-dependencies": {"Test": ["pytest; python_version >= '3.8'"]},
            "requires-python": ">=3.8",
        }
    }
    repair = static_pyproject(static)
    assert repair is not None
    assert (repair.name, repair.version, repair.python, repair.extras) == (
        "pkg-a",
        "1.2",
        ">=3.8",
        ["test"],
    )
    assert repair.requires == [
        "attrs>=20",
        'pytest; (python_version >= "3.8") and extra == "test"',
    ]
    for dynamic in ("version", "dependencies", "optional-dependencies", "requires-python"):
        project = {**static["project"], "dynamic": [dynamic]}
        assert static_pyproject({"project": project}) is None
    assert (
        static_pyproject({"project": {"name": "a", "version": "1"}, "tool": {"poetry": {}}}) is None
    )
    assert static_pyproject({"project": {"name": "a", "version": "x y"}}) is None
    assert static_pyproject(None) is None


def test_the_build_system_is_read_as_uv_reads_it() -> None:
    default = build_system(None)
    assert (default.requires, default.backend) == (
        ["setuptools >= 40.8.0"],
        coremeta.DEFAULT_BACKEND,
    )
    assert build_system({"project": {}}).backend == coremeta.DEFAULT_BACKEND
    given = build_system(
        {"build-system": {"requires": ["flit_core>=3"], "build-backend": "flit_core.buildapi"}}
    )
    assert (given.requires, given.backend) == (["flit_core>=3"], "flit_core.buildapi")
    legacy = build_system({"build-system": {"requires": ["setuptools", "wheel"]}})
    assert legacy.backend == coremeta.DEFAULT_BACKEND
    for bad in (
        {"build-backend": "os; os.system('x')"},
        {"backend-path": ["/etc"]},
        {"backend-path": ["../.."]},
        {"requires": ["a @ file:///root"]},
        {"requires": "setuptools"},
    ):
        with pytest.raises(ValueError, match=r"\[build-system\] is invalid|local path"):
            build_system({"build-system": {"requires": [], **bad}})


def test_uv_is_given_the_project_by_name_with_its_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[str]] = []
    answer = Repair("pkg", "2.0", ["six"], None, ["n"], ["test"])

    def metadata(self: ProjectMetadata, uvr: Uv, python: Path, args: list[str]) -> Repair:
        asked.append(args)
        return answer

    monkeypatch.setattr(ProjectMetadata, "metadata", metadata)
    uvr = Uv(Path("uv"), tmp_path / "build.log", sdist_dir=None)
    uvr.project = source = ProjectMetadata(tmp_path / "project")
    req = tmp_path / "requirements.in"
    req.write_text("./project[test,docs]\nattrs\n")
    uvr.fixes.releases[("pkg", "0.1")] = Repair("pkg", "0.1", ["x"], None, ["old"])
    uvr.fixes.releases[("other", "1")] = Repair("other", "1", ["y"], None, ["n"])
    named = tmp_path / "requirements.named.in"
    named.symlink_to(tmp_path / "elsewhere")  # left by a sandboxed step: not written through
    args = ["pip", "compile", "--exclude-newer", "2020-01-01T00:00:00Z", "--constraints", "c",
            "--only-binary", "numpy", str(req)]  # fmt: skip
    found, path = source.given(uvr, Path("/usr/bin/python3"), req, args)
    assert found is answer and path == named and not named.is_symlink()
    assert path.read_text() == "pkg[test,docs] @ ./project\nattrs\n"
    assert req.read_text() == "./project[test,docs]\nattrs\n"  # the caller's, unchanged
    assert not (tmp_path / "elsewhere").exists()
    assert asked[0][:6] == ["--exclude-newer", "2020-01-01T00:00:00Z", "--only-binary",
                            "numpy", "--config-file", str(uvr.fixes.config_path)]  # fmt: skip
    uvr.fixes.args(found)
    entries = tomllib.loads(uvr.fixes.config_path.read_text())["dependency-metadata"]
    assert [(e["name"], e["version"]) for e in entries] == [("other", "1"), ("pkg", "2.0")]
    # Named already (staticmeta's fallback), or not the project: nothing asked.
    req.write_text("pkg @ ./project\nattrs\n")
    assert source.given(uvr, Path("python"), req, args) == (None, req)
    assert len(asked) == 1


def test_without_bubblewrap_uv_prepares_it_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(buildbox, "sandbox", lambda: None)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "setup.py").write_text("raise SystemExit('never run here')\n")
    meta = ProjectMetadata(tmp_path / "project")
    uvr = Uv(Path("uv"), tmp_path / "build.log")
    assert meta.metadata(uvr, Path("/usr/bin/python3"), []) is None
    assert not any(meta.work.iterdir())


def test_what_comes_back_is_read_as_data_and_the_copy_must_be_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The channel holds what the repository's code wrote to it too; and the build copy is
    mounted by path, so a link left in its place (by an earlier sandboxed step) is refused
    before anything is mounted."""
    answers = [b"not json", b'["a list"]', b'{"metadata": "Name: x\\nVersion: 1\\n"}']
    monkeypatch.setattr(buildbox, "run_for_result", lambda *a, **k: ("", answers.pop(0)))
    project = tmp_path / "project"
    project.mkdir()
    meta = ProjectMetadata(project)
    uvr = Uv(Path("uv"), tmp_path / "build.log")
    system = build_system(None)
    run = [uvr, None, Path("/usr/bin/python3"), tmp_path / "env", system, "both"]
    for _ in range(2):
        with pytest.raises(StepFailed) as failed:
            meta._run(*run)  # type: ignore[arg-type]
        assert "could not be read" in failed.value.output
    assert meta._run(*run)["metadata"] == "Name: x\nVersion: 1\n"  # type: ignore[arg-type]
    project.rmdir()
    project.symlink_to(Path.home())
    monkeypatch.setattr(buildbox, "run_for_result", lambda *a, **k: pytest.fail("mounted"))
    with pytest.raises(StepFailed) as failed:
        meta._run(*run)  # type: ignore[arg-type]
    assert "no longer a folder" in failed.value.output
