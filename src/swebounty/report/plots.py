"""Charts of the report, drawn with matplotlib (Agg, no display) and returned as inline SVG.

Text stays text (`svg.fonttype: none`) so the numbers in a chart can be read, searched and
tested; ids are prefixed per chart so several SVGs can share one HTML page.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from swebounty.scores import GroupScore, PassAtK, Rate

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# Colour-blind-friendly and calm; a run keeps its colour in every chart.
PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#EECA3B", "#9D755D")
INK, MUTED, GRID = "#1f2933", "#52606d", "#e4e7eb"


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class Series:
    """One run as the charts see it."""

    label: str
    index: int  # position in the leaderboard: picks the colour


@contextmanager
def _figure(name: str, width: float = 6.4, height: float = 3.4) -> Iterator[tuple[Figure, Axes]]:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",
            "text.parse_math": False,  # "$5 of $10" is money, not mathtext
            "svg.hashsalt": name,  # fixed salt: the same data gives the same SVG
            "font.family": "sans-serif",
            "font.size": 9,
            "axes.edgecolor": MUTED,
            "axes.labelcolor": INK,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "xtick.color": MUTED,
            "ytick.color": MUTED,
            "axes.grid": True,
            "grid.color": GRID,
            "axes.axisbelow": True,
        }
    ):
        figure = Figure(figsize=(width, height), layout="constrained")
        yield figure, figure.add_subplot()


def _svg(figure: Figure, name: str) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)
    # Scale with the page: keep the viewBox, let CSS set the width.
    text = re.sub(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"', r"\1", text, count=1)
    text = text.replace("<svg ", f'<svg class="chart" role="img" aria-label="{name}" ', 1)
    text = re.sub(r'\bid="', f'id="{name}-', text)
    text = re.sub(r"url\(#", f"url(#{name}-", text)
    return re.sub(r'href="#', f'href="#{name}-', text)


def _percent_axis(axis: Axes, which: str = "y") -> None:
    from matplotlib.ticker import PercentFormatter

    target = axis.yaxis if which == "y" else axis.xaxis
    target.set_major_formatter(PercentFormatter(1.0, decimals=0))


def resolve_rate_chart(rows: Sequence[tuple[Series, Rate | None]]) -> str | None:
    """Horizontal bars of the resolve rate with their 95% intervals, best run on top."""
    rows = [(s, r) for s, r in rows if r is not None]
    if not rows:
        return None
    name = "chart-resolve"
    with _figure(name, height=max(2.0, 0.55 * len(rows) + 1.0)) as (fig, ax):
        for y, (series, rate) in enumerate(reversed(rows)):
            assert rate is not None
            ax.barh(y, rate.value, color=colour(series.index), height=0.6)
            if rate.low is not None and rate.high is not None:
                ax.errorbar(
                    rate.value,
                    y,
                    xerr=[[rate.value - rate.low], [rate.high - rate.value]],
                    color=INK,
                    capsize=4,
                    linewidth=1,
                )
            right = rate.high if rate.high is not None else rate.value
            ax.text(right + 0.015, y, f"{rate.value:.1%}", va="center", color=INK)
        ax.set_yticks(range(len(rows)), [s.label for s, _ in reversed(rows)])
        ax.set_xlim(0, 1.12)
        _percent_axis(ax, "x")
        ax.set_xlabel("resolve rate (pass@1) with 95% bootstrap interval")
        ax.grid(axis="y", visible=False)
        return _svg(fig, name)


def pass_at_k_chart(rows: Sequence[tuple[Series, Sequence[PassAtK]]]) -> str | None:
    """pass@k (solid) and pass^k (dashed) against k, one colour per run.

    None when no run has two attempts at a task: a curve of one point says nothing.
    """
    from matplotlib.lines import Line2D

    rows = [(s, points) for s, points in rows if points]
    if not rows or all(len(points) < 2 for _, points in rows):
        return None
    name = "chart-passk"
    with _figure(name) as (fig, ax):
        top = max(p.k for _, points in rows for p in points)
        for series, points in rows:
            ks, c = [p.k for p in points], colour(series.index)
            ax.plot(ks, [p.pass_at_k.value for p in points], "o-", color=c)
            ax.plot(ks, [p.pass_hat_k.value for p in points], "s--", color=c, alpha=0.7)
            last = points[-1]
            ax.annotate(
                f"{last.pass_at_k.value:.1%}",
                (last.k, last.pass_at_k.value),
                textcoords="offset points",
                xytext=(6, 4),
                color=c,
            )
        ax.set_xlim(0.7, top + 0.6)
        ax.set_xticks(range(1, top + 1))
        ax.set_ylim(0, 1.05)
        _percent_axis(ax)
        ax.set_xlabel("k (attempts)")
        ax.set_ylabel("share of tasks")
        handles = [Line2D([], [], color=colour(s.index), label=s.label) for s, _ in rows]
        handles += [
            Line2D([], [], color=MUTED, marker="o", label="pass@k"),
            Line2D([], [], color=MUTED, marker="s", linestyle="--", label="pass^k"),
        ]
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=min(len(handles), 4),
            frameon=False,
            fontsize=8,
        )
        return _svg(fig, name)


@dataclass(frozen=True)
class DollarRow:
    series: Series
    earned: float
    available: float
    spent: float | None = None  # cost of one attempt at each task, the cost behind `earned`
    ratio: float | None = None  # earned per dollar spent


def dollars_chart(rows: Sequence[DollarRow]) -> str | None:
    """Dollars earned (coloured) out of dollars available (grey), and dollars spent (black tick)."""
    rows = [r for r in rows if r.available > 0 or r.spent]
    if not rows:
        return None
    name = "chart-dollars"
    with _figure(name, height=max(1.8, 0.6 * len(rows) + 1.0)) as (fig, ax):
        ys = list(range(len(rows)))
        ax.barh(ys, [r.available for r in rows], color=GRID, height=0.6)
        ax.barh(
            ys, [r.earned for r in rows], color=[colour(r.series.index) for r in rows], height=0.6
        )
        right = max(max(r.available, r.earned, r.spent or 0.0) for r in rows)
        for y, row in zip(ys, rows, strict=True):
            text = f"${row.earned:,.0f} of ${row.available:,.0f}"
            if row.spent is not None:
                ax.plot([row.spent, row.spent], [y - 0.38, y + 0.38], color=INK, linewidth=2.5)
                text += f"\nspent ${row.spent:,.2f}"
                if row.ratio is not None:
                    text += f", ${row.ratio:,.1f} per $"
            end = max(row.available, row.earned, row.spent or 0.0)
            ax.annotate(
                text.strip(" "),
                (end, y),
                textcoords="offset points",
                xytext=(5, 0),
                va="center",
                color=INK,
                fontsize=8,
            )
        ax.set_yticks(ys, [r.series.label for r in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, right * 1.6 if right > 0 else 1)
        ax.xaxis.set_major_formatter("${x:,.0f}")
        ax.set_xlabel(
            "earned (colour) of available (grey), spent (black tick): one attempt per task"
        )
        ax.grid(axis="y", visible=False)
        return _svg(fig, name)


def freshness_chart(
    rows: Sequence[tuple[Series, Mapping[str, GroupScore]]], cutoffs: Sequence[date] = ()
) -> str | None:
    """Resolve rate per month of task creation (lines), tasks per month (grey bars).

    A model that does much better before its training cutoff than after it has likely seen
    the older tasks: the cutoff is drawn as a vertical line.
    """
    months = sorted({m for _, by in rows for m in by if m != "unknown"})
    if not months:
        return None
    from matplotlib.ticker import MaxNLocator

    name = "chart-fresh"
    with _figure(name, width=max(6.4, 0.45 * len(months) + 2)) as (fig, ax):
        counts = ax.twinx()
        counts.set_zorder(ax.get_zorder() - 1)
        ax.patch.set_visible(False)
        tasks = [max((by[m].graded_tasks for _, by in rows if m in by), default=0) for m in months]
        counts.bar(range(len(months)), tasks, color=GRID, width=0.7)
        # Bars in the lower part only, so a line at 100% is never lost against a bar's top.
        counts.set_ylim(0, max(max(tasks), 1) * 1.6)
        counts.set_ylabel("tasks", color=MUTED)
        counts.yaxis.set_major_locator(MaxNLocator(integer=True))
        counts.grid(False)
        counts.spines["right"].set_visible(True)
        for series, by in rows:
            xs = [i for i, m in enumerate(months) if m in by and by[m].resolve_rate]
            ys = [by[months[i]].resolve_rate.value for i in xs]  # type: ignore[union-attr]
            # Unclipped, so points at 0% and 100% are drawn whole on the frame.
            ax.plot(xs, ys, "o-", color=colour(series.index), label=series.label, clip_on=False)
        for cutoff in sorted(set(cutoffs)):
            position = _month_position(months, cutoff)
            ax.axvline(position, color=INK, linestyle="--", linewidth=1)
            ax.annotate(
                f"cutoff {cutoff:%Y-%m-%d}",
                (position, 1.08),
                textcoords="offset points",
                xytext=(3, -2),
                va="top",
                color=INK,
                fontsize=8,
            )
        ax.set_xticks(
            range(len(months)),
            months,
            rotation=45 if len(months) > 6 else 0,
            ha="right" if len(months) > 6 else "center",
        )
        ax.set_ylim(0, 1.08)
        _percent_axis(ax)
        ax.set_ylabel("resolve rate")
        ax.set_xlabel("month the task was created")
        fig.legend(loc="outside lower center", ncols=min(len(rows), 4), frameon=False, fontsize=8)
        return _svg(fig, name)


def _month_position(months: Sequence[str], cutoff: date) -> float:
    """Where a date falls on a month axis: between two months' ticks, by day of the month."""
    key = f"{cutoff:%Y-%m}"
    before = sum(1 for m in months if m < key)
    if key in months:
        return before - 0.5 + (cutoff.day - 1) / 31
    return before - 0.5
