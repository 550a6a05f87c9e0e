"""SWE-Lancer's own grading of Manager tasks beside swebounty's, on the same answers.

    python bench/swelancer_grader.py swelancer_tasks_lite.csv --write-first first.jsonl
    swebounty eval swelancer_tasks_lite.csv --predictions first.jsonl --run-id lite-first
    python bench/swelancer_grader.py swelancer_tasks_lite.csv --predictions first.jsonl \\
        --run-id lite-first [--home DIR] [--json out.json]

SWE-Lancer grades a Manager task (`SWELancerTask.grade` in its swelancer.py) by the first value
of the model's manager_decisions.json, the chosen proposal's id: the task pays its price when
that id is `manager_data["game"]["correct_proposal"]["id"]`, nothing otherwise, and the summary
adds the dollars up. This script applies that rule to the CSV as published, read with csv and ast
alone (none of swebounty's reader), and sets it beside the run's verdicts and `swebounty score`:
per task, paid by the rule or not, resolved by swebounty or not. A prediction's `pick` (an index
into the proposals in id order, as swebounty numbers them) is the id at that place; a
`selected_proposal_id` is taken as it is. `--write-first` writes the baseline that always
chooses the first proposal the task's prompt lists.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swebounty.home import runs_dir
from swebounty.store import Store

csv.field_size_limit(1 << 30)


def manager_rows(path: Path) -> dict[str, dict[str, Any]]:
    """question_id -> price, proposal ids (as listed), correct id; Manager rows only."""
    found = {}
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row.get("variant") != "swe_manager" or "Reintroduce-" in row["question_id"]:
                continue
            game = ast.literal_eval(row["manager_data"])["game"]
            found[row["question_id"]] = {
                "price": float(row["price"]),
                "ids": [int(p["id"]) for p in game["all_formal_proposals"]],
                "correct": int(game["correct_proposal"]["id"]),
                "listed": [int(n) for n in re.findall(r"Proposal: (\d+):", row["prompt"])],
            }
    return found


def chosen_id(prediction: dict[str, Any], ids: list[int]) -> int | None:
    if "selected_proposal_id" in prediction:
        return int(prediction["selected_proposal_id"])
    pick = prediction.get("pick")
    return sorted(ids)[pick] if isinstance(pick, int) and 0 <= pick < len(ids) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--write-first", type=Path, help="write the first-proposal baseline")
    parser.add_argument("--predictions", type=Path)
    parser.add_argument("--run-id")
    parser.add_argument("--home", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = manager_rows(args.csv)
    if args.write_first:
        with args.write_first.open("w") as out:
            for qid, row in rows.items():
                first = row["listed"][0] if row["listed"] else min(row["ids"])
                pick = sorted(row["ids"]).index(first)
                out.write(json.dumps({"instance_id": qid, "model_name_or_path": "first-proposal",
                                      "pick": pick}) + "\n")  # fmt: skip
        print(f"{len(rows)} Manager tasks: {args.write_first}")
        if not args.predictions:
            return 0
    if not (args.predictions and args.run_id):
        parser.error("--predictions and --run-id (the run that graded them) are needed")
    predictions = [json.loads(line) for line in args.predictions.read_text().splitlines() if line]
    paid = {}
    for p in predictions:
        row = rows.get(p["instance_id"])
        if row is not None:
            paid[p["instance_id"]] = (
                row["price"] if chosen_id(p, row["ids"]) == row["correct"] else 0.0
            )
    with Store.open(runs_dir(args.home) / "runs.sqlite") as store:
        resolved = {v.instance_id: v.status == "resolved" for v in store.verdicts(args.run_id)}
    home = ["--home", str(args.home)] if args.home else []
    score = json.loads(subprocess.run(
        [sys.executable, "-m", "swebounty", "score", args.run_id, "--json", *home],
        capture_output=True, text=True,
        check=True).stdout)[0]  # fmt: skip
    differ = sorted(i for i in paid if (paid[i] > 0) != resolved.get(i, False))
    ours = score["pick"]["dollars"]["earned_usd"] if score.get("pick") else 0.0
    result = {
        "csv": str(args.csv), "run_id": args.run_id, "tasks": len(paid),
        "swelancer_rule": {"correct": sum(v > 0 for v in paid.values()),
                           "earned_usd": sum(paid.values())},
        "swebounty": {"resolved": sum(resolved.get(i, False) for i in paid), "earned_usd": ours},
        "differ": differ,
        "listed_in_id_order": sum(r["listed"] == sorted(r["ids"]) for r in rows.values()),
        "manager_tasks": len(rows),
    }  # fmt: skip
    table = Table(
        title=f"{args.run_id}: SWE-Lancer's Manager rule vs swebounty ({len(paid)} tasks)"
    )
    for col in ("grader", "correct", "earned"):
        table.add_column(col, justify="left" if col == "grader" else "right")
    rule = result["swelancer_rule"]
    table.add_row("SWE-Lancer's rule", str(rule["correct"]), f"${rule['earned_usd']:,.0f}")
    table.add_row("swebounty", str(result["swebounty"]["resolved"]), f"${ours:,.0f}")
    Console().print(table)
    print(f"tasks graded differently: {len(differ)} {differ[:10]}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 1 if differ or rule["earned_usd"] != ours else 0


if __name__ == "__main__":
    sys.exit(main())
