"""A project whose own build imports what nothing declares (scikit-learn 0.20-0.22's
`sklearn/utils/setup.py`: `from Cython import Tempita`) gets that distribution added."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from env_helpers import build_env, run_tests
from repo_helpers import git_repo
from swebounty.envs import EnvManager
from swebounty.envs.buildneeds import distribution, missing_build_module

# As pip 19 printed scikit-learn 0.21's failed install (trimmed).
PROJECT_IMPORT = """\
    Traceback (most recent call last):
      File "<string>", line 1, in <module>
      File "/tmp/pip-req-build-9nspwbsv/setup.py", line 290, in <module>
        setup_package()
      File "/venv/lib/python3.6/site-packages/numpy/distutils/misc_util.py", line 942, in x
        config = setup_module.configuration(*args)
      File "sklearn/utils/setup.py", line 8, in configuration
        from Cython import Tempita
    ModuleNotFoundError: No module named 'Cython'
    ----------------------------------------
ERROR: Command "python -u -c '...' install --record ..." failed with error code 1
"""


def test_the_project_s_own_import_names_the_module() -> None:
    assert missing_build_module(PROJECT_IMPORT) == "Cython"
    assert distribution("Cython") == "Cython" and distribution("yaml") == "PyYAML"
    py2 = '  File "/src/pkg/build_helpers.py", line 3\nImportError: No module named jinja2.x\n'
    assert missing_build_module(py2) == "jinja2"


def test_an_installed_package_s_import_or_the_interpreter_s_is_not_the_project_s() -> None:
    installed = (
        '  File "/tmp/proj/setup.py", line 3, in <module>\n'
        '  File "/venv/lib/python3.9/site-packages/numpy/distutils/core.py", line 9\n'
        "ModuleNotFoundError: No module named 'distutils.msvccompiler'\n"
    )
    assert missing_build_module(installed) is None
    interpreter = (
        '  File "/tmp/proj/setup.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named '_ctypes'\n"
    )
    assert missing_build_module(interpreter) is None
    assert missing_build_module("error: command 'gcc' failed with exit status 1") is None
    no_frame = "ModuleNotFoundError: No module named 'Cython'\n"
    assert missing_build_module(no_frame) is None


# The build imports its own helper only when it builds (as scikit-learn's setup.py reaches its
# subpackages' setup.py files only past the metadata commands); the helper needs `tabulate`,
# which no file of the project declares. It asks for Python >= 3.9 so that the build walks one
# interpreter before the rule applies, not each one the machine has (~10 s each, all failing
# alike): the rule is what is tested, not the walk.
BUILDNEED = {
    "setup.py": """
        import sys
        from setuptools import setup
        if {"develop", "install", "build", "build_ext", "build_py", "bdist_wheel"} & set(sys.argv):
            sys.path.insert(0, "tools")
            import build_helper
        setup(name="buildneed", version="1.0", packages=["buildneed"],
              python_requires=">=3.9")
    """,
    "tools/build_helper.py": """
        import tabulate  # what only the developers' machines have
    """,
    "buildneed/__init__.py": "ANSWER = 42\n",
    "tests/test_it.py": """
        import buildneed
        def test_it():
            assert buildneed.ANSWER == 42
    """,
}


@pytest.mark.network
def test_a_build_that_imports_an_undeclared_module_gets_it(
    tmp_path: Path, index_reachable: None
) -> None:
    """Without the rule no environment is built (the install fails on every interpreter);
    with it, tabulate is resolved at the cutoff, the project installs and its tests pass."""
    ws = git_repo(tmp_path / "ws", BUILDNEED)
    manager = EnvManager(tmp_path / "cache")
    when = datetime(2021, 6, 1, tzinfo=timezone.utc)
    env = build_env(manager, ws, when, "buildneed-1", "test/buildneed")
    assert "tabulate==" in env.lock
    assert any("its build imports tabulate" in line for line in env.why), env.why
    run_tests(manager.for_task(env, ws, tmp_path / "scratch"), ws)
