"""`swebounty envs build|list|prune` on the demo tasks, through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from repo_helpers import git_repo
from swebounty.bytecode import cache_tag
from swebounty.cli import app
from swebounty.envs import EnvManager

runner = CliRunner()


def _run(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.network
def test_build_list_and_prune(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, runs = tmp_path / "cache", tmp_path / "runs"
    out = _run("envs", "build", "demo", "--cache-dir", str(cache))
    assert "UNSAFE" not in out  # building runs no task code, sandboxed or not
    envs = EnvManager(cache / "envs").list()
    assert len(envs) == 1, "the demo tasks share one spec, so one environment"
    key = envs[0].key
    assert out.count(key[:16]) == 4  # one row per task, all with the shared environment

    listed = _run("envs", "list", "--cache-dir", str(cache))
    assert key[:16] in listed and envs[0].interpreter in listed

    # A run that used the environment keeps it; --all removes it.
    _run(
        "eval",
        "--demo",
        "--gold",
        "--run-id",
        "r",
        "--unsafe",
        "--cache-dir",
        str(cache),
        "--runs-dir",
        str(runs),
        "-i",
        "demo__tinytext-1",
    )
    where = ["--cache-dir", str(cache), "--runs-dir", str(runs)]

    # A run id that does not exist (a typo) deletes nothing, and says which runs do.
    result = runner.invoke(app, ["envs", "prune", "--keep-run", "nosuchrun", *where])
    assert result.exit_code == 2
    assert "no run 'nosuchrun'" in result.output and "runs there: r" in result.output
    assert [e.key for e in EnvManager(cache / "envs").list()] == [key]
    # The same from another directory, and without any runs store.
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app, ["envs", "prune", "--keep-run", "r", "--cache-dir", str(cache), "--runs-dir", "x"]
    )
    assert result.exit_code == 2 and "no runs in" in result.output
    assert [e.key for e in EnvManager(cache / "envs").list()] == [key]

    # The bytecode cache of the kept environment's interpreter stays; another one goes.
    tag = cache_tag(envs[0].interpreter, envs[0].interpreter_executable)
    assert tag is not None
    for name in (tag, "cpython-99"):
        entry = cache / "bytecode" / name / "ab" / "ab12.pyc"
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_bytes(b"x" * 100)
    out = _run("envs", "prune", "--keep-run", "r", *where)
    assert "removing bytecode cache cpython-99" in out and tag not in out
    assert [e.key for e in EnvManager(cache / "envs").list()] == [key]
    assert sorted(p.name for p in (cache / "bytecode").iterdir()) == [tag]
    out = _run("envs", "prune", "--all", "--dry-run", "--cache-dir", str(cache))
    assert f"would remove {key[:16]}" in out and "nothing deleted" in out
    assert [e.key for e in EnvManager(cache / "envs").list()] == [key]
    out = _run("envs", "prune", "--all", "--cache-dir", str(cache))
    assert f"removing {key[:16]}" in out and "freed" in out
    assert f"removing bytecode cache {tag}" in out
    assert EnvManager(cache / "envs").list() == []
    assert list((cache / "bytecode").iterdir()) == []


def test_prune_without_a_choice_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["envs", "prune", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 2 and "--keep-run" in result.output


def test_a_failed_build_says_why_in_words(tmp_path: Path) -> None:
    import json
    import subprocess

    repo = git_repo(tmp_path / "repos" / "o__r", {"README": "x\n"})
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    task = {
        "instance_id": "o__r-1",
        "repo": "o/r",
        "base_commit": head,
        "problem_statement": "p",
        "FAIL_TO_PASS": ["t.py::test_a"],
        "env_spec": {"python": "3.99"},
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    args = ["envs", "build", str(tasks), "--repos-dir", str(repo.parent)]
    args += ["--cache-dir", str(tmp_path / "cache")]
    result = CliRunner(env={"COLUMNS": "250"}).invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 1
    assert "Python 3.99, which is not installed (interpreter)" in result.output
