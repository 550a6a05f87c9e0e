"""Dollar values: posted bounties first, else the documented estimate."""

from __future__ import annotations

import pytest

from swebounty.collect.pricing import (
    PricingConfig,
    apply_price,
    estimate_value,
    find_bounty,
    price,
)
from swebounty.tasks import Task


def _patch(files: int, lines: int) -> str:
    out = []
    for i in range(files):
        body = "".join(f"+line {j}\n" for j in range(lines))
        out.append(f"diff --git a/src/m{i}.py b/src/m{i}.py\n--- a/src/m{i}.py\n+++ b/src/m{i}.py\n"
                   f"@@ -0,0 +1,{lines} @@\n{body}")  # fmt: skip
    return "".join(out)


def _task(**kw: object) -> Task:
    fields: dict[str, object] = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc"}
    fields.update(kw)
    return Task.model_validate(fields)


@pytest.mark.parametrize(
    ("labels", "comments", "expected"),
    [
        (["bug", "💎 Bounty $250"], [], 250.0),
        (["bounty: $1,500"], [], 1500.0),
        (["Bounty"], [{"author": "algora-pbc[bot]", "body": "## 💎 $250 bounty • acme"}], 250.0),
        ([], [{"author": "algora-pbc[bot]", "body": "💎 $100 bounty"},
              {"author": "algora-pbc[bot]", "body": "💎 $75 bounty added, total $175 bounty"}],
         175.0),
        ([], [{"author": "opirebot", "body": "A bounty of $2.5k was placed on this issue"}],
         2500.0),
        ([], [{"author": "someone", "body": "I'd put a $50 bounty on this"}], None),
        ([], [{"author": "ci[bot]", "body": "Coverage is $5 cheaper"}], None),
        (["bounty"], [], None),
    ],
)  # fmt: skip
def test_find_bounty(
    labels: list[str], comments: list[dict[str, str]], expected: float | None
) -> None:
    found = find_bounty(labels, comments)
    assert (found[0] if found else None) == expected


def test_a_posted_bounty_wins_over_the_estimate() -> None:
    task = _task(patch=_patch(1, 10), labels=["Bounty $400"])
    assert price(task) == (400.0, "bounty", "posted bounty (label 'Bounty $400')")
    priced = apply_price(task)
    assert priced.value_usd == 400.0 and priced.value_source == "bounty"


def test_estimate_grows_with_the_work() -> None:
    small = estimate_value(_task(patch=_patch(1, 1)))
    larger = estimate_value(_task(patch=_patch(4, 50)))
    discussed = estimate_value(
        _task(
            patch=_patch(4, 50),
            num_comments=12,
            issue_created_at="2024-01-01T00:00:00Z",
            merged_at="2024-03-01T00:00:00Z",
        )
    )
    assert small is not None and larger is not None and discussed is not None
    assert small == 320.0  # 3.2 h base + 1 line x 0.001 h, at $100/h, to $5
    assert small < larger < discussed
    assert discussed == 950.0  # 3.2 + 0.2 + 0.15 + 3 + 0.5 x log2(61) = 9.52 h


def test_estimate_is_documented_in_the_task() -> None:
    task = apply_price(_task(patch=_patch(2, 10)), PricingConfig(hourly_rate=200))
    extra = task.model_extra or {}
    assert task.value_source == "estimate"
    assert task.value_usd == 655.0  # (3.2 + 20 x 0.001 + 0.05) h x $200, to $5
    assert "3.27 h x $200/h" in extra["value_detail"] and "code_files=2" in extra["value_detail"]


def test_clamped_and_unpriceable() -> None:
    huge = estimate_value(_task(patch=_patch(10, 5000)), PricingConfig(max_usd=3000))
    assert huge == 3000.0
    assert estimate_value(_task()) is None
    assert apply_price(_task()).value_usd is None
