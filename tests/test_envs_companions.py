"""Companion releases (envs/companions.py): of the releases of the commit's own month, only the
dependencies that import the project are taken; the rest of the lock stays at the shared cutoff."""

from __future__ import annotations

import io
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from env_helpers import build_env
from repo_helpers import git_repo
from swebounty.envs import EnvManager
from swebounty.envs.companions import _python_sources, import_roots, imports_any


def test_import_roots_are_the_packages_at_the_root_or_in_src(tmp_path: Path) -> None:
    for rel in ("host/__init__.py", "src/other/__init__.py", "tests/__init__.py", "doc/x.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "loose").mkdir()  # not a package
    assert import_roots(tmp_path) == ["host", "other"]


def test_imports_any_tells_the_project_from_a_name_it_prefixes() -> None:
    roots = ["sphinx"]
    assert imports_any("from sphinx.locale import _\n", roots)
    assert imports_any("def f():\n    import sphinx\n", roots)
    assert imports_any("from sphinx import addnodes\n", roots)
    assert not imports_any("from sphinxcontrib.x import y\nimport sphinxcontrib\n", roots)
    assert not imports_any("# from sphinx import addnodes\nx = 'import sphinx'\n", roots)
    assert not imports_any("import jinja2\n", roots)


def test_a_plugins_tests_do_not_make_it_a_companion() -> None:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as z:
        z.writestr("plug/__init__.py", "import json\n")
        z.writestr("tests/test_plug.py", "import sphinx\n")
    sources = _python_sources("plug-1.0-py3-none-any.whl", data.getvalue())
    assert sources == ["import json\n"]
    assert _python_sources("plug-1.0.exe", b"") is None


@pytest.mark.network
def test_only_the_projects_companions_come_from_the_commits_month(
    tmp_path: Path, index_reachable: None
) -> None:
    # A project whose package is `sphinx`, as sphinx's was at the end of May 2021. In May,
    # sphinxcontrib-serializinghtml 1.1.5 (May 22, it imports sphinx) and Jinja2 3.0.1 (May 18,
    # it does not) were released; the shared cutoff (May 1st) has 1.1.4 and 2.11.3.
    ws = git_repo(
        tmp_path / "ws",
        {
            "setup.py": """
                from setuptools import setup
                setup(name="hostproj", version="1.0", packages=["sphinx"],
                      install_requires=["sphinxcontrib-serializinghtml", "Jinja2"])
                """,
            "sphinx/__init__.py": "",
            "tests/test_x.py": "def test_x():\n    pass\n",
        },
    )
    when = datetime(2021, 5, 25, 12, tzinfo=timezone.utc)
    env = build_env(EnvManager(tmp_path / "cache"), ws, when, "c-1", "test/companion")
    lock = env.lock.split()
    assert "sphinxcontrib-serializinghtml==1.1.5" in lock
    assert "jinja2==2.11.3" in lock  # not May's 3.0.1
    note = next(w for w in env.why if "companions of the project" in w)
    assert "sphinxcontrib-serializinghtml 1.1.5" in note and "not jinja2 3.0.1" in note
    assert "at the shared cutoff 2021-05-01" in note
    installed = (env.path.parent / "freeze.txt").read_text().lower().split()
    assert "sphinxcontrib-serializinghtml==1.1.5" in installed  # the allowance reached install
