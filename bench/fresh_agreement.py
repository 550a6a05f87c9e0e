"""Do two independent validations of the same candidates agree? (issue 28, acceptance 2)

    python bench/fresh_agreement.py FIRST_TASKS.jsonl SECOND_TASKS.jsonl [--json out.json]

For the tasks valid in FIRST: the share whose FAIL_TO_PASS and PASS_TO_PASS are the same sets
in SECOND (a task SECOND rejected or did not validate counts as a disagreement unless
--only-both), with every disagreement listed: tests gained or lost on each side.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def labels(path: Path) -> dict[str, tuple[set[str], set[str]]]:
    out: dict[str, tuple[set[str], set[str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            t = json.loads(line)
        except json.JSONDecodeError:
            continue
        f2p, p2p = t.get("FAIL_TO_PASS") or [], t.get("PASS_TO_PASS") or []
        f2p = json.loads(f2p) if isinstance(f2p, str) else f2p
        p2p = json.loads(p2p) if isinstance(p2p, str) else p2p
        out[str(t["instance_id"])] = (set(f2p), set(p2p))
    return out


def compare(
    first: dict[str, tuple[set[str], set[str]]],
    second: dict[str, tuple[set[str], set[str]]],
    *,
    only_both: bool = False,
) -> dict[str, Any]:
    ids = sorted(set(first) & set(second)) if only_both else sorted(first)
    same, differ = [], []
    for iid in ids:
        if iid not in second:
            differ.append({"instance_id": iid, "why": "not valid in the second validation"})
            continue
        (f1, p1), (f2, p2) = first[iid], second[iid]
        if (f1, p1) == (f2, p2):
            same.append(iid)
            continue
        differ.append(
            {
                "instance_id": iid,
                "why": "labels differ",
                "f2p_only_first": sorted(f1 - f2),
                "f2p_only_second": sorted(f2 - f1),
                "p2p_only_first": sorted(p1 - p2),
                "p2p_only_second": sorted(p2 - p1),
            }
        )
    return {
        "compared": len(ids),
        "same": len(same),
        "agreement": round(len(same) / len(ids), 4) if ids else None,
        "valid_only_in_second": sorted(set(second) - set(first)),
        "disagreements": differ,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--only-both", action="store_true", help="compare tasks valid in both")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = compare(labels(args.first), labels(args.second), only_both=args.only_both)
    console = Console()
    table = Table(title="label agreement between two validations")
    for col in ("compared", "same labels", "agreement", "valid only in the second"):
        table.add_column(col, justify="right")
    rate = result["agreement"]
    table.add_row(
        str(result["compared"]),
        str(result["same"]),
        "" if rate is None else f"{rate:.1%}",
        str(len(result["valid_only_in_second"])),
    )
    console.print(table)
    for d in result["disagreements"]:
        console.print(f"{d['instance_id']}: {d['why']}", highlight=False)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
