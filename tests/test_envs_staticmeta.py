"""A project whose build cannot prepare its own metadata (a setup.py that imports the project,
which wants a dependency: astropy 2.x-3.x) is given to uv with what its files declare."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from env_helpers import build_env, run_tests
from repo_helpers import git_repo
from swebounty.envs import EnvManager
from swebounty.envs.staticmeta import declared, failed_in_project

# As astropy 2.0's setup.py: the requirement is built from the package's own attribute, the
# build requirements grow by .extend(), the extras are a name bound at module level.
ASTROPY_LIKE = """\
import os
import selfimport

NAME = 'selfimport'
min_six = 'six>=' + selfimport.__minimum_six_version__
setup_requires = [min_six]
if not os.path.exists('PKG-INFO'):
    setup_requires.extend(['cython>=0.21', 'jinja2>=2.7'])
install_requires = [min_six]
extras_require = {'test': ['pytest'], 'all:python_version<"3.7"': ['dataclasses']}
from setuptools import setup
setup(name=NAME, version='1.0', packages=['selfimport'], setup_requires=setup_requires,
      install_requires=install_requires, extras_require=extras_require)
"""


def test_what_setup_py_declares_is_read_without_running_it(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text(ASTROPY_LIKE)
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires =\n    attrs>=17\n")
    repair = declared(tmp_path, "SelfImport")
    assert repair is not None and repair.name == "selfimport"
    assert repair.requires == [
        "six",
        "attrs>=17",
        "cython>=0.21",
        "jinja2>=2.7",
        'pytest; extra == "test"',
        'dataclasses; (python_version < "3.7") and extra == "all"',
    ]
    assert 'requires-dist = ["six"' in repair.toml()
    assert declared(tmp_path, None) is None
    assert declared(tmp_path / "nothing", "x") is None


def test_only_the_project_s_own_metadata_failure_counts(tmp_path: Path) -> None:
    project = tmp_path / "project"
    own = (
        "error: The build backend returned an error\n  cause: Call to "
        "`setuptools.build_meta:__legacy__.get_requires_for_build_wheel` failed\n"
        f'  File "{project}/selfimport/__init__.py", line 4\n'
        "ImportError: six version 1.10 or later must be installed"
    )
    assert failed_in_project(own, project)
    dependency = (
        "  × Failed to build `oldpkg==1.0`\n  ├─▶ The build backend returned an error\n"
        '  File "setup.py", line 1\nImportError: x'
    )
    assert not failed_in_project(dependency, project)
    assert not failed_in_project("No solution found when resolving dependencies", project)


SELFIMPORT = {
    "setup.py": """
        from setuptools import setup
        import selfimport  # as astropy's setup.py imports astropy
        REQ = 'six>=' + selfimport.__minimum_six_version__
        setup(name='selfimport', version='1.0', packages=['selfimport'],
              install_requires=[REQ], extras_require={'test': ['pytest']})
    """,
    "selfimport/__init__.py": """
        __minimum_six_version__ = '1.10'
        try:
            import six
        except ImportError:
            raise ImportError('six version 1.10 or later must be installed to use selfimport')
    """,
    "tests/test_it.py": """
        import selfimport
        def test_it():
            assert selfimport.six.PY3
    """,
}


@pytest.mark.network
def test_a_setup_py_that_imports_its_project_gets_an_environment(
    tmp_path: Path, index_reachable: None
) -> None:
    """uv's metadata build has no six, so the project's import fails there; given what setup.py
    declares, the environment has six and pytest, and the era's pip installs the project."""
    ws = git_repo(tmp_path / "ws", SELFIMPORT)
    manager = EnvManager(tmp_path / "cache")
    when = datetime(2020, 6, 1, tzinfo=timezone.utc)
    env = build_env(manager, ws, when, "self-1", "test/selfimport")
    assert "six==" in env.lock and "pytest==" in env.lock
    assert any("read from its files" in line for line in env.why), env.why
    run_tests(manager.for_task(env, ws, tmp_path / "scratch"), ws)


# As scikit-learn 0.20-0.22's setup.py: the keywords are a dict bound inside a function and
# passed as `setup(**metadata)`, the requirements are formatted, the extras come from a dict
# bound in a branch and spread into it.
SKLEARN_LIKE = """\
import sys
NUMPY_MIN_VERSION = '1.11.0'
if {'develop', 'egg_info'}.intersection(sys.argv):
    extra_setuptools_args = dict(zip_safe=False,
                                 extras_require={'alldeps': ('numpy >= {}'.format(NUMPY_MIN_VERSION),)})
else:
    extra_setuptools_args = dict()

def setup_package():
    metadata = dict(name='sklike', version='0.1',
                    install_requires=['numpy>={}'.format(NUMPY_MIN_VERSION),
                                      'scipy>=%s' % '0.17.0', 'joblib>=0.11'],
                    **extra_setuptools_args)
    from numpy.distutils.core import setup
    setup(**metadata)

if __name__ == '__main__':
    setup_package()
"""


def test_setup_keywords_passed_as_a_dict_are_read(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text(SKLEARN_LIKE)
    repair = declared(tmp_path, "sklike")
    assert repair is not None
    assert repair.requires == ["numpy", "scipy", "joblib>=0.11", 'numpy; extra == "alldeps"']
