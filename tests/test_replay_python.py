"""A Python task that requires a recorded backend: its tests call an API, whose answers are in
a mitmproxy flow file the task gives the catalog's `mitmproxy-replay` service
(`requires.services`, `requires.service_data`). Graded through the real evaluation path and
sandbox (`network`: the environments come from the package index): the reference fix resolves
with the replay answering, the empty patch does not, and a fix that asks for an answer the
recording lacks fails at once with the request named on the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repo_helpers import WHEN, diff_of, git, git_repo
from swebounty.evaluation import evaluate
from swebounty.sandbox import bwrap_available
from test_services_replay import flow

BWRAP_OK, BWRAP_WHY = bwrap_available()

CLIENT = """\
    import json
    import os
    import urllib.request


    def balance(account):
        url = os.environ["REPLAY_URL"] + "/api/Balance?accountID=%d" % account
        with urllib.request.urlopen(url, timeout=20) as answer:
            return json.load(answer)["amount"]
"""
TESTS = """\
    from proj.client import balance


    def test_balance():
        assert balance(7) == "$42.00"
"""


@pytest.mark.sandbox
@pytest.mark.network
@pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
def test_a_python_task_is_graded_with_its_backend_replayed(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": '[project]\nname = "proj"\nversion = "0.1"\n'
        'requires-python = ">=3.8"\n[project.optional-dependencies]\ntest = ["pytest"]\n',
        "proj/__init__.py": "",
        "proj/client.py": CLIENT,
        "tests/__init__.py": "",
    }
    repo = git_repo(tmp_path / "repos" / "owner__bank", files, when=WHEN)
    fixed = CLIENT.replace('["amount"]', '["balance"]')
    flows = tmp_path / "data" / "flow.mitm"
    flows.parent.mkdir()
    flows.write_bytes(flow("GET", "www.expensify.com", "/api/Balance?accountID=7", 200,
                           b'{"balance": "$42.00"}', content_type="application/json"))  # fmt: skip
    record = {
        "repo": "owner/bank", "instance_id": "owner__bank-1", "problem_statement": "balance",
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "patch": diff_of(repo, {"proj/client.py": fixed}),
        "test_patch": diff_of(repo, {"tests/test_client.py": TESTS}),
        "FAIL_TO_PASS": ["tests/test_client.py::test_balance"], "PASS_TO_PASS": [],
        "requires": {"services": ["mitmproxy-replay"],
                     "service_data": {"mitmproxy-replay": [str(flows)]}},
    }  # fmt: skip
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    unrecorded = diff_of(repo, {"proj/client.py": fixed.replace("/api/Balance", "/api/Other")})
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": "owner__bank-1", "model_patch": unrecorded}))
    where = {"repos_dir": tmp_path / "repos", "cache_dir": tmp_path / "cache",
             "runs_dir": tmp_path / "runs"}  # fmt: skip
    (gold,) = evaluate(dataset, "gold", run_id="gold", **where)
    assert gold.status == "resolved", gold.reason
    (use,) = gold.services
    assert (use.name, use.data, use.unanswered) == ("mitmproxy-replay", [str(flows)], [])
    (empty,) = evaluate(dataset, "empty", run_id="empty", **where)
    assert empty.status == "unresolved" and empty.services[0].unanswered == []
    (other,) = evaluate(dataset, [preds], run_id="other", **where)
    assert other.status == "unresolved", other.reason
    assert other.services[0].unanswered == ["GET 127.0.0.1/api/Other?accountID=7"]
    assert [t.status for t in other.tests] == ["failed"]  # a 502 at once, not a time-out
    assert "no recorded answer for GET 127.0.0.1/api/Other?accountID=7" in other.reason
