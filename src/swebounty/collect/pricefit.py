"""Fitting the price estimate (pricing.py) on real payouts, and measuring how well it prices.

A `PricedFix` is what a real payout teaches: the dollars paid and the features a fresh task
has (code lines and files changed; comments and days from issue to fix when known). `fit`
chooses `base_hours`, `hours_per_line` and `hours_per_file` (the hourly rate stays) on a grid,
for the least median absolute percentage error and, among equals, the best rank correlation:
the two numbers the README reports. `errors` reports the median absolute percentage error and Spearman's rank
correlation; `cross_validate` gives both on held-back rows (k folds chosen by a hash of each
row's key, so the same rows are held back on every run), for the hand-set constants and for
constants fitted without those rows.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Sequence

from pydantic import BaseModel

from swebounty.collect.pricing import PricingConfig

FITTED = ("base_hours", "hours_per_line", "hours_per_file")
# The constants set by hand before the fit (PricingConfig's defaults until the fit replaced them):
# what the fitted ones are compared with. Not PricingConfig(): that is the fit itself now, and a
# comparison with it would measure the fitted constants against themselves.
HAND_SET = PricingConfig(base_hours=1.0, hours_per_line=0.05, hours_per_file=0.5)


class PricedFix(BaseModel):
    """One real payout and the features of its fix."""

    key: str
    price_usd: float
    code_lines: int
    code_files: int
    comments: int = 0
    days: float = 0.0


class PriceErrors(BaseModel):
    rows: int
    mdape: float
    spearman: float
    median_predicted_usd: float
    median_paid_usd: float


def predict(row: PricedFix, config: PricingConfig) -> float:
    """pricing.py's estimate from the features alone (the same formula, the same clamp)."""
    hours = (
        config.base_hours
        + config.hours_per_line * row.code_lines
        + config.hours_per_file * max(0, row.code_files - 1)
        + min(config.max_comment_hours, config.hours_per_comment * row.comments)
        + min(config.max_wait_hours, config.hours_per_log2_day * math.log2(1 + row.days))
    )
    value = round(hours * config.hourly_rate / 5) * 5
    return float(min(config.max_usd, max(config.min_usd, value)))


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2
        i = j + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation, ties averaged; 0 when either side is constant."""
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    var = sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)
    return cov / math.sqrt(var) if var > 0 else 0.0


def errors(rows: Sequence[PricedFix], config: PricingConfig) -> PriceErrors:
    predicted = [predict(r, config) for r in rows]
    paid = [r.price_usd for r in rows]
    return PriceErrors(
        rows=len(rows),
        mdape=statistics.median(abs(p - y) / y for p, y in zip(predicted, paid, strict=True)),
        spearman=spearman(predicted, paid),
        median_predicted_usd=statistics.median(predicted),
        median_paid_usd=statistics.median(paid),
    )


# The search grid: the level (base hours) finely, the slopes on a log scale; per file as a
# multiple of per line, so the ordering of fixes (lines vs files) is chosen apart from the level.
BASE_HOURS = [round(0.2 * i, 1) for i in range(5, 40)]
PER_LINE = [0.0, 0.001, 0.003, 0.01, 0.02, 0.05, 0.1]
FILE_TO_LINE = [0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]


def _mdape(rows: Sequence[PricedFix], config: PricingConfig) -> float:
    return statistics.median(abs(predict(r, config) - r.price_usd) / r.price_usd for r in rows)


def fit(rows: Sequence[PricedFix], start: PricingConfig | None = None) -> PricingConfig:
    """The constants of the grid that price `rows` with the least median absolute percentage
    error; among equals, the one that orders them best (Spearman). Deterministic; the other
    constants are `start`'s."""
    if not rows:
        raise ValueError("no priced rows to fit on")
    start = start or PricingConfig()
    paid = [r.price_usd for r in rows]
    best: tuple[float, float, PricingConfig] | None = None
    for per_line in PER_LINE:
        for ratio in FILE_TO_LINE:
            per_file = per_line * ratio
            for base in BASE_HOURS:
                config = start.model_copy(
                    update={"base_hours": base, "hours_per_line": per_line,
                            "hours_per_file": round(per_file, 4)}
                )  # fmt: skip
                error = _mdape(rows, config)
                if best is not None and error > best[0]:
                    continue
                rank = spearman([predict(r, config) for r in rows], paid)
                if best is None or (error, -rank) < (best[0], -best[1]):
                    best = (error, rank, config)
    assert best is not None
    return best[2]


def fold_of(key: str, folds: int) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % folds


def cross_validate(
    rows: Sequence[PricedFix], folds: int = 5, hand: PricingConfig | None = None
) -> tuple[PriceErrors, PriceErrors]:
    """(hand-set, fitted) errors over every row, each priced by constants that never saw it.
    `hand`: the constants compared with, HAND_SET unless given; the fit starts from them."""
    hand = hand or HAND_SET
    held: list[PricedFix] = []
    fitted_prices: list[tuple[PricedFix, PricingConfig]] = []
    for k in range(folds):
        test = [r for r in rows if fold_of(r.key, folds) == k]
        train = [r for r in rows if fold_of(r.key, folds) != k]
        if not test or not train:
            continue
        config = fit(train, hand)
        held += test
        fitted_prices += [(r, config) for r in test]
    paid = [r.price_usd for r in held]
    predicted = [predict(r, c) for r, c in fitted_prices]
    fitted = PriceErrors(
        rows=len(held),
        mdape=statistics.median(abs(p - y) / y for p, y in zip(predicted, paid, strict=True)),
        spearman=spearman(predicted, paid),
        median_predicted_usd=statistics.median(predicted),
        median_paid_usd=statistics.median(paid),
    )
    return errors(held, hand), fitted
