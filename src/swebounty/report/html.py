"""The HTML report: one self-contained file (inline CSS, SVG charts, a little JS), readable offline.

`write_report` takes one `ReportRun` per run: its score, its row from the store (`run_id`,
`created_at`, `dataset`, `sandbox`, `unsafe`, ...), and the tasks, verdicts and submissions it
was scored from (for the per-task drill-down). Log links are relative to the report's folder, so
the report and the runs folder can be moved together.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote

from swebounty.extras import require
from swebounty.outcomes import AttemptOutcome, TaskOutcome, load_value_estimator, task_outcomes
from swebounty.report import plots
from swebounty.report.table import dollars_note, format_rate, format_usd
from swebounty.scores import RunScore
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict

if TYPE_CHECKING:
    import jinja2
    from markupsafe import Markup  # jinja2's, so the `report` extra's

TEMPLATES = Path(__file__).parent / "templates"
MAX_DIFF_CHARS = 200_000  # per attempt: a runaway patch must not make the report unreadable
MAX_MESSAGE_CHARS = 2_000


class ReportRun(NamedTuple):
    """Everything the report shows about one run."""

    score: RunScore
    info: Mapping[str, Any]
    tasks: Sequence[Task]
    verdicts: Sequence[Verdict]
    submissions: Sequence[Submission]


def write_report(
    runs: Sequence[ReportRun | tuple[Any, ...]],
    out: Path,
    *,
    title: str = "swebounty report",
) -> Path:
    """Render the report of `runs` to `out` (one HTML file) and return its path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    html = render_report(runs, base_dir=out.parent.resolve(), title=title)
    out.write_text(html, encoding="utf-8")
    return out


def templates() -> jinja2.Environment:
    """The report's templates: autoescaped, and a missing value is an error, not a blank."""
    require("report", "the HTML report", "jinja2", "matplotlib")
    # Imported here: `import swebounty` must stay cheap.
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_report(
    runs: Sequence[ReportRun | tuple[Any, ...]], *, base_dir: Path, title: str = "swebounty report"
) -> str:
    """The report as a string; links to logs are made relative to `base_dir`."""
    if not runs:
        raise ValueError("no runs to report: pass at least one scored run")
    from swebounty import __version__

    env = templates()
    items = [ReportRun(*run) for run in runs]
    # The leaderboard order is the order of every chart and section.
    order = sorted(range(len(items)), key=lambda i: -_resolve_rate(items[i].score))
    views = [_run_view(items[i], rank, base_dir) for rank, i in enumerate(order)]
    env.filters.update(rate=format_rate, usd=format_usd)
    return env.get_template("report.html.j2").render(
        title=title,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        runs=views,
        charts=_charts(views),
        repos=_repo_rows(views),
        show_pick=any(v["score"].pick for v in views),
        show_cutoff=any(v["score"].by_cutoff for v in views),
    )


def _resolve_rate(score: RunScore) -> float:
    rate = score.overall.resolve_rate
    return rate.value if rate else -1.0


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "run"


def _run_view(run: ReportRun, rank: int, base_dir: Path) -> dict[str, Any]:
    score, info = run.score, run.info
    run_id = str(info.get("run_id") or score.run_id or f"run {rank + 1}")
    outcomes, _ = task_outcomes(
        run.tasks, run.submissions, run.verdicts, estimate=load_value_estimator()
    )
    slug = f"{rank}-{_slug(run_id)}"
    tasks = [_task_view(o, slug, base_dir) for o in outcomes]
    return {
        "rank": rank,
        "slug": slug,
        "run_id": run_id,
        "colour": plots.colour(rank),
        "info": _facts(info),
        "unsafe": bool(info.get("unsafe")),
        "score": score,
        "best_k": score.pass_at_k[-1] if score.pass_at_k else None,
        "dollars_note": dollars_note(score.overall.dollars),
        "tasks": tasks,
        # Tasks whose FAIL_TO_PASS tests passed with no change (grading.empty_never_resolves):
        # named at the top of the run, since every verdict on them proves nothing.
        "defects": [t for t in tasks if t["defect"]],
    }


def _facts(info: Mapping[str, Any]) -> dict[str, str]:
    """The store's row of a run, as words for people."""
    facts = {}
    if info.get("dataset"):
        facts["dataset"] = str(info["dataset"])
    created = info.get("created_at")
    if created:
        try:
            moment = datetime.fromisoformat(str(created))
        except ValueError:
            facts["created"] = str(created)
        else:
            if moment.tzinfo is not None:
                moment = moment.astimezone(timezone.utc)
            facts["created"] = f"{moment:%Y-%m-%d %H:%M} UTC"
    if info.get("sandbox"):
        facts["sandbox"] = str(info["sandbox"])
    return facts


def _task_view(outcome: TaskOutcome, slug: str, base_dir: Path) -> dict[str, Any]:
    task = outcome.task
    kinds = [a.outcome for a in outcome.attempts]
    best = next(
        (k for k in ("resolved", "wrong", "skipped", "error", "pending") if k in kinds), "pending"
    )
    defects = [
        a.verdict.task_defect for a in outcome.attempts if a.verdict and a.verdict.task_defect
    ]
    return {
        "anchor": f"{slug}-{_slug(task.instance_id)}",
        "id": task.instance_id,
        "repo": task.repo,
        "kind": task.kind,
        "created": f"{task.created_at:%Y-%m-%d}" if task.created_at else "—",
        "value": format_usd(outcome.value_usd) if outcome.value_usd is not None else "no value",
        "estimated": outcome.value_source == "estimate",
        "outcome": best,
        "resolved": outcome.resolved,
        "graded": outcome.graded,
        "flagged": any(a.verdict and a.verdict.hack_flags for a in outcome.attempts),
        "defect": next(iter(defects), ""),
        "attempts": [_attempt_view(a, base_dir) for a in outcome.attempts],
    }


def _attempt_view(attempt: AttemptOutcome, base_dir: Path) -> dict[str, Any]:
    sub, verdict = attempt.submission, attempt.verdict
    patch = (sub.model_patch or "") if sub else ""
    truncated = len(patch) > MAX_DIFF_CHARS
    tests = verdict.tests if verdict else []
    return {
        "number": attempt.attempt,
        "outcome": attempt.outcome,
        "status": verdict.status if verdict else "not evaluated",
        # The defect has a line of its own: its words leave the reason they were added to.
        "reason": "\n".join(
            line for line in verdict.reason.splitlines() if line != verdict.task_defect
        )
        if verdict
        else "",
        "task_defect": verdict.task_defect if verdict else "",
        "patch_method": verdict.patch_method if verdict else None,
        "eval_seconds": verdict.seconds if verdict else None,
        "sandbox": verdict.sandbox if verdict else None,
        "hack_flags": verdict.hack_flags if verdict else [],
        "excused": [
            e.model_copy(update={"base_message": e.base_message[:MAX_MESSAGE_CHARS]})
            for e in verdict.excused_tests
        ]
        if verdict
        else [],
        "pick": sub.pick if sub else None,
        "cost": sub.cost_usd if sub else None,
        "tokens": (sub.tokens_in, sub.tokens_out)
        if sub and (sub.tokens_in or sub.tokens_out or sub.tokens_incomplete)
        else None,
        "tokens_incomplete": bool(sub and sub.tokens_incomplete),
        "agent_seconds": sub.seconds if sub else None,
        "log": _log_link(verdict.log_dir, base_dir) if verdict and verdict.log_dir else None,
        # Screenshots and traces of failed browser tests, kept in the logs.
        "artifacts": [
            {
                "href": _log_link(verdict.log_dir, base_dir) + quote(a),
                "name": a,
                "image": a.lower().endswith((".png", ".jpg", ".jpeg")),
            }
            for a in verdict.artifacts
        ]
        if verdict and verdict.log_dir
        else [],
        "tests": [
            {
                "id": t.test_id,
                "expected": t.expected,
                "status": t.status,
                "message": t.message[:MAX_MESSAGE_CHARS],
            }
            for t in tests
        ],
        "tests_failing": sum(1 for t in tests if t.status != "passed"),
        # Plain text: the page colours a diff when it is opened, which keeps big reports small.
        "diff": patch[:MAX_DIFF_CHARS],
        "diff_lines": patch.count("\n") + (not patch.endswith("\n")) if patch else 0,
        "diff_truncated": truncated,
    }


def _log_link(log_dir: str, base_dir: Path) -> str:
    target = Path(log_dir).resolve()
    try:
        relative = os.path.relpath(target, base_dir)
    except ValueError:  # another drive on Windows: no relative path exists
        return target.as_uri()
    return quote(Path(relative).as_posix()) + "/"


def _charts(views: Sequence[dict[str, Any]]) -> dict[str, Markup]:
    series = [(plots.Series(v["run_id"], v["rank"]), v["score"]) for v in views]
    svgs = {
        "resolve": plots.resolve_rate_chart([(s, sc.overall.resolve_rate) for s, sc in series]),
        "passk": plots.pass_at_k_chart([(s, sc.pass_at_k) for s, sc in series]),
        "dollars": plots.dollars_chart(
            [
                plots.DollarRow(
                    s,
                    sc.overall.dollars.earned_usd,
                    sc.overall.dollars.available_usd,
                    sc.cost.one_pass_usd,
                    sc.cost.earned_per_usd,
                )
                for s, sc in series
            ]
        ),
        "fresh": plots.freshness_chart(
            [(s, sc.by_month) for s, sc in series],
            [sc.model_cutoff for _, sc in series if sc.model_cutoff],
        ),
    }
    # The SVG comes from matplotlib with our own text already escaped by it.
    from markupsafe import Markup

    return {name: Markup(svg) for name, svg in svgs.items() if svg}


def _repo_rows(views: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    repos = sorted({repo for v in views for repo in v["score"].by_repo})
    rows = []
    for repo in repos:
        cells = [v["score"].by_repo.get(repo) for v in views]
        tasks = max((c.graded_tasks for c in cells if c), default=0)
        rows.append({"repo": repo, "tasks": tasks, "cells": cells})
    return rows
