"""Scores for people: number formats and the terminal table (`swebounty score`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from swebounty.scoring import Dollars, Rate, RunScore


def format_rate(rate: Rate | None, *, percent: bool = True, digits: int = 1) -> str:
    """`42.0% [30.1–55.2]`, or `—` when undefined."""
    if rate is None:
        return "—"
    scale, unit = (100.0, "%") if percent else (1.0, "")
    text = f"{rate.value * scale:.{digits}f}{unit}"
    if rate.low is not None and rate.high is not None:
        text += f" [{rate.low * scale:.{digits}f}–{rate.high * scale:.{digits}f}]"
    return text


def format_usd(amount: float | None) -> str:
    if amount is None:
        return "—"
    return f"${amount:,.0f}" if abs(amount) >= 100 else f"${amount:,.2f}"


def dollars_note(dollars: Dollars) -> str:
    """What the dollar figures rest on, e.g. `3 estimated, 2 without a value`."""
    parts = []
    if dollars.tasks_estimated:
        parts.append(f"{dollars.tasks_estimated} estimated")
    if dollars.tasks_unvalued:
        parts.append(f"{dollars.tasks_unvalued} without a value")
    return ", ".join(parts)


def render_table(scores: Sequence[RunScore]) -> Table:
    """One row per run, for the terminal."""
    has_pick = any(s.pick for s in scores)
    table = Table(title="swebounty scores", header_style="bold")
    table.add_column("run")
    table.add_column("model")
    table.add_column("tasks", justify="right")
    table.add_column("resolved / wrong / skipped / error", justify="right")
    table.add_column("resolve rate [95% CI]", justify="right")
    table.add_column("pass@k", justify="right")
    if has_pick:
        table.add_column("pick accuracy", justify="right")
    table.add_column("Kprize", justify="right")
    table.add_column("earned / available", justify="right")
    table.add_column("cost", justify="right")
    table.add_column("$ per $", justify="right")
    table.add_column("hack flags", justify="right")
    for s in scores:
        o = s.overall
        best = s.pass_at_k[-1] if s.pass_at_k else None
        earned = f"{format_usd(o.dollars.earned_usd)} / {format_usd(o.dollars.available_usd)}"
        if o.dollars.share is not None:
            earned += f" ({o.dollars.share.value:.0%})"
        if note := dollars_note(o.dollars):
            earned += f"\n[dim]{note}[/dim]"
        row = [
            s.run_id or "—",
            ", ".join(s.models) or "—",
            str(o.graded_tasks),
            f"{o.resolved} / {o.wrong} / {o.skipped} / {o.errors}",
            format_rate(o.resolve_rate),
            f"{best.pass_at_k.value:.1%} (k={best.k})" if best else "—",
        ]
        if has_pick:
            row.append(format_rate(s.pick.resolve_rate) if s.pick else "—")
        ratio = s.cost.earned_per_usd
        row += [
            f"{o.kprize.value:.6f}" if o.kprize else "—",
            earned,
            format_usd(s.cost.total_usd),
            f"{ratio:,.1f}" if ratio is not None else "—",
            str(s.hacks.attempts_flagged),
        ]
        table.add_row(*row)
    return table
