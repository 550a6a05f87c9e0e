"""SWE-Lancer's Manager tasks: a `swe_manager` row as a pick task.

The proposals are `manager_data.game.all_formal_proposals` in id order (ids are not always
0..n-1: the task keeps them as `proposal_ids`, and a pick is an index into `proposals`); the
accepted one is `game.correct_proposal.id`, the proposal the real manager chose. The base is the
parent of `manager_commit` (`C^`): the repository as it was before the chosen fix.
"""

from __future__ import annotations

from typing import Any

from swebounty.swelancer.rows import (
    REPO,
    VALUE_SOURCE,
    RowError,
    literal,
    price,
    problem_statement,
)


def _proposal_id(value: Any, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise RowError(f"{what} {str(value)[:40]!r} is not a proposal number") from None


def proposals_of(manager: dict[str, Any]) -> tuple[list[int], list[str], int]:
    """(ids in order, texts in that order, index of the accepted one) from `manager_data`."""
    game = manager.get("game")
    if not isinstance(game, dict):
        raise RowError("manager_data has no 'game' (the proposals and the manager's choice)")
    formal = game.get("all_formal_proposals")
    if not isinstance(formal, list) or len(formal) < 2:
        raise RowError("manager_data.game.all_formal_proposals is not a list of 2+ proposals")
    by_id: dict[int, str] = {}
    for item in formal:
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise RowError("a proposal of manager_data has no 'content' text")
        number = _proposal_id(item.get("id"), "proposal id")
        if number in by_id:
            raise RowError(f"two proposals have the id {number}")
        by_id[number] = item["content"]
    correct = game.get("correct_proposal")
    if not isinstance(correct, dict):
        raise RowError("manager_data.game has no correct_proposal")
    accepted = _proposal_id(correct.get("id"), "correct_proposal id")
    ids = sorted(by_id)
    if accepted not in by_id:
        raise RowError(f"the correct proposal {accepted} is not among the proposals {ids}")
    return ids, [by_id[i] for i in ids], ids.index(accepted)


def manager_task(row: dict[str, str], split: str) -> dict[str, Any]:
    """A pick task record from a `swe_manager` row."""
    manager = literal(row.get("manager_data") or "", "manager_data")
    if not isinstance(manager, dict):
        raise RowError("a swe_manager row needs manager_data (the proposals and the choice)")
    commit = (row.get("manager_commit") or "").strip()
    if not commit:
        raise RowError("a swe_manager row needs manager_commit (its base is that commit's parent)")
    ids, texts, accepted = proposals_of(manager)
    return {
        "instance_id": row["question_id"],
        "repo": REPO,
        "base_commit": f"{commit}^",
        "problem_statement": problem_statement(row, manager),
        "kind": "pick",
        "proposals": texts,
        "accepted_proposal": accepted,
        "proposal_ids": ids,
        "value_usd": price(row),
        "value_source": VALUE_SOURCE,
        "split": split,
        "swelancer_variant": "swe_manager",
        "source_dataset": "SWE-Lancer",
    }
