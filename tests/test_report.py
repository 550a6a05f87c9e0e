"""The terminal table and the self-contained HTML report, in a headless browser when there is one."""

from __future__ import annotations

import re
from collections import Counter
from datetime import date, datetime
from pathlib import Path

import pytest
from rich.console import Console

from swebounty.report import ReportRun, plots, render_table, write_report
from swebounty.report.browser import browser_missing, chromium_page, find_chromium
from swebounty.scores import Rate
from swebounty.scoring import score_run
from swebounty.tasks import Submission, Task
from swebounty.verdicts import TestResult as Outcome  # not a test class for pytest
from swebounty.verdicts import Verdict

EVIL = "<script>alert('pwned')</script>"
PATCH = f"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2  # {EVIL}\n"


def make_run(run_id: str, resolved: set[str], tmp: Path, *, cost: float | None) -> ReportRun:
    tasks = [
        Task(
            instance_id=f"org__lib-{i}",
            repo=["org/lib", "org/other"][i % 2],
            base_commit="0" * 40,
            created_at=datetime(2024, 1 + i, 15),
            value_usd=[100.0, 250.0, None, 500.0][i],
        )
        for i in range(4)
    ]
    subs = [
        Submission(
            instance_id=t.instance_id,
            model_name_or_path=f"model-{run_id}",
            model_patch=PATCH,
            cost_usd=cost,
        )
        for t in tasks
    ]
    verdicts = [
        Verdict(
            instance_id=t.instance_id,
            model_name_or_path=f"model-{run_id}",
            status="resolved" if t.instance_id in resolved else "unresolved",
            tests=[
                Outcome(
                    test_id="tests/test_m.py::test_x",
                    expected="FAIL_TO_PASS",
                    status="passed" if t.instance_id in resolved else "failed",
                    message="" if t.instance_id in resolved else "assert 1 == 2",
                )
            ],
            hack_flags=["conftest_changed"] if t.instance_id == "org__lib-3" else [],
            log_dir=str(tmp / "runs" / run_id / t.instance_id),
            seconds=1.5,
        )
        for t in tasks
    ]
    score = score_run(
        tasks, subs, verdicts, run_id=run_id, model_cutoff=date(2024, 2, 20), estimate=None
    )
    info = {"run_id": run_id, "created_at": "2025-01-01T00:00:00", "dataset": "demo"}
    return ReportRun(score, info, tasks, verdicts, subs)


@pytest.fixture
def runs(tmp_path: Path) -> list[ReportRun]:
    return [
        make_run("weak", {"org__lib-0"}, tmp_path, cost=None),
        make_run("strong", {"org__lib-0", "org__lib-1", "org__lib-3"}, tmp_path, cost=0.5),
    ]


@pytest.fixture
def report(runs: list[ReportRun], tmp_path: Path) -> Path:
    return write_report(runs, tmp_path / "out" / "report.html")


def test_table_shows_each_runs_numbers(runs: list[ReportRun]) -> None:
    console = Console(record=True, width=250)
    console.print(render_table([r.score for r in runs]))
    text = console.export_text()
    assert "weak" in text and "strong" in text
    assert "75.0% [" in text and "25.0% [" in text  # 3 of 4 and 1 of 4 resolved
    assert "$850 / $850 (100%)" in text  # 100 + 250 + 500; the unvalued task is not $0
    assert "1 without a value" in text
    assert f"{(3 - 1) / 4:.6f}" in text  # Kprize of the strong run


def test_report_is_one_offline_file(report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    assert re.search(r"<script[^>]*\bsrc=", html) is None
    assert re.search(r"<link\b", html) is None
    assert re.search(r"@import|url\(\s*['\"]?(https?:)?//", html) is None
    # The only web addresses left are SVG namespace names, which browsers never fetch.
    for match in re.finditer(r"https?://", html):
        assert (
            html[max(0, match.start() - 14) : match.start()]
            .rstrip('="')
            .endswith(("xmlns", "xmlns:xlink"))
        ), html[match.start() - 40 : match.start() + 40]
    ids = Counter(re.findall(r'\bid="([^"]+)"', html))
    assert [i for i, n in ids.items() if n > 1] == []  # several SVGs share one page


def test_report_contents(report: Path, tmp_path: Path) -> None:
    html = report.read_text(encoding="utf-8")
    board = html[html.index('id="leaderboard"') : html.index('id="charts"')]
    assert board.index("strong") < board.index("weak")  # best resolve rate first
    assert "75.0%" in board and "0.500000" in board
    for figure in ("fig-resolve", "fig-passk", "fig-dollars", "fig-fresh"):
        assert f'id="{figure}"' in html
    assert "org/other" in html and 'id="contamination"' in html
    assert html.count('<details class="task"') == 8
    assert "conftest_changed" in html and "assert 1 == 2" in html
    # The diff is shown, escaped: it cannot run in the reader's browser.
    assert EVIL not in html and "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in html
    assert 'href="../runs/strong/org__lib-1/"' in html  # logs, relative to the report


def test_report_names_task_defects_where_a_reader_looks(tmp_path: Path) -> None:
    run = make_run("defects", {"org__lib-0", "org__lib-1"}, tmp_path, cost=None)
    words = "task defect: its FAIL_TO_PASS tests pass with no change to the repository"
    flagged = run.verdicts[1].model_copy(
        update={"task_defect": words, "reason": f"resolved\n{words}"}
    )
    verdicts = [run.verdicts[0], flagged, *run.verdicts[2:]]
    html = write_report([run._replace(verdicts=verdicts)], tmp_path / "r.html").read_text()
    board = html[html.index('id="leaderboard"') : html.index('id="charts"')]
    assert "1 task defect<" in board  # on the run's leaderboard row
    facts = html[html.index('id="defects-0-defects"') : html.index("<h3>Tasks</h3>")]
    assert "cannot tell a fix from none" in facts and "FAIL_TO_PASS labels of" in facts
    assert 'href="#0-defects-org__lib-1"' in facts and "org__lib-0" not in facts
    task = html[html.index('id="0-defects-org__lib-1"') :]
    task = task[: task.index("</details>")]
    assert 'data-defect="yes"' in task and ">task defect</span>" in task
    assert task.count(words) == 2  # the badge's title and the attempt's own line, not the reason
    assert html.count('data-defect="yes"') == 1
    clean = write_report([run], tmp_path / "clean.html").read_text()
    assert "task defect<" not in clean and 'data-defect="yes"' not in clean


def test_charts_are_deterministic_and_skip_missing_data() -> None:
    series = [(plots.Series("a", 0), Rate(value=0.5, low=0.25, high=0.75))]
    first = plots.resolve_rate_chart(series)
    assert first is not None and first == plots.resolve_rate_chart(series)
    assert ">50.0%<" in first  # numbers stay text, readable in the page
    assert plots.resolve_rate_chart([(plots.Series("a", 0), None)]) is None
    assert plots.freshness_chart([(plots.Series("a", 0), {})]) is None
    assert plots.pass_at_k_chart([(plots.Series("a", 0), [])]) is None
    assert plots.dollars_chart([plots.DollarRow(plots.Series("a", 0), 0.0, 0.0)]) is None


def test_report_without_dates_values_or_runs(tmp_path: Path) -> None:
    tasks = [Task(instance_id="t", repo="o/r", base_commit="0" * 40)]
    subs = [Submission(instance_id="t", model_patch="")]
    verdicts = [Verdict(instance_id="t", status="unresolved", empty_patch=True)]
    score = score_run(tasks, subs, verdicts, run_id="bare", estimate=None)
    out = write_report([(score, {}, tasks, verdicts, subs)], tmp_path / "r.html")
    html = out.read_text(encoding="utf-8")
    assert 'id="fig-resolve"' in html and 'id="fig-fresh"' not in html
    assert "No patch submitted." in html
    with pytest.raises(ValueError, match="no runs"):
        write_report([], tmp_path / "none.html")


@pytest.mark.browser
def test_report_renders_in_headless_chromium(
    report: Path, runs: list[ReportRun], tmp_path: Path
) -> None:
    reason = browser_missing()
    if reason:
        pytest.skip(reason)
    strong = next(r.score for r in runs if r.score.run_id == "strong")
    assert strong.overall.resolve_rate is not None
    expected = f"{strong.overall.resolve_rate.value:.1%}"
    requests: list[str] = []
    errors: list[str] = []
    with chromium_page(1280, 900) as page:
        page.on("request", lambda request: requests.append(request.url))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(report.as_uri())
        board = page.locator("#leaderboard tr[data-run=strong]")
        assert expected in board.inner_text()
        chart = page.locator("#fig-resolve svg")
        box = chart.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 100
        assert expected in chart.locator("text").all_text_contents()
        first = page.locator("#fig-resolve svg path").first
        assert first.is_visible()
        # The drill-down filter narrows the task list.
        bar = page.locator(".filters").first
        bar.locator("select").select_option("resolved")
        assert bar.locator(".count").inner_text() == "3 of 4 tasks"
        bar.locator("select").select_option("")
        # A diff is coloured when opened, and the patch's markup stays text.
        task = page.locator("details.task").first
        task.locator("> summary").click()
        task.locator("details:has(pre.diff) > summary").first.click()
        added = task.locator("pre.diff span.add").first
        assert added.inner_text() == f"+x = 2  # {EVIL}"
        assert page.locator("pre.diff script").count() == 0
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    assert errors == []
    assert all(url.startswith(("file:", "data:", "about:")) for url in requests), requests


def test_chromium_is_found_where_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = tmp_path / "my-chromium"
    browser.write_text("#!/bin/sh\n")
    monkeypatch.setenv("SWEBOUNTY_CHROMIUM", str(browser))
    assert find_chromium() == browser


def test_an_incomplete_token_count_is_shown_as_such(tmp_path: Path) -> None:
    run = make_run("partial", {"org__lib-0"}, tmp_path, cost=0.5)
    run.submissions[1].tokens_incomplete = True
    run.submissions[1].tokens_in = 7
    score = score_run(run.tasks, run.submissions, run.verdicts, run_id="partial", estimate=None)
    assert score.cost.attempts_incomplete == 1 and score.cost.total_usd == 1.5
    console = Console(record=True, width=250)
    console.print(render_table([score]))
    assert "1 attempts' tokens incomplete" in console.export_text()
    html = write_report(
        [ReportRun(score, run.info, run.tasks, run.verdicts, run.submissions)],
        tmp_path / "out" / "report.html",
    ).read_text(encoding="utf-8")
    assert "1 attempts' token counts incomplete" in html
    assert "at least: incomplete" in html


def test_report_templates_escape_and_refuse_a_missing_value() -> None:
    """The run report and the funnel page both render through `templates()`."""
    jinja2 = pytest.importorskip("jinja2")
    from swebounty.report.html import templates

    env = templates()
    rendered = env.from_string("{{ x }}").render(x=EVIL)
    assert "<script>" not in rendered and "&lt;script&gt;" in rendered
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ missing }}").render()
    with pytest.raises(jinja2.TemplateNotFound):
        env.get_template("no-such.html.j2")
