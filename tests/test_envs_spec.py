"""Environment specs without building anything: the default and the shared (month) cutoff,
which specs get a shared one, inference once per tree, how a task's spec, the overrides and
inference merge, and a missing interpreter.
"""

from __future__ import annotations

import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from repo_helpers import git_repo
from swebounty.envs import (
    EnvBuildError,
    EnvManager,
    ResolvedSpec,
    default_cutoff,
    share_cutoff,
)
from swebounty.envs.interpreters import discover
from swebounty.tasks import EnvSpec, Task
from test_envs import MODERN, PROJECT


def test_default_cutoff_gives_one_to_two_days_of_slack() -> None:
    assert default_cutoff(datetime(2021, 10, 13, 11, 35, tzinfo=timezone.utc)) == datetime(
        2021, 10, 15, tzinfo=timezone.utc
    )
    naive = datetime(2021, 10, 13, 23, 59)
    assert default_cutoff(naive) == datetime(2021, 10, 15, tzinfo=timezone.utc)


def test_share_cutoff_is_the_start_of_the_commit_month_in_utc() -> None:
    utc = timezone.utc
    assert share_cutoff(datetime(2021, 10, 13, 11, 35, tzinfo=utc)) == datetime(
        2021, 10, 1, tzinfo=utc
    )
    # 01:00 on October 1st in Paris is still September in UTC.
    paris = timezone(timedelta(hours=2))
    assert share_cutoff(datetime(2021, 10, 1, 1, tzinfo=paris)) == datetime(2021, 9, 1, tzinfo=utc)


def test_only_inferred_cutoffs_get_a_shared_one(tmp_path: Path) -> None:
    ws = git_repo(tmp_path / "ws", PROJECT)
    when = datetime(2022, 3, 17, 9, tzinfo=timezone.utc)
    task = Task(instance_id="t", repo="a/b", base_commit="HEAD")
    spec = EnvManager(tmp_path / "c").spec_for(task, ws, when)
    assert spec.share_cutoff == datetime(2022, 3, 1, tzinfo=timezone.utc)
    assert spec.cutoff == datetime(2022, 3, 19, tzinfo=timezone.utc)
    assert EnvManager(tmp_path / "c", share=False).spec_for(task, ws, when).share_cutoff is None
    given = task.model_copy(update={"env_spec": EnvSpec(cutoff=when)})
    assert EnvManager(tmp_path / "c").spec_for(given, ws, when).share_cutoff is None


def test_a_spec_is_inferred_once_per_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import swebounty.envs.manager as manager_module

    inferred: list[str] = []
    real = manager_module.infer_spec

    def counting(task: Task, workspace: Path, *a: object, **kw: object) -> ResolvedSpec:
        inferred.append(workspace.name)
        return real(task, workspace, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(manager_module, "infer_spec", counting)
    manager = EnvManager(tmp_path / "c")
    task = Task(instance_id="t", repo="a/b", base_commit="HEAD")
    one = git_repo(tmp_path / "one", PROJECT)
    two = git_repo(tmp_path / "two", PROJECT)  # the same files: the same tree
    first = manager.spec_for(task, one, MODERN)
    first.install.append("changed-by-the-caller")
    second = manager.spec_for(task, two, MODERN)
    assert inferred == ["one"] and "changed-by-the-caller" not in second.install
    # Another tree, date, EnvSpec or repository: inferred anew.
    other = git_repo(tmp_path / "other", {**PROJECT, "requirements-test.txt": "attrs\n"})
    manager.spec_for(task, other, MODERN)
    manager.spec_for(task, one, MODERN - timedelta(days=400))
    manager.spec_for(task.model_copy(update={"env_spec": EnvSpec(env={"A": "1"})}), one, MODERN)
    manager.spec_for(task.model_copy(update={"repo": "c/d"}), one, MODERN)
    assert inferred == ["one", "other", "one", "one", "one"]
    # A folder that is no checkout (nothing keys it) is read every time.
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "requirements.txt").write_text("six\n")
    manager.spec_for(task, plain, MODERN)
    manager.spec_for(task, plain, MODERN)
    assert inferred[-2:] == ["plain", "plain"]


def test_spec_merges_task_then_overrides_then_inference(tmp_path: Path) -> None:
    ws = git_repo(
        tmp_path / "ws",
        {
            **PROJECT,
            "tox.ini": "[tox]\nenvlist = py39\n[testenv]\ndeps = coverage<5\nextras = test\n",
        },
    )
    overrides = tmp_path / "overrides.toml"
    overrides.write_text(
        textwrap.dedent("""
        [[override]]
        repo = "test/tinyproj"
        why = "its suite imports lxml through a plugin nobody declares"
        install = ["lxml"]
        env = {TINY_MODE = "override", OTHER = "1"}
        test_cmd = ["python", "-m", "pytest", "-p", "no:randomly"]
        [[override]]
        repo = "test/tinyproj"
        versions = ">=9"
        why = "never applies to the version of this test's task"
        install = ["never-installed"]
        """)
    )
    manager = EnvManager(tmp_path / "cache", overrides_path=overrides)
    task = Task(
        instance_id="tiny-2",
        repo="test/tinyproj",
        base_commit="HEAD",
        version="1.0",
        env_spec=EnvSpec(env={"TINY_MODE": "task"}),
    )
    spec = manager.spec_for(task, ws, datetime(2022, 3, 1, tzinfo=timezone.utc))
    assert spec.env == {"TINY_MODE": "task", "OTHER": "1"}  # the task wins, overrides add
    assert "lxml" in spec.install and "never-installed" not in spec.install
    assert spec.test_cmd == ["python", "-m", "pytest", "-p", "no:randomly"]
    assert spec.cutoff == datetime(2022, 3, 3, tzinfo=timezone.utc)
    assert spec.plans[0].label.startswith("tox deps") and spec.plans[0].lines == ["coverage<5"]
    assert spec.plans[0].extras == ["test"]
    assert any("override for test/tinyproj" in w for w in spec.why)
    assert {"pytest", "pip", "setuptools", "wheel"} <= set(spec.install)

    explicit = Task(
        instance_id="tiny-3",
        repo="test/tinyproj",
        base_commit="HEAD",
        env_spec=EnvSpec(
            python=discover()[0].version,
            install=["attrs==21.2.0"],
            cutoff=datetime(2021, 1, 1, tzinfo=timezone.utc),
        ),
    )
    spec = manager.spec_for(explicit, ws, MODERN)
    assert spec.python == discover()[0].version
    assert spec.cutoff == datetime(2021, 1, 1, tzinfo=timezone.utc)
    assert [p.label for p in spec.plans] == ["the task's env_spec"]
    assert "attrs==21.2.0" in spec.install and "lxml" in spec.install


def test_missing_interpreter_is_a_clear_error(tmp_path: Path) -> None:
    ws = git_repo(tmp_path / "ws", PROJECT)
    task = Task(instance_id="t", repo="a/b", base_commit="HEAD", env_spec=EnvSpec(python="3.2"))
    with pytest.raises(EnvBuildError, match="pyenv install"):
        EnvManager(tmp_path / "c").spec_for(task, ws, MODERN)


def test_resolved_spec_is_an_envspec() -> None:
    assert issubclass(ResolvedSpec, EnvSpec)
