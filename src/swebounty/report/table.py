"""Scores for people: number formats and the terminal tables of `swebounty score`.

One leaderboard row per run when the terminal is wide enough, otherwise a scorecard with one
column per run (eleven columns squeezed into 80 characters cannot be read); then breakdowns by
repository, by month of task creation and around the model cutoff.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from swebounty.scores import Dollars, GroupScore, Rate, RunScore

if TYPE_CHECKING:
    from rich.table import Table


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
    """`$1,250`, `$12.50`, `$0`; `—` when unknown."""
    if amount is None:
        return "—"
    if amount == 0:
        return "$0"
    return f"${amount:,.0f}" if abs(amount) >= 100 else f"${amount:,.2f}"


def format_kprize(rate: Rate | None) -> str:
    """Six decimals, as the Kprize leaderboard shows it; the interval with four.

    A comma, not a dash, between the bounds: they are often negative.
    """
    if rate is None:
        return "—"
    text = f"{rate.value:.6f}"
    if rate.low is not None and rate.high is not None:
        text += f" [{rate.low:.4f}, {rate.high:.4f}]"
    return text


def dollars_note(dollars: Dollars) -> str:
    """What the dollar figures rest on, e.g. `3 estimated, 2 without a value`."""
    parts = []
    if dollars.tasks_estimated:
        parts.append(f"{dollars.tasks_estimated} estimated")
    if dollars.tasks_unvalued:
        parts.append(f"{dollars.tasks_unvalued} without a value")
    return ", ".join(parts)


def _earned(dollars: Dollars) -> str:
    text = f"{format_usd(dollars.earned_usd)} / {format_usd(dollars.available_usd)}"
    if dollars.share is not None:
        text += f" ({dollars.share.value:.0%})"
    if note := dollars_note(dollars):
        text += f"\n[dim]{note}[/dim]"
    return text


def _counts(group: GroupScore) -> str:
    text = f"{group.resolved} / {group.wrong} / {group.skipped} / {group.errors}"
    if group.agent_errors:
        text += f"\n[dim]{group.agent_errors} skipped: the agent crashed[/dim]"
    return text


def _pass_k(score: RunScore) -> str:
    """pass@k at the largest k, with pass@1 beside it when there are several attempts."""
    if not score.pass_at_k:
        return "—"
    first, best = score.pass_at_k[0], score.pass_at_k[-1]
    text = f"{best.pass_at_k.value:.1%} (k={best.k})"
    if best.k > 1:
        text += f"\n[dim]pass@1 {first.pass_at_k.value:.1%}[/dim]"
    return text


def eligibility_text(score: RunScore) -> str:
    """The Kprize rule for a run: `eligible`, or which rules it misses; `—` for eval runs."""
    e = score.eligibility
    if e is None:
        return "—"
    text = "eligible" if e.kprize else "no: " + "; ".join(r.split(":")[0] for r in e.reasons)
    if e.fresh is not None:
        text += (
            ", tasks after the model cutoff"
            if e.fresh
            else f", {e.tasks_before_cutoff + e.tasks_without_date} tasks not after the cutoff"
        )
    return text


def _ratio(score: RunScore) -> str:
    ratio = score.cost.earned_per_usd
    return f"{ratio:,.1f}" if ratio is not None else "—"


def render_table(scores: Sequence[RunScore], *, width: int | None = None) -> Table:
    """The leaderboard, one row per run; the scorecard instead when it would not fit `width`."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

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
    has_rule = any(s.eligibility for s in scores)
    if has_rule:
        table.add_column("Kprize rule")
    for s in scores:
        o = s.overall
        row = [
            (s.run_id or "—") + excused_note(s),
            ", ".join(s.models) or "—",
            str(o.graded_tasks),
            _counts(o),
            format_rate(o.resolve_rate),
            _pass_k(s),
        ]
        if has_pick:
            row.append(format_rate(s.pick.resolve_rate) if s.pick else "—")
        row += [
            f"{o.kprize.value:.6f}" if o.kprize else "—",
            _earned(o.dollars),
            format_usd(s.cost.total_usd)
            + (
                f"\n[yellow]{s.cost.attempts_incomplete} attempts' tokens incomplete[/yellow]"
                if s.cost.attempts_incomplete
                else ""
            ),
            _ratio(s),
            str(s.hacks.attempts_flagged),
        ]
        if has_rule:
            row.append(eligibility_text(s))
        table.add_row(*row)
    if width is not None:
        # Measured on a boundless console: a measurement never exceeds the console's width.
        console = Console(width=100_000)
        if Measurement.get(console, console.options, table).maximum > width:
            return render_scorecard(scores)
    return table


def _scorecard_rows(scores: Sequence[RunScore]) -> list[tuple[str, Callable[[RunScore], str]]]:
    def cost(s: RunScore) -> str:
        c = s.cost
        missing = (
            f"\n[yellow]{c.attempts_incomplete} attempts' tokens incomplete, left out[/yellow]"
            if c.attempts_incomplete
            else ""
        )
        if c.total_usd is None:
            return "not recorded" + missing
        text = f"{format_usd(c.total_usd)}, {format_usd(c.per_attempt_usd)}/attempt"
        if c.attempts_with_cost < c.attempts:
            text += f"\n[dim]{c.attempts_with_cost} of {c.attempts} attempts costed[/dim]"
        return text + missing

    def hacks(s: RunScore) -> str:
        counts = ", ".join(f"{flag} × {n}" for flag, n in s.hacks.counts.items())
        return f"{s.hacks.attempts_flagged}" + (f"\n[dim]{counts}[/dim]" if counts else "")

    def seconds(s: RunScore) -> str:
        agent = s.cost.agent_seconds
        text = f"eval {s.cost.eval_seconds:,.0f} s"
        return f"agent {agent:,.0f} s, {text}" if agent is not None else text

    rows: list[tuple[str, Callable[[RunScore], str]]] = [
        ("model", lambda s: ", ".join(s.models) or "—"),
        ("tasks graded", lambda s: f"{s.overall.graded_tasks} of {s.dataset_tasks}"),
        ("resolved/wrong/skipped/error", lambda s: _counts(s.overall)),
        ("resolve rate [95% CI]", lambda s: format_rate(s.overall.resolve_rate)),
        ("pass@k", _pass_k),
        (
            "pass^k",
            lambda s: (
                f"{s.pass_at_k[-1].pass_hat_k.value:.1%} (k={s.pass_at_k[-1].k})"
                if s.pass_at_k
                else "—"
            ),
        ),
    ]
    if any(s.pick for s in scores):
        rows.append(
            ("pick accuracy", lambda s: format_rate(s.pick.resolve_rate) if s.pick else "—")
        )
    rows += [
        ("Kprize score [95% CI]", lambda s: format_kprize(s.overall.kprize).replace(" [", "\n[")),
        ("earned / available", lambda s: _earned(s.overall.dollars)),
        ("earned by any attempt", lambda s: format_usd(s.overall.dollars.earned_any_usd)),
        ("cost", cost),
        ("$ earned per $ spent", _ratio),
    ]
    if any(s.cost.tokens_in is not None or s.cost.tokens_out is not None for s in scores):
        rows.append(
            (
                "tokens in / out",
                lambda s: f"{s.cost.tokens_in or 0:,} / {s.cost.tokens_out or 0:,}",
            )
        )
    rows += [("wall time", seconds), ("hack flags", hacks)]
    if any(s.excused for s in scores):
        rows.append(("base failures", lambda s: excused_text(s) or "strict"))
    if any(s.verification for s in scores):
        rows.append(
            (
                "verified attempts",
                lambda s: f"{s.verification.rate:.0%}" if s.verification else "—",
            )
        )
    if any(s.eligibility for s in scores):
        rows.append(("Kprize rule", eligibility_text))
    return rows


def excused_text(s: RunScore) -> str:
    """The base failures policy of a run in words ("" when it was strict)."""
    e = s.excused
    if e is None:
        return ""
    text = f"{e.policy}: {e.resolved_with_excuse} resolved attempt(s) needed an excused test"
    if e.other_verdicts:
        text += f"; {e.other_verdicts} verdict(s) graded under another policy (mixed run)"
    return text


def excused_note(s: RunScore) -> str:
    """A line under a run's name when an excused base failure changed one of its verdicts,
    when it excused any base failure (`all`), or when it mixes policies."""
    e = s.excused
    if e is None or not (e.resolved_with_excuse or e.policy == "all" or e.other_verdicts):
        return ""
    return f"\n[yellow]base failures {excused_text(s)}[/yellow]"


def render_scorecard(scores: Sequence[RunScore]) -> Table:
    """One row per metric, one column per run: what fits a narrow terminal."""
    from rich.table import Table

    table = Table(title="swebounty scores", header_style="bold")
    table.add_column("", no_wrap=True)
    for s in scores:
        table.add_column(s.run_id or "—", justify="right")
    for label, cell in _scorecard_rows(scores):
        table.add_row(label, *(cell(s) for s in scores))
    return table


def _group_cell(group: GroupScore | None, *, interval: bool) -> str:
    if group is None or group.resolve_rate is None:
        return "—"
    rate = group.resolve_rate
    head = format_rate(rate) if interval else f"{rate.value:.1%}"
    tail = f"{group.tasks_resolved}/{group.graded_tasks}"
    if group.dollars.available_usd > 0:
        tail += f" · {format_usd(group.dollars.earned_usd)}"
        tail += f" of {format_usd(group.dollars.available_usd)}"
    return f"{head}\n[dim]{tail}[/dim]"


def _breakdown(
    title: str,
    scores: Sequence[RunScore],
    groups: Sequence[Mapping[str, GroupScore]],
    *,
    ci: bool,
    order: Sequence[str] = (),
) -> Table:
    from rich.table import Table

    table = Table(title=title, header_style="bold")
    table.add_column("", no_wrap=True)
    for s in scores:
        table.add_column(s.run_id or "—", justify="right")
    names = sorted(
        {name for by in groups for name in by},
        key=lambda n: (order.index(n) if n in order else len(order), n),
    )
    for name in names:
        table.add_row(name, *(_group_cell(by.get(name), interval=ci) for by in groups))
    return table


def render_breakdowns(scores: Sequence[RunScore]) -> list[Table]:
    """Resolve rate by repository and by month (when there are several), by the dataset's own
    split, and around the cutoff.

    Each cell: resolve rate, tasks resolved by any attempt / graded tasks, dollars earned of
    available.
    """
    tables = []
    for title, key, least in (
        ("by repository", "by_repo", 2),
        ("by month of task creation", "by_month", 2),
        ("by the dataset's split (dollars earned of available)", "by_split", 1),
    ):
        groups: list[Mapping[str, GroupScore]] = [getattr(s, key) for s in scores]
        if len({name for by in groups for name in by}) >= least:
            tables.append(_breakdown(title, scores, groups, ci=False))
    if any(s.by_cutoff is not None for s in scores):
        cutoffs = sorted({str(s.model_cutoff) for s in scores if s.model_cutoff})
        tables.append(
            _breakdown(
                f"before / after the model cutoff ({', '.join(cutoffs)})",
                scores,
                [s.by_cutoff or {} for s in scores],
                ci=True,
                order=("before", "after", "unknown"),
            )
        )
    return tables
