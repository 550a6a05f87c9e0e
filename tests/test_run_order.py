"""Attempts are taken round-robin across repositories when several workers run them, so one
worker builds an environment while the others evaluate (runs.interleaved)."""

from __future__ import annotations

from swebounty.runs import interleaved
from swebounty.tasks import Submission, Task


def pair(repo: str, n: int) -> tuple[Task, Submission]:
    iid = f"{repo.replace('/', '__')}-{n}"
    task = Task(instance_id=iid, repo=repo, base_commit="abc", patch="d", test_patch="t")
    return task, Submission(instance_id=iid, model_patch="", model_name_or_path="m")


def test_pairs_alternate_between_repositories_and_keep_their_order_within_one() -> None:
    pairs = [pair("o/a", 1), pair("o/a", 2), pair("o/a", 3), pair("o/b", 1), pair("o/c", 1)]
    order = [t.instance_id for t, _ in interleaved(pairs)]
    assert order == ["o__a-1", "o__b-1", "o__c-1", "o__a-2", "o__a-3"]
    assert interleaved([]) == []
