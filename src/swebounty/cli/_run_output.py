"""What `swebounty run` prints when it is done: the attempts table and the one-line summary."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from swebounty.cli._common import out, show_task_defects
from swebounty.cli.evaluate import STATUS_STYLE

if TYPE_CHECKING:
    from rich.table import Table

    from swebounty.tasks import Attempt
    from swebounty.verdicts import Verdict


def attempts_table(
    run_id: str, verdicts: list[Verdict], attempts: dict[tuple[str, int], Attempt]
) -> Table:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"run {run_id}")
    for col, justify in (("task", "left"), ("try", "right"), ("agent", "left"),
                         ("verdict", "left"), ("tokens in/out", "right"), ("cost", "right"),
                         ("agent s", "right"), ("verified", "left")):  # fmt: skip
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for v in sorted(verdicts, key=lambda v: (v.instance_id, v.attempt)):
        a = attempts.get((v.instance_id, v.attempt))
        tokens = f"{a.tokens_in:,}/{a.tokens_out:,}" if a and a.tokens_in is not None else "—"
        cost = f"${a.cost_usd:.4f}" if a and a.cost_usd is not None else "—"
        if a and a.tokens_incomplete:  # a lower bound: some answer said not what it cost
            tokens, cost = f"≥{tokens} [yellow](incomplete)[/]", f"≥{cost}"
        verified = {True: "yes", False: "no", None: "—"}[a.verified if a else None]
        agent = f"{a.status} ({escape(a.stop_reason)})" if a else "—"  # a custom agent's words
        skipped = v.empty_patch and v.status == "unresolved"
        status = "[dim]skipped[/]" if skipped else f"[{STATUS_STYLE[v.status]}]{v.status}[/]"
        seconds = f"{a.seconds:.1f}" if a else "—"
        table.add_row(v.instance_id, str(v.attempt), agent, status, tokens, cost, seconds, verified)
    return table


def print_summary(run_id: str, report: dict[str, Any], path: Path) -> None:
    score = report["swebounty"]
    overall = score["overall"]
    parts = [f"resolved {overall['resolved']} of {overall['attempts']} graded attempts"]
    for row in score["pass_at_k"]:
        if row["k"] in (1, score["pass_at_k"][-1]["k"]):
            parts.append(f"pass@{row['k']} {row['pass_at_k']['value']:.1%}")
    if overall.get("kprize"):
        parts.append(f"Kprize {overall['kprize']['value']:.6f}")
    out.print(" · ".join(parts))
    if rule := score.get("eligibility") or {}:
        why = "eligible" if rule["kprize"] else "not eligible: " + "; ".join(rule["reasons"])
        out.print(f"Kprize rule: {why}")
    out.print(f"report: {path} · scores: swebounty score {run_id}")
    show_task_defects(report["task_defects"])
