"""Compiled extensions end to end (envs/natives.py): a small repository with a C extension,
graded through the real evaluation path and sandbox (`network`: its environment comes from the
package index). Built once per tree of build inputs (two tasks on one commit and a third on a
later commit with the same compiled sources share one build); rebuilt in the sandbox when a
patch changes the C source; a patch that breaks the build is `unresolved`; a base commit that
cannot build is an `error` that names what it lacks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from repo_helpers import git_env, git_repo
from swebounty.envs.natives import changed_inputs, is_input, tree_inputs
from swebounty.sandbox import bwrap_available
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
WHEN = "2024-03-01T12:00:00+00:00"

C_SOURCE = """\
#include <Python.h>
{include}
static PyObject *add(PyObject *self, PyObject *args) {{
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong({add});
}}
static PyObject *mul(PyObject *self, PyObject *args) {{
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a * b);
}}
static PyMethodDef methods[] = {{
    {{"add", add, METH_VARARGS, ""}}, {{"mul", mul, METH_VARARGS, ""}}, {{NULL, NULL, 0, NULL}}
}};
static struct PyModuleDef module = {{PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods}};
PyMODINIT_FUNC PyInit__fast(void) {{ return PyModule_Create(&module); }}
"""
FILES = {
    "setup.py": 'from setuptools import Extension, setup\n\nsetup(name="cext", version="0.1", '
    'packages=["cext"],\n      ext_modules=[Extension("cext._fast", ["cext/_fast.c"])])\n',
    "cext/__init__.py": "from cext._fast import add, mul\n",
    "cext/util.py": "def twice(x):\n    return x + 2\n",
    "cext/_fast.c": C_SOURCE.format(include="", add="a - b"),  # the bug: add subtracts
    "tests/__init__.py": "",
}
TESTS = (
    "from cext import add, mul\nfrom cext.util import twice\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_twice():\n    assert twice(3) == 6\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)


def git(repo: Path, *argv: str) -> str:
    return subprocess.run(["git", *argv], cwd=repo, env=git_env(WHEN), check=True,
                          capture_output=True, text=True).stdout  # fmt: skip


def diff_of(repo: Path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        (repo / rel).write_text(text)
    git(repo, "add", "-N", ".")
    patch = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    return patch


def commit(repo: Path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        (repo / rel).write_text(text)
    git(repo, "commit", "-qam", "next")
    return git(repo, "rev-parse", "HEAD").strip()


def test_build_inputs_are_the_compiled_sources_and_packaging_files(tmp_path: Path) -> None:
    assert is_input("setup.py") and is_input("cext/_fast.c") and is_input("a/b/meson.build")
    assert is_input("sklearn/_loss.pyx.tp") and is_input("src/x.h")
    assert is_input("sklearn/svm/setup.py")  # numpy.distutils: extensions per subpackage
    assert not is_input("conftest.py") and not is_input("cext/util.py")
    assert not is_input("docs/conf.py")  # a .py file below the root is code, not the build
    repo = git_repo(tmp_path / "r", FILES)
    before = tree_inputs(repo)
    assert set(before) == {"setup.py", "cext/_fast.c"}
    (repo / "cext" / "util.py").write_text("def twice(x):\n    return 2 * x\n")
    (repo / "cext" / "_fast.c").write_text("/* changed */\n")
    build: Any = type("B", (), {"inputs": before})()
    assert changed_inputs(build, repo) == ["cext/_fast.c"]


def test_a_build_output_that_is_a_link_stays_out_of_the_natives_cache(tmp_path: Path) -> None:
    """The build's extensions and generated files are the repository's: one that is a link
    (to a host secret), or reached through a linked folder, is not stored, so never placed."""
    from swebounty.envs.cache import CacheLayout
    from swebounty.envs.natives import built, place, seed
    from swebounty.envs.tasklayer import ProjectInstall

    secrets = tmp_path / "home" / ".ssh"
    secrets.mkdir(parents=True)
    (secrets / "id_rsa").write_text("PRIVATE KEY\n")
    ws = git_repo(tmp_path / "ws", FILES)
    project = tmp_path / "project"
    shutil.copytree(ws, project)
    (project / "cext" / "_fast.so").write_bytes(b"\x7fELF built")
    (project / "cext" / "_evil.so").symlink_to(secrets / "id_rsa")
    (project / "cext" / "_version.py").symlink_to(secrets / "id_rsa")
    (project / "cext" / "linked").symlink_to(secrets, target_is_directory=True)
    info = ProjectInstall(
        natives=["cext/_fast.so", "cext/_evil.so", "cext/linked/id_rsa"],
        generated=["cext/_version.py"],
    )
    cache = CacheLayout(tmp_path / "cache")
    seed(cache, env_key="e", workspace=ws, project=project, info=info, version_env={})
    build = built(cache, env_key="e", workspace=ws, version_env={})
    assert build is not None and build.natives == ["cext/_fast.so"] and build.generated == []
    stored = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert not any(b"PRIVATE KEY" in p.read_bytes() for p in stored)
    task = git_repo(tmp_path / "task", FILES)
    place(build, task, [])
    assert (task / "cext" / "_fast.so").read_bytes() == b"\x7fELF built"
    assert (
        not (task / "cext" / "_evil.so").exists() and not (task / "cext" / "_version.py").exists()
    )
    # A cache moved elsewhere (a home renamed) still places its builds, from where it is now.
    (tmp_path / "cache").rename(tmp_path / "moved")
    moved = built(CacheLayout(tmp_path / "moved"), env_key="e", workspace=ws, version_env={})
    assert moved is not None and moved.store.is_relative_to(tmp_path / "moved")
    again = git_repo(tmp_path / "again", FILES)
    place(moved, again, [])
    assert (again / "cext" / "_fast.so").read_bytes() == b"\x7fELF built"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("natives")
    repo = git_repo(root / "repos" / "small__cext", FILES, when=WHEN)
    base = git(repo, "rev-parse", "HEAD").strip()
    test_patch = diff_of(repo, {"tests/test_a.py": TESTS})
    fix_py = diff_of(repo, {"cext/util.py": "def twice(x):\n    return 2 * x\n"})
    fix_c = diff_of(repo, {"cext/_fast.c": C_SOURCE.format(include="", add="a + b")})
    breaks_c = diff_of(repo, {"cext/_fast.c": C_SOURCE.format(include="", add="a + b;;;(")})
    # A later commit that cannot build here, then one whose build inputs equal the base's.
    broken = commit(repo, {"cext/_fast.c": C_SOURCE.format(include="#include <nosuchlib_swb.h>",
                                                          add="a - b")})  # fmt: skip
    later = commit(repo, {"cext/_fast.c": FILES["cext/_fast.c"], "README": "docs\n"})
    task = {"repo": "small/cext", "problem_statement": "bugs", "test_patch": test_patch,
            "PASS_TO_PASS": json.dumps(["tests/test_a.py::test_mul"]),
            "created_at": "2024-03-01T12:00:00Z", "version": "0.1"}  # fmt: skip
    twice, add = (
        json.dumps(["tests/test_a.py::test_twice"]),
        json.dumps(["tests/test_a.py::test_add"]),
    )
    records = [
        {**task, "instance_id": "small__cext-1", "base_commit": base, "patch": fix_py,
         "FAIL_TO_PASS": twice},
        {**task, "instance_id": "small__cext-2", "base_commit": base, "patch": fix_c,
         "FAIL_TO_PASS": add},
        {**task, "instance_id": "small__cext-3", "base_commit": broken, "patch": fix_py,
         "FAIL_TO_PASS": twice},
        {**task, "instance_id": "small__cext-4", "base_commit": later, "patch": fix_py,
         "FAIL_TO_PASS": twice},
    ]  # fmt: skip
    dataset = root / "tasks.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    preds = root / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": "small__cext-2", "model_name_or_path": "broke",
                                 "model_patch": breaks_c}) + "\n")  # fmt: skip
    return {"dataset": dataset, "preds": preds, "repos": root / "repos",
            "cache": root / "cache", "runs": root / "runs"}  # fmt: skip


def _evaluate(small: dict[str, Any], subs: Any, run_id: str) -> dict[str, Verdict]:
    from swebounty.evaluation import evaluate

    verdicts = evaluate(small["dataset"], subs, run_id=run_id, repos_dir=small["repos"],
                        cache_dir=small["cache"], runs_dir=small["runs"])  # fmt: skip
    return {v.instance_id: v for v in verdicts}


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_extensions_build_once_per_inputs_and_again_for_a_patch(
    small: dict[str, Any], index_reachable: None
) -> None:
    gold = _evaluate(small, "gold", "gold")
    for one in ("small__cext-1", "small__cext-2", "small__cext-4"):
        assert gold[one].status == "resolved", (one, gold[one].reason)
    # One build for the base commit's tree, shared by tasks 1, 2 and 4 (4 is a later commit
    # with the same compiled sources); the broken commit's build failed and is remembered.
    natives = small["cache"] / "envs" / "natives"
    built = sorted(d for d in natives.iterdir() if (d / "ready.json").is_file())
    failed = sorted(d for d in natives.iterdir() if (d / "failed.json").is_file())
    assert len(built) == 1 and len(failed) == 1, (built, failed)
    # Task 2's patch changed the C source: rebuilt in the sandbox, before its tests.
    two = (Path(gold["small__cext-2"].log_dir or "") / "test_output.txt").read_text()
    assert "installing the workspace" in two
    one = (Path(gold["small__cext-1"].log_dir or "") / "test_output.txt").read_text()
    assert "installing the workspace" not in one  # placed, not built
    # The base that cannot build: an error naming what it lacks.
    three = gold["small__cext-3"]
    assert three.status == "error", three.reason
    assert "nosuchlib_swb.h is missing" in three.reason
    # A patch that breaks the build is the patch's: unresolved, never the base's old build.
    _evaluate(small, [small["preds"]], "broke")
    from swebounty.store import Store

    with Store.open(small["runs"]) as store:
        broke = {v.instance_id: v for v in store.verdicts("broke")}["small__cext-2"]
    assert broke.status == "unresolved", broke.reason
    empty = _evaluate(small, "empty", "empty")
    assert all(v.status in ("unresolved", "error") for v in empty.values())
    assert not any(v.status == "resolved" for v in empty.values())


def test_a_base_that_cannot_build_names_what_it_lacks() -> None:
    from swebounty.envs.failures import StepFailed, native_cause

    header = "src/ft2font.h:10:10: fatal error: ft2build.h: No such file or directory\n"
    assert "ft2build.h is missing" in (native_cause(header) or "")
    assert native_cause("error: command 'gcc' failed: No such file or directory") == (
        "no gcc compiler on this machine (install one)"
    )
    assert "libqhull_r" in (native_cause("/usr/bin/ld: cannot find -lqhull_r") or "")
    assert native_cause("error: Cython is not installed") is None
    failed = StepFailed("build the extensions", "build", header)
    assert failed.describe() == (
        "build the extensions failed: the C header ft2build.h is missing: a system "
        "library's development package is not installed"
    )


# A setup.py that counts its compiles in a module it generates in the project: the build
# sandbox lets it write nothing else (envs/buildbox.py), and what an install generates is kept
# with the environment's project install (`_generated`), and placed with the tree's build.
COUNTED = """\
import os
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COUNT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cext", "_compiles.py")


class counted(build_ext):
    def build_extensions(self):
        compile = self.compiler.compile

        def counting(*args, **kwargs):
            with open(COUNT, "a") as f:
                f.write("# compiled in %s\\n" % os.path.dirname(COUNT))
            return compile(*args, **kwargs)

        self.compiler.compile = counting
        build_ext.build_extensions(self)


setup(name="cext", version="0.1", packages=["cext"], cmdclass={"build_ext": counted},
      ext_modules=[Extension("cext._fast", ["cext/_fast.c"])])
"""


def compiles(env: Any) -> int:
    """Compiles counted in the build copy whose install the environment keeps."""
    kept = Path(env.project_store) / "_generated" / "cext" / "_compiles.py"
    return kept.read_text().count("compiled") if kept.is_file() else 0


@pytest.mark.network
def test_a_tree_s_build_is_placed_in_a_second_spec_s_and_a_completed_environment(
    tmp_path: Path, index_reachable: None
) -> None:
    """Two base commits a week apart with the same build inputs have specs of their own (the
    exact cutoffs differ) and one environment (the shared cutoff's lock): the second
    environment build places the first's extensions, and the era's in-place build (pip 19,
    `setup.py develop`) finds them up to date. Without the rule it compiled the tree again.

    Completion (a module the base's tests skip without) installs the project in a new
    environment whose lock keeps every pin of the first's: the first's build is placed there
    too, not compiled again (scikit-learn: 600 s more per task in the cold Lite run); and that
    build is the tree's in the new environment, so the task's extensions are not compiled a
    third time (scikit-learn-25570). One test: both start from the same first environment
    build, the costly part."""
    from datetime import datetime, timezone

    from env_helpers import build_env, run_tests
    from swebounty.envs import EnvManager

    files = {**FILES, "setup.py": COUNTED,
             "tests/test_a.py": "import pytest\n\nfrom cext import mul\n\n\ndef test_mul():\n"
                                "    assert mul(2, 3) == 6\n\n\ndef test_table():\n"
                                "    pytest.importorskip('tabulate')\n"}  # fmt: skip
    ws = git_repo(tmp_path / "ws", files)
    manager = EnvManager(tmp_path / "cache")
    when = datetime(2019, 6, 10, tzinfo=timezone.utc)
    first = build_env(manager, ws, when, "c-1", "t/cext")
    assert compiles(first) == 1
    second = build_env(manager, ws, datetime(2019, 6, 20, tzinfo=timezone.utc), "c-2", "t/cext")
    assert first.spec_key != second.spec_key and first.key == second.key
    assert compiles(second) == 1  # the first build's, placed: not compiled again
    assert second.project is not None and second.project.natives == first.project.natives
    assert second.native is not None and second.native.key == first.native.key

    assert manager.complete(first, ["tabulate"], ws)
    completed = build_env(manager, ws, when, "c-1", "t/cext")
    assert completed.key != first.key and "tabulate==" in completed.lock
    assert compiles(completed) == 1
    kept = Path(completed.project_store) / "_generated" / "cext" / "_compiles.py"
    assert "swebounty-complete-" not in kept.read_text()  # the first build's, placed
    # ... and that build is the tree's there: the task's is seeded, not compiled a third time.
    assert completed.native is not None and completed.native.build_seconds == 0.0
    # Last: running the tests may build in the checkout, which the steps above copy.
    run_tests(manager.for_task(second, ws, tmp_path / "scratch"), ws)
