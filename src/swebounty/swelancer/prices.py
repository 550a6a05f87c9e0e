"""SWE-Lancer's real payouts as rows to fit the price estimate on (collect/pricefit.py).

An IC task's folder (`issues/<name>/`) holds what was paid (`issue_data.json`: `price`,
`title`) and the fix, reversed: the patch that puts the bug back (`bug_reintroduce.patch`, or
`issue_introduction.patch` in later releases). Its lines and files changed are the fix's, so the
features are exactly those `pricing.estimate_hours` reads from a fresh task's reference patch.
The files carry no comment counts or dates: those features stay 0 here. One issue is often
several folders (`12155`, `12155_1`: other tests for the same fix); they are one row, keyed by
the issue's title.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from unidiff.errors import UnidiffParseError

from swebounty.collect.pricefit import PricedFix
from swebounty.collect.pricing import PricingConfig, estimate_hours
from swebounty.safefs import read_regular
from swebounty.tasks import Task

log = logging.getLogger(__name__)

SETUP_PATCHES = ("bug_reintroduce.patch", "issue_introduction.patch")
_MAX_FILE = 8 << 20


def priced_fix(key: str, issue_data: str, setup_patch: str) -> PricedFix | None:
    """A row from a folder's `issue_data.json` text and its setup patch, or None when either
    says nothing (no price, an empty patch: the folder sets its bug up another way)."""
    try:
        data = json.loads(issue_data)
        price = float(data["price"])
    except (ValueError, KeyError, TypeError):
        return None
    if not setup_patch.strip() or not price > 0:
        return None
    fix = Task(instance_id="swelancer", repo="Expensify/App", base_commit="HEAD", patch=setup_patch)
    try:
        estimate = estimate_hours(fix, PricingConfig())
    except (UnidiffParseError, ValueError) as exc:  # a few published patches were hand-edited
        log.info("%s: its setup patch does not parse (%s)", key, exc)
        return None
    if estimate is None:
        return None
    _, inputs = estimate
    title = str(data.get("title") or key).strip()
    return PricedFix(
        key=title,
        price_usd=price,
        code_lines=int(inputs["code_lines"]),
        code_files=int(inputs["code_files"]),
    )


def _text(path: Path) -> str:
    raw = read_regular(path, _MAX_FILE)
    return raw.decode("utf-8", "replace") if raw is not None else ""


def folder_fixes(root: Path) -> list[PricedFix]:
    """The rows of a SWE-Lancer checkout (`root/issues/*/`)."""
    found = []
    for folder in sorted((root / "issues").iterdir()):
        if not folder.is_dir():
            continue
        patch = next((_text(folder / n) for n in SETUP_PATCHES if (folder / n).is_file()), "")
        row = priced_fix(folder.name, _text(folder / "issue_data.json"), patch)
        if row is not None:
            found.append(row)
    return found


def unique(rows: Iterable[PricedFix]) -> list[PricedFix]:
    """One row per issue (the first seen), in key order."""
    seen: dict[str, PricedFix] = {}
    for row in rows:
        seen.setdefault(row.key, row)
    return [seen[k] for k in sorted(seen)]
