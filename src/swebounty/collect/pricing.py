"""What a task is worth in dollars, and where that number comes from.

1. A real bounty, when one was posted: a label that names an amount ("bounty $250",
   "💎 Bounty: $1,000"), or a comment by a bounty platform's bot ("## 💎 $250 bounty").
   `value_source = "bounty"`.
2. Otherwise an estimate of the hours a competent engineer would bill, at an hourly rate:

       hours = base_hours                                 triage, reproduce, review, release
             + hours_per_line  * code lines changed       writing and checking the fix
             + hours_per_file  * (code files - 1)         each further file is more context
             + hours_per_comment * comments (capped)      discussion signals a harder problem
             + hours_per_log2_day * log2(1 + days issue→fix), capped
                                                          problems that stay open are harder
       value = clamp(round(hours * hourly_rate, to $5), min_usd, max_usd)

   `value_source = "estimate"`. The constants are fitted on SWE-Lancer's real Upwork payouts
   (269 Expensify issues, $50 to $32,000; `bench/pricing_swelancer.py`, collect/pricefit.py):
   on held-back issues the median absolute percentage error is 35% (58% with the hand-set
   constants before them). Lines and files changed barely order those prices (Spearman 0.13),
   so the fit is mostly a level: a one-line fix is $320, a 200-line, 4-file change to an issue
   open two months with 12 comments $950. SWE-Lancer's files carry no comment counts nor dates,
   so `hours_per_comment` and `hours_per_log2_day` are still set by hand. The breakdown is kept
   in the task's `value_detail`.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from swebounty.collect.split import split_diff
from swebounty.tasks import Task

# Logins of bounty platforms' bots (lower case); any "[bot]" account mentioning a bounty counts.
BOUNTY_BOTS = {"algora-pbc", "algora-pbc[bot]", "opirebot", "opire-bot", "issuehunt-app[bot]",
               "polar-sh[bot]", "bountysource", "gitpay-bot", "boss-bot"}  # fmt: skip
_AMOUNT = r"\$\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?\s*(k)?\b"
_NEAR_BOUNTY = re.compile(
    rf"{_AMOUNT}[^\n$]{{0,40}}?\bbount(?:y|ies)\b|\bbount(?:y|ies)\b[^\n$]{{0,40}}?{_AMOUNT}",
    re.IGNORECASE,
)


class PricingConfig(BaseModel):
    """Parameters of the estimate; every one documented in the module docstring."""

    hourly_rate: float = Field(default=100.0, description="USD per estimated hour")
    # Fitted on SWE-Lancer's payouts (bench/pricing_swelancer.py); the rest are hand-set.
    base_hours: float = 3.2
    hours_per_line: float = 0.001
    hours_per_file: float = 0.05
    hours_per_comment: float = 0.25
    max_comment_hours: float = 4.0
    hours_per_log2_day: float = 0.5
    max_wait_hours: float = 4.0
    min_usd: float = 50.0
    max_usd: float = 10000.0


def _amounts(text: str) -> list[float]:
    found: list[float] = []
    for m in _NEAR_BOUNTY.finditer(text):
        g = m.groups()
        whole, cents, k = (g[0], g[1], g[2]) if g[0] is not None else (g[3], g[4], g[5])
        value = float(whole.replace(",", "")) + (float(f"0.{cents}") if cents else 0.0)
        found.append(value * 1000 if k else value)
    return found


def find_bounty(labels: list[str], comments: list[dict[str, Any]]) -> tuple[float, str] | None:
    """(amount, where) of a posted bounty, or None.

    Labels win (a maintainer put them there); among bot comments the largest amount is taken,
    because platforms edit one comment with the running total and add one per top-up.
    """
    for label in labels:
        if "bount" in label.lower():
            amounts = _amounts(label) or _amounts(f"bounty {label}")
            if amounts:
                return max(amounts), f"label {label!r}"
    best: tuple[float, str] | None = None
    for c in comments:
        author = str(c.get("author") or "").lower()
        if author not in BOUNTY_BOTS and not author.endswith("[bot]"):
            continue
        for amount in _amounts(str(c.get("body") or "")):
            if best is None or amount > best[0]:
                best = (amount, f"comment by {c.get('author')}")
    return best


def _as_datetime(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return None


def estimate_hours(task: Task, config: PricingConfig) -> tuple[float, dict[str, float]] | None:
    """Estimated hours and the inputs used; None when the task has no reference patch."""
    if not task.patch.strip():
        return None
    files = [f for f in split_diff(task.patch).files if f.kind == "code"] or split_diff(
        task.patch
    ).files
    lines = sum(f.added + f.removed for f in files)
    extra = task.model_extra or {}
    comments = int(extra.get("num_comments") or 0)
    opened = _as_datetime(extra.get("issue_created_at"))
    fixed = _as_datetime(extra.get("merged_at")) or _as_datetime(extra.get("fix_created_at"))
    days = max(0.0, (fixed - opened).total_seconds() / 86400) if opened and fixed else 0.0
    parts = {
        "base": config.base_hours,
        "lines": config.hours_per_line * lines,
        "files": config.hours_per_file * max(0, len(files) - 1),
        "discussion": min(config.max_comment_hours, config.hours_per_comment * comments),
        "wait": min(config.max_wait_hours, config.hours_per_log2_day * math.log2(1 + days)),
    }
    inputs = {"code_lines": lines, "code_files": len(files), "comments": comments, "days": days}
    return sum(parts.values()), {**{f"h_{k}": round(v, 3) for k, v in parts.items()}, **inputs}


def price(task: Task, config: PricingConfig | None = None) -> tuple[float, str, str] | None:
    """(value_usd, value_source, detail) for a task, or None when nothing can be said."""
    config = config or PricingConfig()
    extra = task.model_extra or {}
    bounty = find_bounty(list(extra.get("labels") or []), list(extra.get("bounty_comments") or []))
    if bounty is not None:
        return bounty[0], "bounty", f"posted bounty ({bounty[1]})"
    est = estimate_hours(task, config)
    if est is None:
        return None
    hours, inputs = est
    value = min(config.max_usd, max(config.min_usd, round(hours * config.hourly_rate / 5) * 5))
    detail = f"{hours:.2f} h x ${config.hourly_rate:g}/h; " + ", ".join(
        f"{k}={v:g}" for k, v in inputs.items()
    )
    return float(value), "estimate", detail


def estimate_value(task: Task, config: PricingConfig | None = None) -> float | None:
    """The task's dollar value: a posted bounty if any, else the documented estimate."""
    priced = price(task, config)
    return None if priced is None else priced[0]


def apply_price(task: Task, config: PricingConfig | None = None) -> Task:
    """A copy of `task` with value_usd, value_source and value_detail set (unchanged if
    nothing can be priced)."""
    priced = price(task, config)
    if priced is None:
        return task
    value, source, detail = priced
    return task.model_copy(
        update={"value_usd": value, "value_source": source, "value_detail": detail}
    )
