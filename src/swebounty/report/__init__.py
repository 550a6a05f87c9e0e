"""How scores are shown: the terminal table and the self-contained HTML report."""

from swebounty.report.html import ReportRun, render_report, write_report
from swebounty.report.table import (
    format_rate,
    format_usd,
    render_breakdowns,
    render_scorecard,
    render_table,
)

__all__ = [
    "ReportRun",
    "format_rate",
    "format_usd",
    "render_breakdowns",
    "render_report",
    "render_scorecard",
    "render_table",
    "write_report",
]
