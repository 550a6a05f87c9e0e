"""The estimators (passk.py): the Kprize score, pass@k and pass^k against values computed by
hand and their properties, the seeded bootstrap interval."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swebounty.passk import bootstrap_interval, kprize_score, pass_at_k, pass_hat_k


@pytest.mark.parametrize(
    ("a", "b", "c", "published"), [(3, 2, 115, 0.008237), (1, 1, 69, -0.000097)]
)
def test_kprize_matches_published_team_scores(a: int, b: int, c: int, published: float) -> None:
    assert kprize_score(a, b, c) == pytest.approx(published, abs=1e-6)


def test_kprize_skipping_costs_less_than_a_wrong_patch() -> None:
    assert kprize_score(1, 0, 0) == 1.0
    assert kprize_score(0, 1, 0) == -1.0
    assert kprize_score(0, 0, 1) == pytest.approx(-0.0001)
    with pytest.raises(ValueError, match="at least one graded"):
        kprize_score(0, 0, 0)
    with pytest.raises(ValueError, match=">= 0"):
        kprize_score(-1, 0, 3)


def test_pass_at_k_and_pass_hat_k_by_hand() -> None:
    # n=5 attempts, c=2 correct: pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass^2 = C(2,2)/C(5,2).
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_at_k(5, 2, 4) == 1.0  # only 3 wrong attempts: any 4 include a right one
    assert pass_hat_k(5, 2, 3) == 0.0
    with pytest.raises(ValueError, match="at least k attempts"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_hat_k(3, 4, 1)


@st.composite
def attempts(draw: st.DrawFn) -> tuple[int, int]:
    n = draw(st.integers(1, 200))
    return n, draw(st.integers(0, n))


@given(attempts())
def test_pass_at_k_is_monotone_and_anchored(nc: tuple[int, int]) -> None:
    n, c = nc
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert values[0] == pytest.approx(c / n)
    assert all(lo <= hi for lo, hi in pairwise(values))
    assert all(0.0 <= v <= 1.0 for v in values)
    if c == n:
        assert values == [1.0] * n
    if c == 0:
        assert values == [0.0] * n


@given(attempts())
def test_pass_hat_k_is_decreasing_and_below_pass_at_k(nc: tuple[int, int]) -> None:
    n, c = nc
    hats = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert hats[0] == pytest.approx(c / n)
    assert all(lo >= hi for lo, hi in pairwise(hats))
    assert all(h <= pass_at_k(n, c, k) + 1e-12 for k, h in enumerate(hats, 1))
    assert hats[-1] == (1.0 if c == n else 0.0)


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    import numpy as np

    data = np.array([0.0, 1.0] * 50)

    def mean(ix: np.ndarray) -> np.ndarray:
        return data[ix].mean(axis=1)  # type: ignore[no-any-return]

    first = bootstrap_interval(len(data), mean, seed=7)
    assert first == bootstrap_interval(len(data), mean, seed=7)
    assert first != bootstrap_interval(len(data), mean, seed=8)
    assert first is not None
    low, high = first
    # Binomial standard error sqrt(.25/100) = 0.05: a 95% interval is about ±0.1.
    assert 0.35 < low < 0.45 < 0.5 < 0.55 < high < 0.65
    assert bootstrap_interval(0, mean) is None
    constant = np.ones(10)
    assert bootstrap_interval(10, lambda ix: constant[ix].mean(axis=1)) == (1.0, 1.0)
