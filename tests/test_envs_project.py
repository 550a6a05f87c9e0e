"""Facts about a repository's test environment, read from its files (never run)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from swebounty.envs.project import inputs_digest, plan_deps, read_project, setup_py_keywords


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_pyproject_project_table(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        '[build-system]\nrequires = ["setuptools>=64", "setuptools_scm>=7"]\n'
        'build-backend = "setuptools.build_meta"\n'
        '[project]\nname = "modern"\nrequires-python = ">=3.9"\n'
        'classifiers = ["Programming Language :: Python :: 3.9",'
        ' "Programming Language :: Python :: 3.10"]\n'
        "[project.optional-dependencies]\n"
        'test = ["pytest"]\ndocs = ["sphinx"]\nplot = ["matplotlib"]\n',
    )
    facts = read_project(tmp_path)
    assert facts.name == "modern"
    assert facts.python.requires_python == ">=3.9"
    assert facts.python.classifiers == ["3.9", "3.10"]
    assert facts.extras == ["test", "docs", "plot"]
    assert facts.build_requires == ["setuptools>=64", "setuptools_scm>=7"]
    assert not facts.native


def test_hatchling_editable_needs_are_build_requirements(tmp_path: Path) -> None:
    # The era's pip installs editable without build isolation; hatchling then imports
    # `editables` (attrs fell back to a per-task copy install without it).
    write(
        tmp_path,
        "pyproject.toml",
        '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\n'
        'build-backend = "hatchling.build"\n[project]\nname = "h"\ndynamic = ["version"]\n',
    )
    facts = read_project(tmp_path)
    assert facts.build_requires == ["hatchling", "hatch-vcs", "editables"]
    assert facts.vcs_tag_prefix == ""


def test_setup_cfg(tmp_path: Path) -> None:
    write(
        tmp_path,
        "setup.cfg",
        "[metadata]\nname = cfgproj\nclassifiers =\n"
        "    Programming Language :: Python :: 3.7\n"
        "[options]\npython_requires = >=3.7\nsetup_requires =\n    setuptools_scm\n"
        "[options.extras_require]\ntesting =\n    pytest\nyaml = pyyaml\n",
    )
    write(tmp_path, "setup.py", "from setuptools import setup\nsetup()\n")
    facts = read_project(tmp_path)
    assert facts.name == "cfgproj"
    assert facts.python.requires_python == ">=3.7"
    assert facts.extras == ["testing", "yaml"]
    assert facts.build_requires == ["setuptools_scm"]


def test_setup_py_dict_style_and_names(tmp_path: Path) -> None:
    write(
        tmp_path,
        "setup.py",
        "from setuptools import setup, Extension\n"
        "EXTRAS = {'tests': ['pytest'], 'fast': ['ujson']}\n"
        "EXTRAS['all'] = EXTRAS['tests'] + EXTRAS['fast']\n"
        "config = {'name': 'oldproj', 'python_requires': '>=3.6',\n"
        "          'setup_requires': ['numpy', 'cython']}\n"
        "setup(extras_require=EXTRAS, ext_modules=[Extension('x', ['x.c'])], **config)\n",
    )
    facts = read_project(tmp_path)
    assert facts.name == "oldproj"
    assert facts.python.requires_python == ">=3.6"
    assert facts.extras == ["tests", "fast", "all"]
    assert facts.build_requires == ["numpy", "cython"]
    assert facts.native


def test_setup_py_computed_extras_keys() -> None:
    kw = setup_py_keywords(
        "import os\nextras = {}\nextras['test'] = ['pytest']\nextras['dev'] = list(os.environ)\n"
        "setup(name='p', extras_require=extras, python_requires=os.environ['X'])\n"
    )
    assert sorted(kw["extras_require"]) == ["dev", "test"]
    assert "python_requires" not in kw


def test_ci_matrices(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".github/workflows/tests.yml",
        "jobs:\n  test:\n    strategy:\n      matrix:\n"
        "        python-version: [3.7, '3.8', \"3.10\"]\n"
        "        os: [ubuntu-latest]\n"
        "    steps:\n      - uses: actions/setup-python@v4\n"
        "        with:\n          python-version: ${{ matrix.python-version }}\n",
    )
    write(tmp_path, ".travis.yml", 'language: python\npython:\n  - 3.6\n  - "3.9"\nscript: x\n')
    facts = read_project(tmp_path)
    assert facts.python.ci == ["3.6", "3.7", "3.8", "3.9", "3.10"]


def test_ci_matrices_read_as_yaml_keep_versions_as_written(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".github/workflows/ci.yml",
        "jobs:\n  t:\n    strategy:\n      matrix:\n"
        "        include:\n          - python: 3.10\n          - {python: '3.12', os: mac}\n"
        "    env: {PYTHON_HOME: /opt/3.4}\n"  # not a version list: ignored
        "    steps:\n      - run: echo python 3.5\n",  # a command, not a matrix
    )
    write(tmp_path, "azure-pipelines.yml", "variables:\n  python.version: '3.11'\n")
    write(tmp_path, "appveyor.yml", "\tnot: [yaml\n")  # broken files are skipped
    assert read_project(tmp_path).python.ci == ["3.10", "3.11", "3.12"]


def test_plans_prefer_tox_then_files_then_smaller_sets(tmp_path: Path) -> None:
    write(
        tmp_path,
        "setup.py",
        "from setuptools import setup\n"
        "setup(name='p', extras_require={'test': ['pytest'], 'docs': ['sphinx'],"
        " 'speed': ['ujson']})\n",
    )
    write(tmp_path, "tox.ini", "[tox]\nenvlist=py38\n[testenv]\ndeps = coverage<5\nextras = test\n")
    write(tmp_path, "requirements_test.txt", "coverage~=7.0\n-e .\n")
    write(tmp_path, "pyproject.toml", '[dependency-groups]\ntest = ["hypothesis"]\n')
    facts = read_project(tmp_path)
    notes: list[str] = []
    always, plans = plan_deps(tmp_path, facts, "3.8", notes)
    assert always == []  # dependency groups are plans' lines, each source with then without
    labels = [p.label for p in plans]
    assert labels[0].startswith("tox deps + dependency groups (dependency-groups.test), all")
    assert labels[1].startswith("tox deps, all extras")
    assert labels[2].startswith("requirement files (requirements_test.txt) + dependency groups")
    assert labels[3].startswith("requirement files")
    assert labels[4].startswith("dependency groups (dependency-groups.test), all extras")
    assert plans[0].lines == ["coverage<5", "hypothesis"] and plans[1].lines == ["coverage<5"]
    assert plans[3].lines == ["coverage~=7.0"] and plans[4].lines == ["hypothesis"]
    assert plans[0].extras == ["test", "speed"]  # docs never changes what tests import
    assert plans[-1].extras == [] and plans[-1].lines == []
    assert any(p.extras == ["test"] for p in plans)


def test_digest_follows_packaging_files_not_code(tmp_path: Path) -> None:
    write(tmp_path, "setup.py", "setup(name='p')\n")
    write(tmp_path, "pkg/__init__.py", "x = 1\n")
    before = inputs_digest(tmp_path)
    write(tmp_path, "pkg/__init__.py", "x = 2\n")
    assert inputs_digest(tmp_path) == before
    write(tmp_path, "requirements-dev.txt", "pytest\n")
    assert inputs_digest(tmp_path) != before


def test_marker_keyed_extras_are_not_extra_names(tmp_path: Path) -> None:
    # setuptools reads extras_require keys as `name:marker`; a key with no name (sphinx's
    # ':sys_platform=="win32"') holds platform requirements, not an extra to install.
    write(
        tmp_path,
        "setup.py",
        "from setuptools import setup\n"
        "extras_require = {\n"
        "    ':sys_platform==\"win32\"': ['colorama'],\n"
        "    'test:python_version>=\"3\"': ['pytest'],\n"
        "    'docs': ['sphinx'],\n"
        "    'bad name!': ['x'],\n"
        "}\n"
        "setup(name='marked', extras_require=extras_require)\n",
    )
    facts = read_project(tmp_path)
    assert facts.extras == ["test", "docs"]
    _, plans = plan_deps(tmp_path, facts, "3.9", [])
    assert all(":" not in e for p in plans for e in p.extras)
    assert plans[0].extras == ["test"]  # docs is never installed for tests


def test_a_plain_requirements_txt_counts_when_nothing_else_declares_tests(tmp_path: Path) -> None:
    write(tmp_path, "setup.py", "from setuptools import setup\nsetup(name='lib')\n")
    write(tmp_path, "requirements.txt", "pytest-httpbin==0.2.0\n")
    facts = read_project(tmp_path)
    assert facts.requirement_files == ["requirements.txt"]
    assert facts.notes == ["no test dependencies declared elsewhere: requirements.txt used"]
    # With a test extra (or tox, or test requirement files), it is the app's runtime list.
    write(
        tmp_path,
        "setup.py",
        "from setuptools import setup\nsetup(name='lib', extras_require={'test': ['x']})\n",
    )
    assert read_project(tmp_path).requirement_files == []
    write(tmp_path, "requirements-dev.txt", "pytest\n")
    assert read_project(tmp_path).requirement_files == ["requirements-dev.txt"]


def test_digest_is_the_one_cache_keys_were_made_with(tmp_path: Path) -> None:
    """Digests are cache keys: hashing in chunks must give the value reading each file whole
    gave (a lockfile-sized requirements file spans many chunks), pinned here."""
    write(tmp_path, "setup.py", "setup(name='p')\n")
    write(tmp_path, "tox.ini", "[tox]\nenvlist = py39\n")
    write(tmp_path, "requirements/dev.txt", "pytest\n" * 50_000)  # 350 KB
    write(tmp_path, "pkg/__init__.py", "x = 1\n")
    whole = hashlib.sha256()
    for pattern in (
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "tox.ini",
        "*.txt",
        "requirements/*",
    ):
        for path in sorted(tmp_path.glob(pattern)):
            if path.is_file():
                whole.update(path.relative_to(tmp_path).as_posix().encode() + b"\0")
                whole.update(path.read_bytes() + b"\0")
    assert inputs_digest(tmp_path) == whole.hexdigest()[:16] == "cf17850d8b8d1718"
