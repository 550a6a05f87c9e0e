"""The yield funnel: every drop class, stage counts per repository, pending candidates, failed
repositories; computed from the files collect and validate write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from funnel_helpers import ENV, funnel_files
from swebounty.cli.funnel import register
from swebounty.collect.funnel import collect_class, compute, failure_class


@pytest.mark.parametrize(
    ("stage", "reason", "cls"),
    [
        ("infra", ENV.format("the requirements conflict: numpy<2 and numpy>=2", "resolve"),
         "resolution"),
        ("infra", ENV.format("every release of foo available at the cutoff was yanked", "yanked"),
         "resolution"),
        ("infra", ENV.format("building lxml from source failed during install", "build"), "build"),
        ("infra", ENV.format("numba supports no Python tried here", "python"), "interpreter"),
        ("infra", "before-run failed: environment not built: the task asks for Python 3.4, which "
         "is not installed (interpreter). Install it", "interpreter"),
        ("infra", ENV.format("the package index was unreachable during resolve", "network"),
         "index unreachable"),
        ("infra", "after-run failed: tests timed out after 1800 s", "timeout"),
        ("infra", "before-run failed: no test runner found (jest, vitest or mocha)",
         "unsupported runner"),
        ("infra", "harness error: KeyError: 'x'", "infra"),
        ("tests", "the test patch changes no test module the harness can run",
         "unsupported runner"),
        ("collect", "the before-run collects no test (src/pkg.py)", "test collection"),
        ("patch", "the reference patch does not apply: hunk 2 failed", "patch"),
        ("no_f2p", "no FAIL_TO_PASS after 1 run(s) each (no test fails before and passes after)",
         "no failing test"),
        ("no_f2p", "no FAIL_TO_PASS after 3 run(s) each (flaky)", "flaky"),
        ("network", "2 test(s) fail for want of the network", "network"),
        ("too_many_f2p", "120 FAIL_TO_PASS tests", "too many FAIL_TO_PASS"),
    ],
)  # fmt: skip
def test_failure_classes(stage: str, reason: str, cls: str) -> None:
    assert failure_class(stage, reason) == cls


def test_collect_classes() -> None:
    assert collect_class("split", "no test change") == "no test change"
    assert collect_class("split", "no code change (only tests, docs or packaging)") == (
        "tests, docs or packaging only"
    )
    assert collect_class("filter:leak", "quotes") == "filter leak"
    assert collect_class("duplicate", "the same change as x") == "duplicate"


def test_the_funnel_counts_every_stage_per_repository(tmp_path: Path) -> None:
    cands, tasks = funnel_files(tmp_path)
    funnel = compute(cands, tasks)
    one = funnel["repos"]["a/one"]
    # 7 candidates: a6 pending; a2 dropped at env, a3 at collection, a4 as flaky, a5 by a gate.
    assert [one[s] for s in ("fixes", "candidates", "environment", "collected",
                             "fail_to_pass", "stable", "valid")] == [9, 7, 5, 4, 4, 3, 2]  # fmt: skip
    assert one["pending"] == 1 and one["yield"] == round(2 / 6, 3)
    assert one["dropped"]["resolution"]["stage"] == "environment"
    assert one["dropped"]["flaky"]["example"]["instance_id"] == "a4"
    assert one["dropped"]["too many FAIL_TO_PASS"]["stage"] == "valid"
    assert one["dropped"]["duplicate"]["stage"] == "candidates"
    costs = one["costs"]
    assert costs["validated"] == 6 and costs["cpu_seconds"] == 60.0
    assert costs["cpu_seconds_per_candidate"] == 10.0 and costs["cpu_seconds_per_valid"] == 30.0
    assert costs["environments"] == 1
    # a0's CPU time counts its sandboxed runs; the others' records predate that (costs.Meter)
    assert costs["cpu_incomplete"] == 5
    two = funnel["repos"]["b/two"]
    assert (two["fixes"], two["candidates"], two["pending"], two["valid"]) == (2, 1, 1, 0)
    assert funnel["repos"]["c/gone"]["fixes"] == 0
    assert funnel["failed_repos"] == {"c/gone": "clone missing"}
    overall = funnel["overall"]
    assert (overall["fixes"], overall["candidates"], overall["valid"]) == (11, 8, 2)
    assert overall["dropped"]["filter leak"]["count"] == 1
    # Without validation results yet, every candidate is pending.
    assert compute(cands)["overall"]["pending"] == 8


def test_funnel_command_prints_the_tables_and_writes_json(tmp_path: Path) -> None:
    cands, tasks = funnel_files(tmp_path)
    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)  # a group, so "funnel" is a subcommand
    out = tmp_path / "f.json"
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["funnel", str(cands), str(tasks), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "a/one" in result.output and "resolution" in result.output
    assert "c/gone" in result.output and "failed: clone missing" in result.output
    assert "5 of them without their sandboxed tests' CPU" in result.output
    assert json.loads(out.read_text())["overall"]["valid"] == 2
    missing = CliRunner().invoke(app, ["funnel", str(tmp_path / "none.jsonl")])
    assert missing.exit_code != 0 and "run `swebounty collect` first" in missing.output


def test_the_costs_bench_prints_and_writes_the_costs(tmp_path: Path) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "fresh_costs.py"
    spec = importlib.util.spec_from_file_location("fresh_costs_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    funnel = tmp_path / "tasks.funnel.json"
    funnel.write_text(json.dumps(compute(*funnel_files(tmp_path))))
    (tmp_path / "cache" / "envs" / "e1").mkdir(parents=True)
    (tmp_path / "cache" / "envs" / "e1" / "lib.so").write_bytes(b"x" * 10_000)
    out = tmp_path / "costs.json"
    assert (
        bench.main([str(funnel), "--cache-dir", str(tmp_path / "cache"), "--json", str(out)]) == 0
    )
    data = json.loads(out.read_text())
    overall = data["rows"][-1]
    assert overall["repo"] == "overall" and overall["validated"] == 6
    assert overall["cpu_per_candidate"] == 10.0 and overall["cpu_per_valid"] == 30.0
    assert overall["cpu_incomplete"] == 5
    assert data["env_cache_bytes"] >= 10_000


def test_the_agreement_bench_compares_labels_of_two_validations(tmp_path: Path) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "fresh_agreement.py"
    spec = importlib.util.spec_from_file_location("fresh_agreement_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def task(iid: str, f2p: list[str], p2p: list[str] | str) -> str:
        return json.dumps({"instance_id": iid, "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p})

    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("\n".join([task("x", ["t::a"], ["t::b"]), task("y", ["t::c"], []),
                                task("z", ["t::d"], [])]))  # fmt: skip
    second.write_text("\n".join([task("x", ["t::a"], '["t::b"]'), task("y", ["t::c"], ["t::e"]),
                                 task("w", ["t::f"], [])]))  # fmt: skip
    out = tmp_path / "agree.json"
    assert bench.main([str(first), str(second), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert (result["compared"], result["same"], result["agreement"]) == (3, 1, 0.3333)
    why = {d["instance_id"]: d for d in result["disagreements"]}
    assert why["y"]["p2p_only_second"] == ["t::e"] and why["z"]["why"].startswith("not valid")
    assert result["valid_only_in_second"] == ["w"]


def test_decided_reads_a_stopped_run_and_leaves_out_what_will_be_retried(tmp_path: Path) -> None:
    from swebounty.collect.funnel import decided

    _, tasks = funnel_files(tmp_path)
    assert decided(tasks) == {"a0", "a1", "a2", "a3", "a4", "a5"}
    partial = tasks.with_name("tasks.rejects.jsonl.partial")
    partial.write_text(partial.read_text() + '{"instance_id": "a6", "stage": "infra"}\n{"torn')
    assert "a6" in decided(tasks) and "a6" not in decided(tasks, retrying_infra=True)


def test_environments_built_and_reused_are_found_where_the_manager_keeps_them(
    tmp_path: Path,
) -> None:
    # costs.py looked one level too high: every environment counted as built, 0 bytes on disk.
    from swebounty.collect.costs import env_usage, ready_envs
    from swebounty.envs.cache import READY, CacheLayout

    layout = CacheLayout(tmp_path / "cache" / "envs")  # as EvalContext's EnvManager has it
    for key in ("old", "new"):
        layout.env_dir(key).mkdir(parents=True)
        (layout.env_dir(key) / "lib.so").write_bytes(b"x" * 10_000)
    (layout.env_dir("old") / READY).write_text("{}")
    before = ready_envs(tmp_path / "cache")
    assert before == {"old"}
    (layout.env_dir("new") / READY).write_text("{}")
    usage = env_usage(["old", "new", None, "new"], before, tmp_path / "cache")
    assert (usage["used"], usage["built"], usage["reused"]) == (2, 1, 1)
    assert usage["disk_bytes"] >= 20_000
