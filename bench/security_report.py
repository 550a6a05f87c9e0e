"""Run every hostile submission of tests/security/attacks.py and print what became of each.

The same catalogue and the same run as `tests/security/test_attacks.py` (the real evaluation
path: predictions file, evaluate_run, bwrap sandbox, two workers, one demo environment), shown
as a table: attack, issue class, contained, verdict (and the expected one), flags. An attack is
contained when its verdict is the expected one (a grading hack never resolves, a crash or hang
the base does not have is never an `error`, a bad record is refused), the host is untouched
(canary directory, /tmp, /usr, a TCP listener, surviving processes, leftover workspaces) and
the harness's fake secret appears in none of its logs.

    python bench/security_report.py [--json bench/results/security_report.json] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from security.attacks import ATTACKS, Attack
from security.harness import Outcome, log_dir, run_attacks
from swebounty.sandbox import bwrap_available

console = Console(width=160)


def row(attack: Attack, out: Outcome) -> dict[str, object]:
    if attack.name in out.skipped:
        return {"attack": attack.name, "class": attack.klass, "contained": None,
                "verdict": "skipped", "expected": attack.status, "flags": [],
                "why": out.skipped[attack.name]}  # fmt: skip
    if attack.status == "record_error":
        refused = attack.name in out.record_errors and attack.name not in out.verdicts
        error = out.record_errors.get(attack.name)
        return {"attack": attack.name, "class": attack.klass, "contained": refused,
                "verdict": "record_error" if refused else "accepted", "expected": attack.status,
                "flags": [], "why": error.message if error else ""}  # fmt: skip
    verdict = out.verdicts.get(attack.name)
    if verdict is None:
        return {"attack": attack.name, "class": attack.klass, "contained": False,
                "verdict": "none", "expected": attack.status, "flags": [], "why": "no verdict"}  # fmt: skip
    leaked = any(p.startswith(str(log_dir(out, verdict))) for p in out.secret_seen_in)
    contained = (
        verdict.status == attack.status
        and set(verdict.hack_flags) == set(attack.flags)
        and not out.host_problems
        and not leaked
    )
    return {"attack": attack.name, "class": attack.klass, "contained": contained,
            "verdict": verdict.status, "expected": attack.status, "flags": verdict.hack_flags,
            "reverted": verdict.test_infra_reverted, "why": verdict.reason[:160]}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("bench/results/security_report.json"))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    ok, why = bwrap_available()
    if not ok:
        console.print(f"[red]no bwrap sandbox here: {why}[/]")
        return 2
    with tempfile.TemporaryDirectory(prefix="swebounty-security-") as tmp:
        work, cache = Path(tmp) / "work", Path(tmp) / "cache"
        work.mkdir()
        out = run_attacks(work, cache, workers=args.workers)
    rows = [row(a, out) for a in ATTACKS]
    table = Table(title=f"{len(rows)} hostile submissions ({out.seconds:.0f} s)")
    for col in ("attack", "class", "contained", "verdict", "flags"):
        table.add_column(col)
    for r in rows:
        mark = {True: "[green]yes[/]", False: "[red]NO[/]", None: "[dim]skipped[/]"}[
            r["contained"]  # type: ignore[index]
        ]
        verdict = str(r["verdict"])
        if r["verdict"] != r["expected"]:
            verdict += f" [red](expected {r['expected']})[/]"
        table.add_row(str(r["attack"]), str(r["class"]), mark, verdict,
                      ", ".join(r["flags"]))  # type: ignore[arg-type]  # fmt: skip
    console.print(table)
    contained = sum(1 for r in rows if r["contained"])
    ran = sum(1 for r in rows if r["contained"] is not None)
    console.print(f"contained {contained}/{ran}; host problems: {out.host_problems or 'none'}; "
                  f"secret seen in: {out.secret_seen_in or 'nothing'}")  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "attacks": rows, "contained": contained, "ran": ran, "seconds": round(out.seconds, 1),
        "host_problems": out.host_problems, "secret_seen_in": out.secret_seen_in,
    }, indent=2, default=str))  # fmt: skip
    console.print(f"JSON: {args.json}")
    return 0 if contained == ran and not out.host_problems and not out.secret_seen_in else 1


if __name__ == "__main__":
    raise SystemExit(main())
