"""The funnel page of the HTML report: chart, a row per repository, the drop classes; and the
same page opened in a headless browser."""

from __future__ import annotations

from pathlib import Path

import pytest

from funnel_helpers import funnel_files
from swebounty.collect.funnel import compute
from swebounty.report.browser import browser_missing, chromium_page
from swebounty.report.funnel import render_funnel_page, write_funnel_page

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")
NO_BROWSER = browser_missing()


def test_the_page_has_the_chart_the_repositories_and_the_drops(tmp_path: Path) -> None:
    html = render_funnel_page(compute(*funnel_files(tmp_path)))
    assert html.count('<svg class="chart"') == 1 and "FAIL_TO_PASS found" in html
    assert 'data-repo="a/one"' in html and 'data-repo="c/gone"' in html
    assert ">failed</span>" in html and "clone missing" in html
    assert "too many FAIL_TO_PASS" in html and "tests, docs or packaging only" not in html
    assert "<script" not in html  # a static page: nothing runs
    # Names and reasons come from repositories: escaped, never markup.
    cands, tasks = funnel_files(tmp_path / "evil")
    text = cands.read_text().replace('"b/two"', '"<b>x</b>/two"')
    cands.write_text(text)
    page = render_funnel_page(compute(cands, tasks))
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;/two" in page


@pytest.mark.browser
@pytest.mark.skipif(NO_BROWSER is not None, reason=f"no browser: {NO_BROWSER}")
def test_the_page_reads_right_in_a_browser(tmp_path: Path) -> None:
    page_file = write_funnel_page(compute(*funnel_files(tmp_path)), tmp_path / "funnel.html")
    with chromium_page() as page:
        page.goto(page_file.resolve().as_uri())
        rows = page.locator("#repo-table tbody tr")
        assert rows.count() == 3
        first = [c.strip() for c in rows.nth(0).locator("td").all_inner_texts()]
        assert first[:8] == ["a/one", "9", "7", "5", "4", "4", "3", "2"]
        chart = page.locator("#funnel svg.chart")
        box = chart.bounding_box()
        assert box is not None and box["width"] > 400 and box["height"] > 150
        assert page.locator("#drop-table tbody tr").count() >= 5
        page.screenshot(path=str(tmp_path / "funnel.png"), full_page=True)
    assert (tmp_path / "funnel.png").stat().st_size > 10_000
