"""Estimators every score is built from: pass@k, pass^k, the Kprize score and bootstrap intervals.

Plain functions over counts, so they can be tested against hand-computed values and properties.
"""

from __future__ import annotations

from collections.abc import Callable
from math import comb
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IndexMatrix = npt.NDArray[np.intp]
    Stat = Callable[[IndexMatrix], npt.NDArray[np.float64]]


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}: pass@k needs at least k attempts")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k attempts, drawn from n with c correct, succeeds.

    The unbiased estimator `1 - C(n-c, k) / C(n, k)` of Chen et al. (2021). Exact integer
    binomials and one correctly rounded division keep it monotone in k even for large n.
    """
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: probability that all k attempts, drawn from n with c correct, succeed."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def kprize_score(resolved: int, wrong: int, skipped: int) -> float:
    """The Konwinski Prize score `(a - b - c/10000) / (a + b + c)`.

    a resolved, b submitted but not resolved, c skipped (empty or null patch): skipping costs
    almost nothing, a wrong patch costs as much as a right one earns.
    """
    if min(resolved, wrong, skipped) < 0:
        raise ValueError(f"counts must be >= 0, got {(resolved, wrong, skipped)}")
    total = resolved + wrong + skipped
    if total == 0:
        raise ValueError("the Kprize score needs at least one graded attempt")
    return (resolved - wrong - skipped / 10000) / total


def bootstrap_interval(
    n_items: int,
    stat: Stat,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `stat` over `n_items` resampled with replacement.

    `stat` gets a (resamples, n_items) matrix of item indices and returns one value per row
    (NaN where the statistic is undefined, e.g. a ratio over zero). The same seed gives the same
    interval, so reports are reproducible. Returns None when there is nothing to resample.
    """
    import numpy as np

    if n_items == 0 or resamples < 1:
        return None
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n_items, size=(resamples, n_items))
    values = np.asarray(stat(index), dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
