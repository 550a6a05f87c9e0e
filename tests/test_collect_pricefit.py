"""Fitting the price estimate on payouts: the fit finds the constants that made the prices,
beats constants that did not, and SWE-Lancer's issue folders become the rows it fits on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swebounty.collect.pricefit import (
    FITTED,
    HAND_SET,
    PricedFix,
    cross_validate,
    errors,
    fit,
    fold_of,
    predict,
    spearman,
)
from swebounty.collect.pricing import PricingConfig
from swebounty.swelancer.prices import folder_fixes, priced_fix, unique

TRUE = PricingConfig(base_hours=2.0, hours_per_line=0.05, hours_per_file=0.5)


def _rows(n: int = 60) -> list[PricedFix]:
    rows = []
    for i in range(n):
        lines, files = 1 + (i * 37) % 400, 1 + (i * 7) % 6
        row = PricedFix(key=f"issue {i}", price_usd=1.0, code_lines=lines, code_files=files)
        rows.append(row.model_copy(update={"price_usd": predict(row, TRUE)}))
    return rows


def test_the_fit_finds_the_constants_that_made_the_prices() -> None:
    rows = _rows()
    fitted = fit(rows, PricingConfig(base_hours=1.0, hours_per_line=0.2, hours_per_file=0.0))
    assert errors(rows, fitted).mdape == 0.0
    assert (fitted.base_hours, fitted.hours_per_line, fitted.hours_per_file) == (2.0, 0.05, 0.5)
    assert fitted.hours_per_comment == PricingConfig().hours_per_comment  # not fitted


def test_held_back_rows_judge_constants_that_never_saw_them() -> None:
    rows = _rows(100)
    wrong = PricingConfig(base_hours=8.0, hours_per_line=0.0, hours_per_file=0.0)
    hand, fitted = cross_validate(rows, folds=5, hand=wrong)
    assert hand.rows == fitted.rows == 100
    assert fitted.mdape < 0.05 < hand.mdape
    assert fitted.spearman > 0.95 and hand.spearman == 0.0  # a constant orders nothing
    assert {fold_of(r.key, 5) for r in rows} == set(range(5))
    with pytest.raises(ValueError, match="no priced rows"):
        fit([])


def test_spearman() -> None:
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 1, 2], [5, 6, 7]) == pytest.approx(0.866, abs=1e-3)  # ties averaged


PATCH = """\
diff --git a/src/libs/Report.ts b/src/libs/Report.ts
--- a/src/libs/Report.ts
+++ b/src/libs/Report.ts
@@ -1,3 +1,3 @@
 a
-b
+c
 d
diff --git a/src/pages/Chat.tsx b/src/pages/Chat.tsx
--- a/src/pages/Chat.tsx
+++ b/src/pages/Chat.tsx
@@ -1 +1,2 @@
 x
+y
"""


def _folder(root: Path, name: str, price: object, title: str, patch: str, file: str) -> None:
    folder = root / "issues" / name
    folder.mkdir(parents=True)
    (folder / "issue_data.json").write_text(json.dumps({"price": price, "title": title}))
    (folder / file).write_text(patch)


def test_swelancer_folders_are_priced_fixes(tmp_path: Path) -> None:
    _folder(tmp_path, "14294", 4000.0, "[$4000] Paste", PATCH, "bug_reintroduce.patch")
    _folder(tmp_path, "14294_1", 4000.0, "[$4000] Paste", PATCH, "bug_reintroduce.patch")
    _folder(tmp_path, "7", 250, "[$250] Hold", PATCH, "issue_introduction.patch")
    _folder(tmp_path, "8", 500, "[$500] Empty", "", "issue_introduction.patch")  # revert instead
    _folder(tmp_path, "9", "free", "[$?] Bad", PATCH, "bug_reintroduce.patch")
    _folder(tmp_path, "10", 500, "[$500] Broken", "diff --git a/x b/x\n@@ -1 +1 @@\n", "bug_reintroduce.patch")  # fmt: skip
    rows = unique(folder_fixes(tmp_path))
    assert [(r.key, r.price_usd, r.code_lines, r.code_files) for r in rows] == [
        ("[$250] Hold", 250.0, 3, 2),
        ("[$4000] Paste", 4000.0, 3, 2),
    ]
    assert priced_fix("x", "not json", PATCH) is None


def test_the_defaults_are_the_fitted_constants() -> None:
    # bench/pricing_swelancer.py fitted them on SWE-Lancer's payouts; the README quotes them.
    default = PricingConfig()
    assert (default.base_hours, default.hours_per_line, default.hours_per_file) == (
        3.2,
        0.001,
        0.05,
    )


def test_the_fit_is_compared_with_the_hand_set_constants_not_with_itself() -> None:
    # The defaults are the fit now: the "hand-set" row must still price with the old constants.
    rows = _rows(60)
    assert any(getattr(HAND_SET, f) != getattr(PricingConfig(), f) for f in FITTED)
    hand, _ = cross_validate(rows, folds=5)
    assert hand == errors(rows, HAND_SET) != errors(rows, PricingConfig())
