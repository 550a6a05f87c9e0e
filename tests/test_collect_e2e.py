"""collect → validate → seal → eval on the widget repo, with the real harness.

Validation runs the fixture's own tests unsandboxed (`--unsafe`): its flaky test keeps a counter
in a host file, which is how a test can flip between runs deterministically; the code is ours.
The gold/empty evaluation afterwards uses the bubblewrap sandbox when the machine has one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from collect_helpers import WidgetRepo, assert_public_file_hides_the_answers, build_widget_repo
from swebounty.cli import app as main_app
from swebounty.cli.collect import register
from swebounty.sandbox import bwrap_available
from swebounty.store import Store
from swebounty.tasks import Task, load_tasks

pytestmark = [pytest.mark.network, pytest.mark.slow]
runner = CliRunner()


@dataclass
class Pipeline:
    widget: WidgetRepo
    root: Path
    cache: Path

    @property
    def tasks(self) -> dict[str, Task]:
        return {t.instance_id: t for t in load_tasks(self.root / "tasks.jsonl")[0]}


def _invoke(app: typer.Typer, args: list[str]) -> str:
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    root = tmp_path_factory.mktemp("e2e")
    widget = build_widget_repo(root, counter=root / "flaky-counter")
    cli = typer.Typer()
    register(cli)
    cache = root / "cache"
    _invoke(cli, ["collect", str(widget.path), "--since", "2024-03-01",
                  "-o", str(root / "candidates.jsonl")])  # fmt: skip
    _invoke(cli, ["validate", str(root / "candidates.jsonl"), "-o", str(root / "tasks.jsonl"),
                  "--unsafe", "--workers", "2", "--cache-dir", str(cache),
                  "--runs-dir", str(root / "runs")])  # fmt: skip
    return Pipeline(widget, root, cache)


def test_validation_finds_the_expected_tests(pipeline: Pipeline) -> None:
    direct = "acme__widget-" + pipeline.widget.shas["direct"][:10]
    expected = {
        "acme__widget-1": (["test_core.py::test_add_negative"],
                           ["test_core.py::test_add_positive", "test_core.py::test_mean"]),
        "acme__widget-2": (["test_core.py::test_mean_empty"],
                           ["test_core.py::test_add_negative", "test_core.py::test_add_positive",
                            "test_core.py::test_mean"]),
        "acme__widget-5": (["test_clamp.py::test_clamp_high"], ["test_clamp.py::test_clamp_low"]),
        direct: (["test_div.py::test_div_zero"], ["test_div.py::test_div"]),
        "acme__widget-7": (["test_scale.py::test_scale"], ["test_scale.py::test_scale_zero"]),
        "acme__widget-8": (["test_double.py::test_double_str"], []),
        # Its test module imports median(), which the fix adds: failing before, as in SWE-bench.
        "acme__widget-13": (["test_median.py::test_median"], []),
    }  # fmt: skip
    tasks = pipeline.tasks
    assert set(tasks) == set(expected)
    for iid, (f2p, p2p) in expected.items():
        assert [f"tests/{t}" for t in f2p] == tasks[iid].FAIL_TO_PASS, iid
        assert [f"tests/{t}" for t in p2p] == tasks[iid].PASS_TO_PASS, iid
    flaky = {iid: (t.model_extra or {})["flaky_tests"] for iid, t in tasks.items()}
    assert flaky["acme__widget-7"] == ["tests/test_scale.py::test_flaky"]
    assert all(not v for k, v in flaky.items() if k != "acme__widget-7")
    rejects = {
        r["instance_id"]: (r["stage"], r["reason"])
        for r in map(json.loads, (pipeline.root / "tasks.rejects.jsonl").read_text().splitlines())
    }
    assert set(rejects) == {"acme__widget-12"}
    assert rejects["acme__widget-12"][0] == "no_f2p"
    assert (tasks["acme__widget-13"].model_extra or {})["validation"]["before_per_file"] == "import"


def test_validate_writes_the_yield_funnel(pipeline: Pipeline) -> None:
    funnel = json.loads((pipeline.root / "tasks.funnel.json").read_text())
    widget = funnel["repos"]["acme/widget"]
    assert (widget["fixes"], widget["candidates"], widget["valid"]) == (13, 8, 7)
    assert widget["fail_to_pass"] == 7 and widget["pending"] == 0
    assert widget["dropped"]["no failing test"]["example"]["instance_id"] == "acme__widget-12"
    costs = widget["costs"]
    assert costs["validated"] == 8 and costs["cpu_seconds"] > 0 and costs["environments"] >= 1
    assert funnel["last_run"]["costs"]["environments"]["used"] >= 1


def test_validation_resumes_without_rerunning(pipeline: Pipeline) -> None:
    cli = typer.Typer()
    register(cli)
    before = (pipeline.root / "tasks.jsonl").read_text()
    out = _invoke(cli, ["validate", str(pipeline.root / "candidates.jsonl"), "-o",
                        str(pipeline.root / "tasks.jsonl"), "--unsafe", "--cache-dir",
                        str(pipeline.cache), "--runs-dir", str(pipeline.root / "runs")])  # fmt: skip
    assert "8 decided before" in " ".join(out.split())
    assert (pipeline.root / "tasks.jsonl").read_text() == before


def test_a_limited_validation_decides_the_first_candidates(pipeline: Pipeline) -> None:
    cli = typer.Typer()
    register(cli)
    args = ["validate", str(pipeline.root / "candidates.jsonl"), "-o",
            str(pipeline.root / "limited.jsonl"), "--unsafe", "--cache-dir", str(pipeline.cache),
            "--runs-dir", str(pipeline.root / "runs-limited"), "--limit", "2"]  # fmt: skip
    out = " ".join(_invoke(cli, args).split())
    assert "(0 decided before)" in out
    decided = load_tasks(pipeline.root / "limited.jsonl")[0]
    assert len(decided) == 2 and {t.instance_id for t in decided} <= set(pipeline.tasks)
    assert "2 decided before" in " ".join(_invoke(cli, args).split())


def test_sealed_tasks_resolve_with_gold_and_not_with_empty(pipeline: Pipeline) -> None:
    cli = typer.Typer()
    register(cli)
    _invoke(cli, ["seal", str(pipeline.root / "tasks.jsonl"), "--since", "2024-03-01"])
    _invoke(cli, ["verify-seal", str(pipeline.root / "tasks.manifest.json")])
    sealed = pipeline.root / "tasks.sealed.jsonl"
    # The collected tasks carry fix_commit, pr_number, code_files, repo_url: none is public.
    assert_public_file_hides_the_answers(pipeline.root / "tasks.public.jsonl", sealed)
    ok, _ = bwrap_available()
    sandbox = [] if ok else ["--unsafe"]
    runs = pipeline.root / "eval-runs"
    common = ["--cache-dir", str(pipeline.cache), "--runs-dir", str(runs), "--workers", "2"]
    _invoke(main_app, ["eval", str(sealed), "--gold", "--run-id", "gold", *sandbox, *common])
    _invoke(main_app, ["eval", str(sealed), "--empty", "--run-id", "empty", *sandbox, *common])
    with Store.open(runs / "runs.sqlite") as store:
        gold = {v.instance_id: v for v in store.verdicts("gold")}
        empty = {v.instance_id: v for v in store.verdicts("empty")}
    assert len(gold) == len(empty) == 7
    assert all(v.status == "resolved" for v in gold.values()), {
        k: v.reason for k, v in gold.items() if v.status != "resolved"
    }
    assert all(v.status == "unresolved" for v in empty.values()), {
        k: v.reason for k, v in empty.items() if v.status != "unresolved"
    }
