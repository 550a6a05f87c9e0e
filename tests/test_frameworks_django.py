"""frameworks/django.py: which repositories it takes, the command it builds, and a django-style
project (django_helpers.py) graded end to end through the real path and sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from django_helpers import F2P, P2P, RUNTESTS, SKIPPED, django_project
from repo_helpers import git_repo
from swebounty.frameworks import BaseTree
from swebounty.frameworks.django import Django, options, runner_of, settings_module
from swebounty.frameworks.unittest import module_name, unittest_files
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Task
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")


def _tree(tmp: Path, files: dict[str, str]) -> BaseTree:
    git_repo(tmp / "o__p", files)
    task = Task(instance_id="o__p-1", repo="o/p", base_commit="HEAD", ecosystem="python")
    return BaseTree(task, tmp, tmp / "cache")


def test_a_runtests_py_that_runs_djangos_runner_is_django_wherever_it_sits(tmp_path: Path) -> None:
    task = Task(instance_id="o__p-1", repo="o/p", base_commit="HEAD", ecosystem="python")
    own = _tree(tmp_path / "a", {"tests/runtests.py": RUNTESTS, "tests/test_sqlite.py": "X = 1\n"})
    assert Django().applies(task, own)
    found = runner_of(own)
    assert found is not None and found[0] == "tests/runtests.py"
    assert settings_module(found[1], "tests", own) == "test_sqlite"
    app = "from django.test.utils import get_runner\nrunner = get_runner(settings)\n"
    assert runner_of(_tree(tmp_path / "b", {"runtests.py": app})) == ("runtests.py", app.encode())
    # A runtests.py of its own that does not run django's runner is not django's.
    other = _tree(tmp_path / "c", {"tests/runtests.py": "import unittest\nunittest.main()\n"})
    assert not Django().applies(task, other)
    assert not Django().applies(task.model_copy(update={"ecosystem": "node"}), own)


def test_the_command_uses_only_the_options_the_runner_has() -> None:
    text = RUNTESTS.encode()
    assert options(text, "test_sqlite") == [
        "--settings=test_sqlite", "--parallel", "1", "--verbosity", "2", "--noinput",
    ]  # fmt: skip
    assert options(b"from django.test.utils import get_runner", None) == []


def test_labels_are_the_test_patchs_modules_named_from_the_runners_folder() -> None:
    patch = "".join(
        f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1,2 @@\n x\n+y\n"
        for p in ("tests/forms/tests.py", "tests/forms/models.py", "tests/admin/test_views.py")
    )
    task = Task(
        instance_id="o__p-1", repo="o/p", base_commit="HEAD", test_patch=patch,
        FAIL_TO_PASS=["test_m (forms.models.T)"],
    )  # fmt: skip
    files = unittest_files(task, root="")
    assert files == ["tests/forms/tests.py", "tests/admin/test_views.py", "tests/forms/models.py"]
    assert [module_name(f, "tests") for f in files] == ["forms.tests", "admin.test_views",
                                                        "forms.models"]  # fmt: skip


# ------------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return django_project(tmp_path_factory.mktemp("djangoish"))


def evaluate(project: dict[str, Any], subs: Any, run_id: str, **kw: Any) -> dict[str, Verdict]:
    from swebounty.evaluation import evaluate

    verdicts = evaluate(project["dataset"], subs, run_id=run_id, repos_dir=project["repos"],
                        cache_dir=project["cache"], runs_dir=project["runs"], **kw)  # fmt: skip
    return {v.instance_id: v for v in verdicts}


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_a_django_style_project_is_graded_by_its_own_runner(project: dict[str, Any]) -> None:
    gold = evaluate(project, "gold", "gold")
    one = gold["small__calc-1"]
    assert one.status == "resolved", one.reason
    assert {t.test_id: t.status for t in one.tests} == dict.fromkeys(F2P + P2P, "passed")
    two = gold["small__calc-2"]  # a skipped test listed as PASS_TO_PASS is not a pass
    assert two.status == "unresolved", two.reason
    skipped = next(t for t in two.tests if t.test_id == SKIPPED)
    assert skipped.status == "skipped" and "needs a database" in skipped.message

    empty = evaluate(project, "empty", "empty", instance_ids=["small__calc-1"])["small__calc-1"]
    assert empty.status == "unresolved", empty.reason
    statuses = {t.test_id: t.status for t in empty.tests}
    assert statuses == {F2P[0]: "failed", F2P[1]: "error", F2P[2]: "failed", P2P[0]: "passed"}
    output = (project["runs"] / "gold" / "small__calc-1" / "test_output.txt").read_text()
    # The runner's own verbose log, as a person would read it: both formats' source.
    assert "test_double (calc_tests.tests.CalcTests" in output and "ok" in output
