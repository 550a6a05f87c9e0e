"""The price estimate against SWE-Lancer's real payouts: error on held-back rows, hand-set
constants vs fitted ones, and the constants fitted on every row (pricing.py's defaults).

    python bench/pricing_swelancer.py SWELANCER [SWELANCER ...] [--json out.json]

Each SWELANCER is a checkout of openai/SWELancer-Benchmark (a folder with `issues/`), or a git
repository of it: then the `issues/` folders of every commit are read (later releases renamed
and dropped folders; the union holds more issues). One row per issue (its title); a held-back
row is priced by constants fitted without it (5 folds by a hash of the title).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swebounty.collect.pricefit import FITTED, PricedFix, PriceErrors, cross_validate, fit
from swebounty.collect.pricing import PricingConfig
from swebounty.swelancer.prices import SETUP_PATCHES, folder_fixes, priced_fix, unique


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else ""


def history_fixes(repo: Path) -> list[PricedFix]:
    """Rows from the `issues/` folders of every commit (the newest version of each folder)."""
    blobs: dict[str, dict[str, str]] = {}
    for commit in _git(repo, "rev-list", "--all").split():
        found: dict[str, dict[str, str]] = {}
        for line in _git(repo, "ls-tree", "-r", commit, "--", "issues/").splitlines():
            meta, _, path = line.partition("\t")
            parts = path.split("/")
            if len(parts) == 3 and meta.split()[1:2] == ["blob"]:
                found.setdefault(parts[1], {})[parts[2]] = meta.split()[2]
        for name, files in found.items():
            blobs.setdefault(name, files)
    rows = []
    for name, files in blobs.items():
        patch_id = next((files[n] for n in SETUP_PATCHES if n in files), None)
        if "issue_data.json" not in files or patch_id is None:
            continue
        row = priced_fix(
            name, _git(repo, "cat-file", "blob", files["issue_data.json"]),
            _git(repo, "cat-file", "blob", patch_id),
        )  # fmt: skip
        if row is not None:
            rows.append(row)
    return rows


def _row(name: str, e: PriceErrors) -> list[str]:
    return [name, str(e.rows), f"{e.mdape:.1%}", f"{e.spearman:+.3f}",
            f"${e.median_predicted_usd:,.0f}", f"${e.median_paid_usd:,.0f}"]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", type=Path)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows: list[PricedFix] = []
    for source in args.sources:
        rows += folder_fixes(source) if (source / "issues").is_dir() else history_fixes(source)
    rows = unique(rows)
    if len(rows) < args.folds:
        print(f"only {len(rows)} priced issues found in {args.sources}", file=sys.stderr)
        return 1
    hand, fitted = cross_validate(rows, args.folds)
    final = fit(rows, PricingConfig())
    table = Table(title=f"price estimate vs SWE-Lancer payouts ({len(rows)} issues, held back)")
    for col in ("constants", "rows", "MdAPE", "Spearman", "median estimate", "median paid"):
        table.add_column(col, justify="left" if col == "constants" else "right")
    table.add_row(*_row("hand-set (before the fit)", hand))
    table.add_row(*_row(f"fitted ({args.folds}-fold)", fitted))
    console = Console()
    console.print(table)
    constants = {name: getattr(final, name) for name in FITTED}
    console.print(f"fitted on all {len(rows)}: {constants}")
    if args.json:
        args.json.write_text(json.dumps({
            "issues": len(rows), "folds": args.folds, "hand_set": hand.model_dump(),
            "fitted": fitted.model_dump(), "constants": constants,
        }, indent=2) + "\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
