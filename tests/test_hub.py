"""Datasets by Hugging Face name, from a local huggingface_hub cache (the hub is never reached)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from swebounty import hub
from swebounty.evalinputs import EvalInputError, load_dataset
from swebounty.evaluation import open_evaluation

pytest.importorskip("huggingface_hub", reason="the hub extra is not installed")

REPO_ID = "princeton-nlp/SWE-bench_Lite"


def _row(n: int) -> dict[str, object]:
    return {
        "repo": "octo/lib",
        "instance_id": f"octo__lib-{n}",
        "base_commit": "a" * 40,
        "patch": "diff --git a/x b/x\n",
        "test_patch": "diff --git a/t b/t\n",
        "problem_statement": f"problem {n}",
        "hints_text": "",
        "created_at": "2024-05-01T10:00:00Z",
        "version": "1.0",
        # As the hub's SWE-bench files hold them: JSON strings.
        "FAIL_TO_PASS": json.dumps([f"tests/test_a.py::test_{n}"]),
        "PASS_TO_PASS": "[]",
        "environment_setup_commit": "b" * 40,
    }


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A huggingface_hub cache holding SWE-bench_Lite's two splits, laid out as the hub
    library writes it (refs/main -> snapshots/<commit>/data/<split>-*.parquet)."""
    cache = tmp_path / "hf" / "hub"
    repo = cache / f"datasets--{REPO_ID.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    data = repo / "snapshots" / commit / "data"
    data.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    pq.write_table(pa.Table.from_pylist([_row(1), _row(2)]), data / "test-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist([_row(3)]), data / "dev-00000-of-00001.parquet")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never reach out, whatever the machine allows
    return cache


def test_names_are_told_apart_from_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert hub.dataset_name(REPO_ID) == REPO_ID
    assert hub.dataset_name(f"hf://{REPO_ID}:dev") == f"{REPO_ID}:dev"
    assert hub.dataset_name("tasks.jsonl") is None
    assert hub.dataset_name("/abs/tasks.jsonl") is None
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "tasks.jsonl").write_text("")
    assert hub.dataset_name("local/tasks.jsonl") is None  # an existing path wins
    with pytest.raises(hub.HubError):
        hub.dataset_name("hf://not a name")


def test_loads_each_split_from_the_cache(hf_cache: Path, tmp_path: Path) -> None:
    tasks, errors, _, label = load_dataset(REPO_ID, tmp_path / "cache")
    assert errors == []
    assert [t.instance_id for t in tasks] == ["octo__lib-1", "octo__lib-2"]
    assert tasks[0].FAIL_TO_PASS == ["tests/test_a.py::test_1"]
    assert label == f"hf://{REPO_ID}:test"
    dev, _, _, dev_label = load_dataset(REPO_ID, tmp_path / "cache", split="dev")
    assert [t.instance_id for t in dev] == ["octo__lib-3"]
    # The label a run stores finds the same tasks again (score and report reload it).
    again, _, _, _ = load_dataset(dev_label, tmp_path / "cache")
    assert [t.instance_id for t in again] == ["octo__lib-3"]


def test_an_unknown_split_names_the_ones_there(hf_cache: Path, tmp_path: Path) -> None:
    with pytest.raises(hub.HubError, match=r"no split 'train'.*dev, test"):
        load_dataset(REPO_ID, tmp_path / "cache", split="train")


def test_a_dataset_not_in_the_cache_says_how_to_get_it(hf_cache: Path, tmp_path: Path) -> None:
    with pytest.raises(EvalInputError) as info:
        open_evaluation("someone/not-cached", "gold", home_dir=tmp_path / "home")
    message = str(info.value)
    assert "not in the cache" in message and "hf download" in message
    assert str(hf_cache) in message
    assert "\n" not in message


def test_eval_by_name_opens_a_run_that_remembers_the_split(hf_cache: Path, tmp_path: Path) -> None:
    with open_evaluation(
        REPO_ID, "empty", split="dev", home_dir=tmp_path / "home", unsafe=True
    ) as ev:
        assert ev.run_id == "SWE-bench_Lite-dev-empty"
        assert [t.instance_id for t, _ in ev.pairs] == ["octo__lib-3"]
        assert ev.store.run(ev.run_id)["dataset"] == f"hf://{REPO_ID}:dev"  # type: ignore[index]
