"""Open a report in headless Chromium (Playwright driving the system's browser): screenshots, tests.

Playwright's own browser download needs the internet; this uses an installed Chromium instead
(Debian: `apt-get install chromium`), found at $SWEBOUNTY_CHROMIUM, on PATH, or /usr/bin/chromium.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

# No GPU, no sandbox (we are usually root in a container), and nothing that phones home.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def find_chromium() -> Path | None:
    candidates = [
        os.environ.get("SWEBOUNTY_CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        "/usr/bin/chromium",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def browser_missing() -> str | None:
    """Why a headless browser cannot be used here, or None when it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install playwright"
    if find_chromium() is None:
        return "no Chromium found: apt-get install chromium, or set SWEBOUNTY_CHROMIUM"
    return None


@contextmanager
def chromium_page(width: int = 1280, height: int = 900) -> Iterator[Page]:
    """A fresh headless Chromium page; the browser is closed on exit."""
    reason = browser_missing()
    if reason:
        raise RuntimeError(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(find_chromium()), args=list(CHROMIUM_ARGS)
        )
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def screenshot(
    html: Path, png: Path, *, width: int = 1280, height: int = 900, full_page: bool = False
) -> Path:
    """A PNG of the report as a reader first sees it (or the whole page with `full_page`)."""
    with chromium_page(width, height) as page:
        page.goto(Path(html).resolve().as_uri())
        page.screenshot(path=str(png), full_page=full_page)
    return Path(png)
