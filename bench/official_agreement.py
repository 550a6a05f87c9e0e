"""swebounty's verdicts beside the official ones that a published evaluation gave the same
predictions (issue 24, acceptance 4: django, SWE-agent + GPT-4 on SWE-bench Lite).

    python bench/official_agreement.py --dataset ../shared/data/swebench_lite_test.jsonl \\
        --repos-dir /work/clones --official /work/clones/aorwall__SWE-bench-docker \\
        --evaluation 20240402_sweagent_gpt4 --repo django/django --home /work/homes/django \\
        [--workers 1] [--json bench/results/django_agreement.json] [--stored]

The official side is read from a copy of aorwall/SWE-bench-docker (a bare git repository is
enough: files are read with `git show`): `evaluations/NAME/predictions.jsonl` (the patches)
and `report.json` (its lists `resolved`, `applied`, `generated`). An instance the official
evaluation graded is `resolved` when listed so, else `unresolved` (a patch that did not apply
counts as unresolved there). swebounty evaluates the same patches (the non-empty one where an
instance has two lines) as `swebounty eval --predictions` does, in its own run (resumable),
and its `resolved` is compared with the official `resolved`; its `unresolved` and
`patch_failed` with the official `unresolved`; an `error` is a disagreement (the harness could
not grade what the official evaluation did). Prints the table and every disagreement with
swebounty's reason and the official log's lines about the tests concerned; writes it all to
--json. With --stored nothing is evaluated: the table is made of the verdicts the run holds
already (while it runs, or after it), and the instances it has not graded yet are listed as
pending.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchkit import table
from rich.console import Console

from swebounty.evaluation import evaluate
from swebounty.home import runs_dir
from swebounty.store import Store
from swebounty.verdicts import Verdict

AGREES = {"resolved": {"resolved"}, "unresolved": {"unresolved", "patch_failed"}}


def git_show(repo: Path, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"HEAD:{path}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def official(repo: Path, evaluation: str) -> tuple[dict[str, str], dict[str, str]]:
    """(instance -> official status for every instance it graded, instance -> its patch)."""
    base = f"evaluations/{evaluation}"
    report = json.loads(git_show(repo, f"{base}/report.json"))
    graded = set(report.get("generated", [])) | set(report.get("applied", []))
    statuses = {i: "resolved" if i in set(report["resolved"]) else "unresolved" for i in graded}
    patches: dict[str, str] = {}
    for line in git_show(repo, f"{base}/predictions.jsonl").splitlines():
        row = json.loads(line)
        patch = row.get("model_patch") or ""
        if patch.strip() or row["instance_id"] not in patches:  # a non-empty line wins
            patches[row["instance_id"]] = patch
    return statuses, patches


def official_lines(repo: Path, evaluation: str, instance: str, words: list[str]) -> list[str]:
    """The official log's test-result lines that mention any of `words` (test names)."""
    try:
        log = git_show(repo, f"evaluations/{evaluation}/logs/{instance}.{evaluation}.eval.log")
    except subprocess.CalledProcessError:
        return []
    marks = (" ... ", "FAIL:", "ERROR:")
    return [
        ln.strip()[:200]
        for ln in log.splitlines()
        if any(m in ln for m in marks) and any(w in ln for w in words)
    ][:12]


def compare(
    ids: list[str],
    statuses: dict[str, str],
    ours: dict[str, Verdict],
    official_log: Callable[[str, list[str]], list[str]],
) -> list[dict[str, Any]]:
    """One row per instance of `ids` that swebounty graded: both verdicts, whether they agree,
    and for a disagreement our reason, the tests that did not pass and the official log's lines
    about them (`official_log(instance, test names)`)."""
    rows: list[dict[str, Any]] = []
    for i in ids:
        v = ours.get(i)
        if v is None:
            continue
        agree = v.status in AGREES[statuses[i]]
        row: dict[str, Any] = {"instance_id": i, "official": statuses[i], "swebounty": v.status,
                               "agree": agree}  # fmt: skip
        if not agree:
            bad = [t for t in v.tests if t.status != "passed"]
            row["reason"] = v.reason
            row["tests"] = [{"test_id": t.test_id, "status": t.status, "message": t.message[:300]}
                            for t in bad[:10]]  # fmt: skip
            names = [t.test_id.split(" ")[0] for t in bad[:10]] or ["Ran "]
            row["official_log"] = official_log(i, names)
        rows.append(row)
    return rows


def evaluate_patches(
    args: argparse.Namespace, ids: list[str], patches: dict[str, str], run_id: str
) -> list[Verdict]:
    """swebounty's verdicts on the official evaluation's patches of `ids`, in run `run_id`."""
    with tempfile.TemporaryDirectory() as tmp:
        preds = Path(tmp) / "predictions.jsonl"
        preds.write_text("".join(
            json.dumps({"instance_id": i, "model_name_or_path": args.evaluation,
                        "model_patch": patches.get(i, "")}) + "\n" for i in ids
        ))  # fmt: skip
        return evaluate(args.dataset, [preds], run_id=run_id, instance_ids=ids,
                        home_dir=args.home, repos_dir=args.repos_dir, workers=args.workers)  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--repos-dir", type=Path, required=True)
    p.add_argument("--official", type=Path, required=True, help="aorwall/SWE-bench-docker copy")
    p.add_argument("--evaluation", default="20240402_sweagent_gpt4")
    p.add_argument("--repo", default="django/django", help="only this repository's tasks")
    p.add_argument("--home", type=Path, default=None)
    p.add_argument("--run-id", default=None)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--json", type=Path, default=Path("bench/results/official_agreement.json"))
    p.add_argument("--stored", action="store_true", help="evaluate nothing: the run's verdicts")
    args = p.parse_args()
    console = Console()

    statuses, patches = official(args.official, args.evaluation)
    tasks = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    tasks = [t for t in tasks if t["repo"] == args.repo and t["instance_id"] in statuses]
    ids = [t["instance_id"] for t in tasks]
    run_id = args.run_id or f"agreement-{args.evaluation}-{args.repo.replace('/', '__')}"
    if args.stored:
        verdicts = Store.open(runs_dir(args.home)).verdicts(run_id)
    else:
        verdicts = evaluate_patches(args, ids, patches, run_id)
    ours = {v.instance_id: v for v in verdicts}
    pending = [i for i in ids if i not in ours]
    rows = compare(
        ids,
        statuses,
        ours,
        lambda i, names: official_lines(args.official, args.evaluation, i, names),
    )

    pairs = Counter((r["official"], r["swebounty"]) for r in rows)
    agreed = sum(r["agree"] for r in rows)
    share = agreed / len(rows) if rows else 0.0
    console.print(table(
        f"{args.repo}: {args.evaluation}, official vs swebounty ({len(rows)} graded by both)",
        ["official", "swebounty", "tasks"],
        [[o, s, str(n)] for (o, s), n in sorted(pairs.items())],
    ))  # fmt: skip
    console.print(f"agreement: {agreed}/{len(rows)} = {share:.1%} (target 99%)")
    if pending:
        console.print(f"pending: {len(pending)} of the {len(ids)} the official evaluation graded "
                      "have no swebounty verdict yet")  # fmt: skip
    for r in rows:
        if not r["agree"]:
            console.print(f"\n[bold]{r['instance_id']}[/]: official {r['official']}, "
                          f"swebounty {r['swebounty']}: {r.get('reason', '')[:300]}", markup=True)  # fmt: skip
            for line in r.get("official_log", []):
                console.print(f"  official log: {line}", markup=False)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "dataset": str(args.dataset), "evaluation": args.evaluation, "repo": args.repo,
        "run_id": run_id, "graded_officially": len(ids), "graded_by_both": len(rows),
        "pending": pending, "agreed": agreed, "agreement": share,
        "pairs": {f"{o}->{s}": n for (o, s), n in sorted(pairs.items())}, "instances": rows,
    }, indent=2))  # fmt: skip
    console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
