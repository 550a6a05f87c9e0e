"""The bundled JavaScript demos, evaluated end to end: gold resolves every task, empty none.

`js` (a Mocha-tested library) needs npm's registry the first time (Node, npm and Mocha are
cached afterwards); `web` also needs Chromium, for its hidden Playwright test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from swebounty.cli import app
from swebounty.demo import build_demo
from swebounty.evalcontext import EvalContext
from swebounty.report.browser import browser_missing
from swebounty.runs import evaluate_run
from swebounty.sandbox import bwrap_available
from swebounty.store import Store
from swebounty.tasks import empty_submissions, gold_submissions
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
NO_BROWSER = browser_missing()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def evaluate(name: str, kind: str, cache: Path, runs: Path) -> list[Verdict]:
    mirror, tasks = build_demo(cache / "demo", name)
    ctx = EvalContext.create(cache_dir=cache, runs_dir=runs, repos_dir=mirror.parent, workers=2)
    subs = gold_submissions(tasks) if kind == "gold" else empty_submissions(tasks)
    with Store.open(runs / "runs.sqlite") as store:
        verdicts = evaluate_run(f"{name}-{kind}", list(zip(tasks, subs, strict=True)), ctx, store,
                                workers=2)  # fmt: skip
    assert len(verdicts) == len(tasks)
    return verdicts


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_js_demo_gold_resolves_all_and_empty_none(cache_dir: Path, tmp_path: Path) -> None:
    gold = evaluate("js", "gold", cache_dir, tmp_path / "runs")
    assert [v.status for v in gold] == ["resolved"] * 2, [v.reason for v in gold]
    for v in gold:
        assert v.env_key and v.env_key.startswith("node-") and not v.hack_flags
        assert {"junit.xml", "test_output.txt", "verdict.json"} <= {
            p.name for p in Path(v.log_dir or "").iterdir()
        }
    empty = evaluate("js", "empty", cache_dir, tmp_path / "runs")
    assert [v.status for v in empty] == ["unresolved"] * 2, [v.reason for v in empty]
    for v in empty:
        f2p = [t for t in v.tests if t.expected == "FAIL_TO_PASS"]
        assert f2p and all(t.status == "failed" for t in f2p)
        assert all(t.status == "passed" for t in v.tests if t.expected == "PASS_TO_PASS")


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_swe_bench_rows_of_a_javascript_repository_run_as_node_tasks(
    cache_dir: Path, tmp_path: Path
) -> None:
    # SWE-bench's own fields only, as a user's dataset of a JavaScript repository has them:
    # no `ecosystem`, so the repository's package.json says it is a Node project.
    mirror, tasks = build_demo(cache_dir / "demo", "js")
    fields = ["instance_id", "repo", "base_commit", "problem_statement", "patch", "test_patch",
              "FAIL_TO_PASS", "PASS_TO_PASS", "created_at", "version"]  # fmt: skip
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(t.model_dump_json(include=set(fields)) + "\n" for t in tasks))
    assert '"ecosystem"' not in rows.read_text()
    runs = tmp_path / "runs"
    common = ["--cache-dir", str(cache_dir), "--runs-dir", str(runs)]
    result = CliRunner().invoke(app, ["eval", str(rows), "--gold", "--run-id", "rows",
                                      "--repos-dir", str(mirror.parent), *common],
                                catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    with Store.open(runs / "runs.sqlite") as store:
        verdicts = store.verdicts("rows")
    assert [v.status for v in verdicts] == ["resolved"] * len(tasks), [v.reason for v in verdicts]
    assert all(v.env_key and v.env_key.startswith("node-") for v in verdicts)


@pytest.mark.sandbox
@pytest.mark.network
@pytest.mark.browser
@needs_bwrap
@pytest.mark.skipif(NO_BROWSER is not None, reason=f"no browser: {NO_BROWSER}")
def test_web_demo_browser_test_drives_the_app(cache_dir: Path, tmp_path: Path) -> None:
    (gold,) = evaluate("web", "gold", cache_dir, tmp_path / "runs")
    assert gold.status == "resolved", gold.reason
    assert (Path(gold.log_dir or "") / "app.log").read_text().startswith("tinycounter on")
    assert gold.artifacts == []  # nothing failed, nothing kept
    # The empty run through the CLI, as a user runs it, then its HTML report.
    runs = tmp_path / "cli-runs"
    common = ["--cache-dir", str(cache_dir), "--runs-dir", str(runs)]
    result = CliRunner().invoke(app, ["eval", "--demo-web", "--empty", "--run-id", "web-empty",
                                      *common], catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    with Store.open(runs / "runs.sqlite") as store:
        (empty,) = store.verdicts("web-empty")
    assert empty.status == "unresolved", empty.reason
    failed = [t for t in empty.tests if t.status != "passed"]
    assert [t.test_id for t in failed] == ["e2e/test_counter.py::test_reset_shows_zero"]
    # The failed test's screenshot and trace are kept with the verdict.
    names = {Path(a).name for a in empty.artifacts}
    assert names == {"screenshot.png", "trace.zip"}
    png = Path(empty.log_dir or "") / next(a for a in empty.artifacts if a.endswith(".png"))
    assert png.read_bytes().startswith(b"\x89PNG")
    report = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", "web-empty", "-o", str(report), *common],
                                catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    html = report.read_text()
    shot = next(a for a in empty.artifacts if a.endswith(".png"))
    assert f'<img class="shot" src="cli-runs/web-empty/demo__tinycounter-1/{shot}"' in html
    assert "trace.zip" in html
