"""The yield funnel as a page of the HTML report: a funnel chart (stages, with what each one
dropped), a table per repository, and the drop classes with an example each.

Takes the funnel JSON (collect/funnel.py's `compute`) and writes one self-contained file in the
report's style, readable offline.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from swebounty.report.html import templates
from swebounty.report.plots import INK, MUTED, _figure, _svg, colour


def funnel_chart(funnel: Mapping[str, Any]) -> str:
    """Horizontal bars, one per stage from fixes to valid, widest on top, each labelled with
    what it kept and its share of the candidates."""
    overall = funnel["overall"]
    stages = list(funnel["stages"])
    name = "chart-funnel"
    with _figure(name, width=8.0, height=0.32 * len(stages) + 0.6) as (fig, ax):
        top = max(1, max(int(overall[s]) for s in stages))
        candidates = max(1, int(overall["candidates"]))
        for y, stage in enumerate(reversed(stages)):
            kept = int(overall[stage])
            ax.barh(y, kept, left=(top - kept) / 2, height=0.7, color=colour(0 if y else 2))
            share = "" if stage == "fixes" else f"  ({kept / candidates:.0%} of candidates)"
            if stage == "candidates":
                share = f"  ({kept / max(1, int(overall['fixes'])):.0%} of fixes)"
            ax.text(top / 2, y, f"{kept}{share}", ha="center", va="center", color=INK)
        labels = [funnel["stages"][s].split(" (")[0] for s in reversed(stages)]
        ax.set_yticks(range(len(stages)), labels)
        ax.set_xlim(0, top)
        ax.set_xticks([])
        ax.grid(visible=False)
        ax.spines["bottom"].set_visible(False)
        ax.tick_params(axis="y", colors=MUTED, length=0)
        return _svg(fig, name)


def render_funnel_page(funnel: Mapping[str, Any], *, title: str = "swebounty yield funnel") -> str:
    from swebounty import __version__

    env = templates()
    stages = list(funnel["stages"])
    repos = []
    for repo, row in funnel["repos"].items():
        repos.append(
            {
                "repo": repo,
                "row": row,
                "failed": funnel["failed_repos"].get(repo),
                "drops": list(row["dropped"].items())[:2],
            }
        )
    return env.get_template("funnel.html.j2").render(
        title=title,
        version=__version__,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        funnel=funnel,
        stages=stages,
        overall=funnel["overall"],
        chart=funnel_chart(funnel),
        repos=repos,
    )


def write_funnel_page(funnel: Mapping[str, Any], out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_funnel_page(funnel), encoding="utf-8")
    return out
