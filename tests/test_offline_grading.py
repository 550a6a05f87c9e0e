"""Offline grading end to end: the base failures policy (baseline.py) on small repos this file
builds, graded through the real evaluation path and sandbox (`network`: environments come from
the package index).

A PASS_TO_PASS test that fails on the unpatched base for want of the network (DNS, no route)
is excused by default; one failing there with a plain assertion is not; `strict` excuses
nothing; `all` excuses both; FAIL_TO_PASS tests never.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

from repo_helpers import BUGGY_PROJECT, WHEN, diff_of, git, git_repo
from swebounty.sandbox import bwrap_available
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")

F2P = ["tests/test_a.py::test_fixed"]
P2P = ["tests/test_a.py::test_other", "tests/test_a.py::test_network", "tests/test_a.py::test_dns"]
STALE = "tests/test_a.py::test_stale"


TESTS = """\
    import socket
    from proj.a import double, name


    def test_fixed():
        assert double(3) == 6


    def test_other():
        assert name() == "proj"


    def test_network():  # as requests-3362's tests: a literal address, no route
        socket.create_connection(("203.0.113.1", 80), timeout=2).close()


    def test_dns():  # as axios's tests reach postman-echo.com: no DNS in the sandbox
        socket.create_connection(("postman-echo.com", 80), timeout=2).close()


    def test_stale():  # fails on the base too, and not for want of the network
        assert name() == "the connection was closed"
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A repo with a bug (`double`), its tasks and a few submissions."""
    root = tmp_path_factory.mktemp("baseline")
    files = dict(BUGGY_PROJECT)
    repo = git_repo(root / "repos" / "small__proj", files, when=WHEN)
    base = git(repo, "rev-parse", "HEAD").strip()
    fix = "def double(x):\n    return x * 2\n\n\ndef name():\n    return 'proj'\n"
    gold = diff_of(repo, {"proj/a.py": fix})
    test_patch = diff_of(repo, {"tests/test_a.py": TESTS})
    # Its base run dies before reporting anything (the fix makes the module import).
    crashing = diff_of(repo, {"tests/test_a.py": "import os\nfrom proj.a import double\n"
                              "if double(3) != 6:\n    os._exit(3)\n" + textwrap.dedent(TESTS)})  # fmt: skip
    record = {"repo": "small/proj", "base_commit": base, "problem_statement": "double adds",
              "patch": gold, "FAIL_TO_PASS": json.dumps(F2P), "PASS_TO_PASS": json.dumps(P2P),
              "created_at": "2024-03-01T12:00:00Z"}  # fmt: skip
    # 1: its P2P tests that fail at base fail for want of the network; 2: its base run dies;
    # 3: a P2P test fails at base with a plain assertion too.
    records = [
        {**record, "instance_id": "small__proj-1", "test_patch": test_patch},
        {**record, "instance_id": "small__proj-2", "test_patch": crashing},
        {**record, "instance_id": "small__proj-3", "test_patch": test_patch,
         "PASS_TO_PASS": json.dumps([*P2P, STALE])},
    ]  # fmt: skip
    dataset = root / "tasks.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    preds = root / "preds.jsonl"
    breaks_other = diff_of(repo, {"proj/a.py": fix.replace("'proj'", "'other'")})
    unrelated = diff_of(repo, {"README.md": "nothing to see\n"})
    preds.write_text("".join(
        json.dumps({"instance_id": "small__proj-1", "model_name_or_path": m, "model_patch": p})
        + "\n" for m, p in (("breaks-other", breaks_other), ("unrelated", unrelated))
    ))  # fmt: skip
    return {"root": root, "dataset": dataset, "preds": preds, "repos": root / "repos",
            "cache": root / "cache", "runs": root / "runs"}  # fmt: skip


def _evaluate(small: dict[str, Any], subs: Any, run_id: str, **kw: Any) -> dict[str, Verdict]:
    from swebounty.evaluation import evaluate

    verdicts = evaluate(small["dataset"], subs, run_id=run_id, repos_dir=small["repos"],
                        cache_dir=small["cache"], runs_dir=small["runs"], **kw)  # fmt: skip
    return {v.instance_id: v for v in verdicts}


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_python_tasks_under_each_base_failures_policy(small: dict[str, Any]) -> None:
    from swebounty.evalinputs import EvalInputError
    from swebounty.store import Store

    strict = _evaluate(small, "gold", "gold-strict", base_failures="strict")
    assert strict["small__proj-1"].status == "unresolved", strict["small__proj-1"].reason
    assert strict["small__proj-1"].base_failures == "strict"
    assert not strict["small__proj-1"].excused_tests

    gold = _evaluate(small, "gold", "gold-default")  # the default: network
    one = gold["small__proj-1"]
    assert one.status == "resolved", one.reason
    assert one.base_failures == "network"
    evidence = {e.test_id: (e.base_status, e.network) for e in one.excused_tests}
    assert set(evidence) == {P2P[1], P2P[2]}
    assert "Network is unreachable" in evidence[P2P[1]][1]
    assert any(s in evidence[P2P[2]][1] for s in ("name resolution", "Name or service"))
    assert "for want of the network" in one.reason
    # A base run that died excuses nothing, and the verdict says so.
    two = gold["small__proj-2"]
    assert two.status == "unresolved" and not two.excused_tests
    assert "no PASS_TO_PASS test excused" in two.reason
    # A test failing at base with a plain assertion is held; the network ones are listed.
    three = gold["small__proj-3"]
    assert three.status == "unresolved", three.reason
    assert {e.test_id for e in three.excused_tests} == {P2P[1], P2P[2]}
    assert "not for want of the network" in three.reason

    wide = _evaluate(small, "gold", "gold-all", base_failures="all", instance_ids=["small__proj-3"])
    assert wide["small__proj-3"].status == "resolved", wide["small__proj-3"].reason
    stale = [e for e in wide["small__proj-3"].excused_tests if e.test_id == STALE]
    assert stale and stale[0].base_status == "failed" and not stale[0].network

    empty = _evaluate(small, "empty", "empty-default")
    assert empty["small__proj-1"].status == "unresolved"
    assert not empty["small__proj-1"].excused_tests  # its F2P test fails: no base run
    assert empty["small__proj-2"].status == "error"  # the tests die before reporting: no grade
    _evaluate(small, [small["preds"]], "preds-default", instance_ids=["small__proj-1"])
    verdicts = _by_model(small, "preds-default")
    assert len(verdicts) == 2, verdicts
    # The F2P test fails: unresolved, whatever fails at base.
    assert verdicts["unrelated"].status == "unresolved"
    assert not verdicts["unrelated"].excused_tests
    # A P2P test that passes at base, broken by the submission: still unresolved.
    broke = verdicts["breaks-other"]
    assert broke.status == "unresolved"
    assert {e.test_id for e in broke.excused_tests} == {P2P[1], P2P[2]}

    with Store.open(small["runs"]) as store:
        assert store.run("gold-default")["config"]["base_failures"] == "network"  # type: ignore[index]
        assert store.run("gold-strict")["config"]["base_failures"] == "strict"  # type: ignore[index]
    report = json.loads((small["runs"] / "gold-default" / "report.json").read_text())
    assert report["swebounty"]["excused"]["policy"] == "network"
    assert report["swebounty"]["excused"]["resolved_with_excuse"] == 1
    assert report["swebounty"]["excused"]["instance_ids"] == ["small__proj-1"]
    strict_report = json.loads((small["runs"] / "gold-strict" / "report.json").read_text())
    assert strict_report["swebounty"]["excused"] is None
    # A run's verdicts are never graded under two policies.
    with pytest.raises(EvalInputError, match="mix two grading policies"):
        _evaluate(small, "gold", "gold-strict")


def _by_model(small: dict[str, Any], run_id: str) -> dict[str, Verdict]:
    from swebounty.store import Store

    with Store.open(small["runs"]) as store:
        return {v.model_name_or_path: v for v in store.verdicts(run_id)}


OFFLINE_JS = """\
const net = require('net')

describe('offline', function () {
  it('reaches the network', function (done) {
    const socket = net.connect(80, '203.0.113.1')
    socket.on('connect', () => { socket.destroy(); done() })
    socket.on('error', done)
  })
})
"""


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_a_node_task_s_network_test_is_excused_by_default(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from swebounty.demo import build_demo
    from swebounty.evalcontext import EvalContext
    from swebounty.runs import evaluate_run
    from swebounty.store import Store
    from swebounty.tasks import empty_submissions, gold_submissions

    cache, runs = tmp_path_factory.mktemp("cache"), tmp_path_factory.mktemp("runs")
    mirror, tasks = build_demo(cache / "demo", "js")
    lines = OFFLINE_JS.splitlines()
    offline = (
        "diff --git a/test/offline.test.js b/test/offline.test.js\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/test/offline.test.js\n@@ -0,0 +1,{len(lines)} @@\n"
        + "".join(f"+{line}\n" for line in lines)
    )
    network = "test/offline.test.js:offline reaches the network"
    task = tasks[0].model_copy(
        update={"test_patch": tasks[0].test_patch + offline,
                "PASS_TO_PASS": [*tasks[0].PASS_TO_PASS, network]}
    )  # fmt: skip
    found: dict[str, Verdict] = {}
    with Store.open(runs / "runs.sqlite") as store:
        for policy in ("strict", "network"):
            ctx = EvalContext.create(cache_dir=cache, runs_dir=runs, repos_dir=mirror.parent,
                                     base_failures=policy)  # type: ignore[arg-type]  # fmt: skip
            for kind, subs in (("gold", gold_submissions([task])),
                               ("empty", empty_submissions([task]))):  # fmt: skip
                run_id = f"{kind}-{policy}"
                store.ensure_run(
                    run_id, dataset="demo:js", config={}, sandbox="bwrap", unsafe=False
                )
                [found[run_id]] = evaluate_run(run_id, [(task, subs[0])], ctx, store)
    assert found["gold-strict"].status == "unresolved", found["gold-strict"].reason
    gold = found["gold-network"]
    assert gold.status == "resolved", gold.reason
    assert [(e.test_id, e.status, e.base_status) for e in gold.excused_tests] == [
        (network, "failed", "failed")
    ]
    assert gold.excused_tests[0].network  # connect ENETUNREACH 203.0.113.1:80
    assert found["empty-network"].status == "unresolved"
    assert not found["empty-network"].excused_tests
