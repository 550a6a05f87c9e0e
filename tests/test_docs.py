"""The documentation site: built strictly, generated references, every command's page, nothing
lost from the README it replaced, and the built pages rendered in a headless browser."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from swebounty.cli.docs import PAGES
from swebounty.report.browser import browser_missing, chromium_page

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# Every heading of the README before it became the site (up to commit 3c5fdff, 1,227 lines)
# and the page that holds that section now.
MOVED = {
    "What swebounty is": "index.md",
    "Compared with SWE-bench's harness": "index.md",
    "Install": "getting-started.md",
    "The CLI": "guides/evaluate.md",
    "Running agents": "guides/agents.md",
    "Real datasets and repositories": "datasets.md",
    "Real tasks: SWE-bench, seven older repositories": "results/swebench-7repos.md",
    "Scaling out on Ray": "guides/ray.md",
    "Integrity: threat model and hack flags": "integrity.md",
    "Benchmarks": "benchmarks/index.md",
    "Where the time goes on real tasks": "benchmarks/where-the-time-goes.md",
    "Environments": "environments.md",
    "JavaScript/TypeScript tasks and browser tests": "guides/javascript.md",
    "Real tasks: Multi-SWE-bench (JavaScript)": "results/multiswe-javascript.md",
    "Real tasks: Multi-SWE-bench (TypeScript)": "results/multiswe-typescript.md",
    "Fresh tasks: collect, validate, seal": "guides/fresh-tasks.md",
    "Scores and the report": "scores.md",
}


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _headings(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {m.group(1).strip() for m in re.finditer(r"^#+ (.+)$", text, flags=re.M)}


def test_no_section_of_the_old_readme_was_lost() -> None:
    missing = [h for h, page in MOVED.items() if h not in _headings(DOCS / page)]
    assert missing == [], f"sections of the old README with no page: {missing}"


def test_readme_is_short_and_links_only_to_pages_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links and [x for x in links if not (ROOT / x).is_file()] == []


def test_every_command_names_a_page_that_exists() -> None:
    from typer.main import get_command

    from swebounty.cli import app

    commands = [" ".join(path[1:]) for path, _ in _hooks()._commands(get_command(app), ["x"])]
    assert sorted(commands) == sorted(PAGES), "a command without a page in cli/docs.py"
    assert [p for p in PAGES.values() if not (DOCS / p).is_file()] == []
    for command in ("", "eval", "envs prune"):
        argv = [sys.executable, "-m", "swebounty", *command.split(), "--help"]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        assert f"Documentation: docs/{PAGES[command]}" in out


def test_cli_reference_is_every_commands_help() -> None:
    text = _hooks().cli_reference()
    for command in PAGES:
        assert f"## swebounty {command}".rstrip() + "\n" in text
    assert "Usage: swebounty envs prune" in text and "--keep-run" in text


def test_results_tables_are_made_from_the_bench_json(tmp_path: Path) -> None:
    (tmp_path / "install_size.json").write_text(
        '{"python": "3.11", "installs": [{"install": "core", "mb": 117.0, "dists": 27}],'
        ' "per_repo": {"flask": {"gold": 3, "empty": 0}}}'
    )
    text = _hooks().results_tables(tmp_path)
    assert "## install_size" in text and "| python | 3.11 |" in text
    assert "| install | mb | dists |" in text and "| core | 117 | 27 |" in text
    assert "|  | gold | empty |" in text and "| flask | 3 | 0 |" in text
    assert "No measured results" in _hooks().results_tables(tmp_path / "none")
    (tmp_path / "sizes.json").write_text('{"core": {"mb": 118.4}, "dev": {"mb": 703.9}}')
    assert "|  | mb |\n|---|---|\n| core | 118 |\n| dev | 704 |" in _hooks().results_tables(
        tmp_path
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built with warnings as errors (a broken link, a missing page, a bad docstring)."""
    pytest.importorskip(
        "mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'"
    )
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.mark.slow
def test_site_builds_strictly_with_generated_references(site: Path) -> None:
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "Usage: swebounty eval" in cli and "verify-seal" in cli
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="swebounty.tasks.Task"' in api and 'id="swebounty.evaluation.evaluate"' in api
    for page in MOVED.values():
        html = site / page.removesuffix("index.md").removesuffix(".md") / "index.html"
        assert html.is_file(), page


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))

    class Quiet(http.server.ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass

    server = Quiet(("127.0.0.1", 0), handler)
    server.RequestHandlerClass.log_message = lambda *a: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.browser
@pytest.mark.slow
def test_built_pages_render_in_a_browser(served: str, tmp_path: Path) -> None:
    reason = browser_missing()
    if reason:
        pytest.skip(reason)
    errors: list[str] = []
    requests: list[str] = []
    with chromium_page(1280, 900) as page:
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("request", lambda request: requests.append(request.url))
        page.goto(f"{served}/")
        assert page.title().startswith("swebounty")
        nav = page.locator("nav.md-nav--primary").first
        assert "Getting started" in nav.inner_text() and "Reference" in nav.inner_text()
        table = page.locator("article table").first
        assert table.is_visible() and "SWE-bench harness" in table.inner_text()
        page.screenshot(path=str(tmp_path / "home.png"), full_page=True)
        page.goto(f"{served}/scores/")
        assert "Scores" in page.title()
        image = page.locator("article img").first
        assert image.is_visible()
        assert page.evaluate("(img) => img.naturalWidth", image.element_handle()) > 0
        page.screenshot(path=str(tmp_path / "scores.png"), full_page=True)
        page.goto(f"{served}/reference/cli/")
        assert page.locator("article pre").count() >= len(PAGES)
    assert (tmp_path / "home.png").stat().st_size > 10_000
    assert errors == []
    assert [u for u in requests if not u.startswith(served)] == []  # offline, no third party
