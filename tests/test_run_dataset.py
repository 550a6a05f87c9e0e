"""A run is one dataset: reusing a run id with another dataset is refused with a message
naming the run's dataset, unless the user asks to add the tasks to the run (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swebounty.cli import app
from swebounty.evalinputs import EvalInputError
from swebounty.evaluation import open_evaluation
from swebounty.store import Store
from swebounty.tasks import Submission


def dataset(path: Path, repo: str) -> Path:
    record = {
        "instance_id": f"{repo.replace('/', '__')}-1",
        "repo": repo,
        "base_commit": "0" * 40,
        "problem_statement": "p",
        "patch": "diff --git a/x b/x\n",
        "test_patch": "diff --git a/t b/t\n",
        "FAIL_TO_PASS": "[]",
        "PASS_TO_PASS": "[]",
    }
    path.write_text(json.dumps(record) + "\n")
    return path


def opened(data: Path, runs: Path, **kw: object) -> tuple[str, list[str]]:
    """Open an evaluation of `data`'s gold patches into run `gold` and record its submissions,
    as a run that started would; returns (the run's dataset, its added datasets)."""
    with open_evaluation(
        data, "gold", run_id="gold", runs_dir=runs, cache_dir=runs / "cache", unsafe=True, **kw
    ) as ev:  # type: ignore[arg-type]
        for _, sub in ev.pairs:
            ev.store.add_submission("gold", sub)
        run = ev.store.run("gold")
    assert run is not None
    return run["dataset"], run["config"]["added_datasets"]


def test_a_run_of_one_dataset_refuses_another_unless_asked_to_add(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    python = dataset(tmp_path / "python.jsonl", "o/py")
    js = dataset(tmp_path / "js.jsonl", "o/js")
    assert opened(python, runs) == (str(python.resolve()), [])
    assert opened(python, runs) == (str(python.resolve()), [])  # resuming: the same dataset

    with pytest.raises(EvalInputError) as info:
        opened(js, runs)
    words = str(info.value)
    assert f"run gold is a run of {python.resolve()}, not of {js.resolve()}" in words
    assert "--add-to-run" in words and "--run-id" in words
    assert len(Store.open(runs / "runs.sqlite").submissions("gold")) == 1  # nothing was added

    assert opened(js, runs, add_to_run=True) == (str(python.resolve()), [str(js.resolve())])
    assert opened(js, runs) == (str(python.resolve()), [str(js.resolve())])  # now one of it
    third = dataset(tmp_path / "third.jsonl", "o/third")
    with pytest.raises(EvalInputError, match=r"of .*python.jsonl \(and 1 added\)"):
        opened(third, runs)


def test_an_empty_run_takes_the_new_dataset(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    store = Store.open(runs / "runs.sqlite")
    store.ensure_run("gold", dataset="old", config={}, sandbox="bwrap", unsafe=False)
    new = dataset(tmp_path / "new.jsonl", "o/new")
    assert opened(new, runs) == (str(new.resolve()), [])


def test_eval_says_which_dataset_the_run_holds(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    store = Store.open(runs / "runs.sqlite")
    store.ensure_run("gold", dataset="demo:js", config={}, sandbox="bwrap", unsafe=False)
    sub = Submission(instance_id="x-1", model_patch="", model_name_or_path="gold")
    store.add_submission("gold", sub)
    data = dataset(tmp_path / "py.jsonl", "o/py")
    argv = ["eval", str(data), "--gold", "--run-id", "gold", "--runs-dir", str(runs)]
    result = CliRunner().invoke(app, [*argv, "--cache-dir", str(tmp_path / "c"), "--unsafe"])
    assert result.exit_code != 0
    assert "run gold is a run of demo:js" in " ".join(result.output.split())
