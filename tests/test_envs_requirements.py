"""Requirement files, tox configuration and dependency groups, read as a builder needs them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from swebounty.envs.requirements import (
    dependency_groups,
    find_requirement_files,
    poetry_constraint,
    read_requirement_file,
)
from swebounty.envs.tox import ToxConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_requirement_file_is_flattened_and_made_safe(tmp_path: Path) -> None:
    write(tmp_path, "requirements/base.txt", "attrs>=20  # runtime\n")
    path = write(
        tmp_path,
        "requirements-dev.txt",
        "-r requirements/base.txt\n"
        "-e .[test,extra]\n"
        "--index-url https://example.invalid/simple\n"
        "pytest==6.2.5 \\\n    --hash=sha256:abc\n"
        "git+https://github.com/x/y.git#egg=y\n"
        "myproj>=1.0\n"
        "./plugins/thing\n"
        "numpy; python_version < '3.11'\n",
    )
    notes: list[str] = []
    lines, extras = read_requirement_file(path, tmp_path, "MyProj", notes)
    assert lines == ["attrs>=20", "pytest==6.2.5", 'numpy; python_version < "3.11"']
    assert extras == ["test", "extra"]  # the project itself is never installed from the index
    assert any("--index-url" in n for n in notes)
    assert any("URL" in n for n in notes)
    assert any("local path" in n for n in notes)


def test_requirement_files_found_by_name(tmp_path: Path) -> None:
    for rel in [
        "requirements.txt",
        "requirements_test.txt",
        "requirements/test.txt",
        "requirements/docs.txt",
        "dev-requirements.txt",
        "docs/requirements.txt",
    ]:
        write(tmp_path, rel, "x\n")
    found = find_requirement_files(tmp_path)
    assert found == ["requirements_test.txt", "dev-requirements.txt", "requirements/test.txt"]


def test_a_tests_requirements_folder_gives_its_python3_file_not_the_backends(
    tmp_path: Path,
) -> None:
    # django's layout: py3.txt is every test run's; the others need database servers.
    for name in ("py3.txt", "mysql.txt", "postgres.txt", "oracle.txt"):
        write(tmp_path, f"tests/requirements/{name}", "x\n")
    assert find_requirement_files(tmp_path) == ["tests/requirements/py3.txt"]


def test_tox_ini_envs_deps_extras(tmp_path: Path) -> None:
    write(tmp_path, "requirements_test.txt", "pytest>=6\n")
    write(
        tmp_path,
        "tox.ini",
        "[tox]\nenvlist = lint, py{37,38,39}-django{22,30}, py310\n\n"
        "[base]\ndeps =\n    mock\n\n"
        "[testenv]\nextras =\n    tests\n    reco\n"
        "deps =\n"
        "    -Ur{toxinidir}/requirements_test.txt\n"
        "    {[base]deps}\n"
        "    coverage<5\n"
        "    py38: only38\n"
        "    !py38: not38\n"
        "    django22: Django>=2.2,<3\n"
        "    -e .\n"
        "    git+https://example.invalid/x.git\n",
    )
    tox = ToxConfig.load(tmp_path, {})
    assert tox is not None
    assert tox.python_versions() == ["3.10", "3.7", "3.8", "3.9"]
    assert tox.extras() == ["tests", "reco"]
    notes: list[str] = []
    deps = tox.deps("3.8", "proj", notes, tmp_path)
    assert deps == ["pytest>=6", "mock", "coverage<5", "only38"]
    deps39 = tox.deps("3.9", "proj", [], tmp_path)
    assert "not38" in deps39 and "only38" not in deps39


def test_tox_in_setup_cfg_and_pyproject(tmp_path: Path) -> None:
    write(tmp_path, "setup.cfg", "[tox:tox]\nenvlist = py36,py37\n[testenv]\ndeps = pytest\n")
    tox = ToxConfig.load(tmp_path, {})
    assert tox is not None and tox.python_versions() == ["3.6", "3.7"]
    legacy = {"tool": {"tox": {"legacy_tox_ini": "[tox]\nenvlist=py311\n[testenv]\nextras=test\n"}}}
    tox = ToxConfig.load(tmp_path / "none", legacy)
    assert tox is not None and tox.extras() == ["test"] and tox.python_versions() == ["3.11"]
    native = {
        "tool": {
            "tox": {
                "env_list": ["3.12", "py311"],
                "env_run_base": {"deps": ["hypothesis"], "extras": ["testing"]},
            }
        }
    }
    tox = ToxConfig.load(tmp_path / "none", native)
    assert tox is not None
    assert tox.deps("3.11", None, [], tmp_path) == ["hypothesis"]
    assert tox.extras() == ["testing"]


def test_dependency_groups_pep735_and_tools() -> None:
    pyproject = tomllib.loads(
        """
[dependency-groups]
test = ["pytest>=7", {include-group = "typing"}]
typing = ["mypy"]
docs = ["sphinx"]

[tool.poetry.group.dev.dependencies]
hypothesis = "^6.1"
mything = {path = "../mything"}

[tool.pdm.dev-dependencies]
testing = ["pytest-mock"]
"""
    )
    notes: list[str] = []
    lines, used = dependency_groups(pyproject, "proj", notes)
    assert lines == ["pytest>=7", "mypy", "pytest-mock", "hypothesis<7,>=6.1"]
    assert "dependency-groups.test" in used and "tool.poetry.group.dev" in used
    assert "sphinx" not in lines


@pytest.mark.parametrize(
    ("poetry", "pep440"),
    [
        ("^1.2.3", ">=1.2.3,<2"),
        ("^0.2.3", ">=0.2.3,<0.3"),
        ("~1.2.3", ">=1.2.3,<1.3"),
        ("~1.2", ">=1.2,<1.3"),
        ("*", ""),
        ("1.4", "==1.4"),
        (">=2.0,<3.0", ">=2.0,<3.0"),
    ],
)
def test_poetry_constraints(poetry: str, pep440: str) -> None:
    assert poetry_constraint(poetry) == pep440


def test_tox_extras_conditional_on_a_factor_are_extra_names(tmp_path: Path) -> None:
    """astropy's tox.ini: `extras = test: test`, `alldeps: all`; `test:` is no extra, and uv
    refuses the whole `./project[...]` requirement for it."""
    (tmp_path / "tox.ini").write_text(
        "[testenv]\nextras =\n    test: test\n    recdeps: recommended\n    alldeps: all\n"
        "    docs\n"
    )
    tox = ToxConfig.load(tmp_path, {})
    assert tox is not None
    assert tox.extras() == ["test", "recommended", "all", "docs"]
    assert tox.extras("3.10") == ["docs"]  # with a Python, factors of other envs drop out
