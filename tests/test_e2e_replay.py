"""A web-app task shipped as SWE-Lancer ships one, graded with its backend replayed: a small
app whose page shows what its backend answers, the backend's answers recorded in a mitmproxy
flow file, the `mitmproxy-replay` test service (catalog.toml, services/replay.py) serving them
in the sandbox beside the app and the hidden browser test. The task starts at the fixed commit
with a setup patch putting the bug back; the reference fix is that patch reversed.

A request the recording lacks is answered at once (502), the test fails without waiting, and
the verdict names the request."""

from __future__ import annotations

from pathlib import Path

import pytest

from collect_helpers import GitRepo, replace
from swebounty.evalcontext import EvalContext
from swebounty.report.browser import browser_missing
from swebounty.runs import evaluate_run
from swebounty.sandbox import bwrap_available
from swebounty.store import Store
from swebounty.swelancer.reverse import reverse_patch
from swebounty.tasks import Submission, Task
from test_services_replay import flow

BWRAP_OK, BWRAP_WHY = bwrap_available()
NO_BROWSER = browser_missing()

SERVER = """'use strict'
// tinybank: a page showing the balance its backend ($REPLAY_URL) answers.
const http = require('http')

const backend = process.env.REPLAY_URL
const ask = (path, done) => http.get(backend + path, (res) => {
  let body = ''
  res.on('data', (chunk) => { body += chunk })
  res.on('end', () => done(res.statusCode, body))
}).on('error', (err) => done(0, String(err)))

http.createServer((req, res) => {
  ask('/api/Balance?accountID=7', (status, body) => {
    const shown = status === 200 ? JSON.parse(body).amount : `backend said ${status}: ${body}`
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(`<p>Balance: <output id="balance">${shown}</output></p>`)
  })
}).listen(8124, '127.0.0.1', () => console.log('tinybank on http://127.0.0.1:8124'))
"""
PACKAGE = '{"name": "tinybank", "version": "0.1.0", "private": true}\n'
LOCK = ('{"name": "tinybank", "version": "0.1.0", "lockfileVersion": 3, "requires": true, '
        '"packages": {"": {"name": "tinybank", "version": "0.1.0"}}}\n')  # fmt: skip
TEST = '''"""The balance page, in Chromium."""


def test_balance_is_shown(page, app_url):
    page.goto(app_url)
    assert page.text_content("#balance") == "$42.00"
'''
TEST_ID = "e2e/test_balance.py::test_balance_is_shown"


def _task(tmp_path: Path) -> Task:
    repo = GitRepo(tmp_path / "repos" / "swebounty__tinybank")
    files: dict[str, str | None] = {"server.js": SERVER, "package.json": PACKAGE,
                                    "package-lock.json": LOCK, ".nvmrc": "20\n"}  # fmt: skip
    start = repo.commit("tinybank", files, "2025-04-07T09:00:00+00:00")
    fix = {**replace(repo, "server.js", "JSON.parse(body).amount", "JSON.parse(body).balance"),
           "e2e/test_balance.py": TEST}  # fmt: skip
    fixed = repo.commit("Show the balance the backend answers", fix, "2025-04-14T09:00:00+00:00")
    # As SWE-Lancer ships it: the fixed commit, and a patch putting the bug back (and taking
    # the hidden test out, which the task's test patch brings back).
    setup = repo.git("diff", "--no-ext-diff", fixed, start) + "\n"
    test_patch = repo.git("diff", "--no-ext-diff", start, fixed, "--", "e2e") + "\n"
    flows = tmp_path / "data" / "flow.mitm"
    flows.parent.mkdir()
    flows.write_bytes(flow("GET", "www.expensify.com", "/api/Balance?accountID=7", 200,
                           b'{"balance": "$42.00"}', content_type="application/json"))  # fmt: skip
    return Task(
        instance_id="tinybank-1", repo="swebounty/tinybank", base_commit=fixed,
        setup_patch=setup, patch=reverse_patch(setup), test_patch=test_patch,
        FAIL_TO_PASS=[TEST_ID], ecosystem="node", test_kind="e2e",
        env_spec={"app_cmd": ["node", "server.js"], "app_port": 8124},
        requires={"services": ["mitmproxy-replay"], "browser": True,
                  "service_data": {"mitmproxy-replay": [str(flows)]}},
    )  # fmt: skip


@pytest.mark.sandbox
@pytest.mark.network
@pytest.mark.browser
@pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
@pytest.mark.skipif(NO_BROWSER is not None, reason=f"no browser: {NO_BROWSER}")
def test_a_web_task_is_graded_with_its_backend_replayed(tmp_path: Path) -> None:
    task = _task(tmp_path)
    assert "amount" in task.setup_patch and "balance" in task.patch
    ctx = EvalContext.create(cache_dir=tmp_path / "cache", runs_dir=tmp_path / "runs",
                             repos_dir=tmp_path / "repos")  # fmt: skip
    subs = {
        "gold": Submission(instance_id=task.instance_id, model_patch=task.patch),
        "empty": Submission(instance_id=task.instance_id, model_patch=""),
        "unrecorded": Submission(instance_id=task.instance_id, model_patch=_unrecorded(task)),
    }
    verdicts = {}
    with Store.open(tmp_path / "runs" / "runs.sqlite") as store:
        for name, sub in subs.items():
            (verdicts[name],) = evaluate_run(name, [(task, sub)], ctx, store)
    gold, empty, unrecorded = verdicts["gold"], verdicts["empty"], verdicts["unrecorded"]
    assert gold.status == "resolved", gold.reason
    (use,) = gold.services
    assert (use.name, use.unanswered, use.data) == ("mitmproxy-replay", [], task.requires
                                                     .service_data["mitmproxy-replay"])  # fmt: skip
    assert use.env == {"REPLAY_URL": "http://127.0.0.1:47090"}
    assert empty.status == "unresolved" and [t.test_id for t in empty.tests] == [TEST_ID]
    assert empty.services[0].unanswered == []  # the bug, not the recording
    # Not recorded: answered at once with a 502 that names it; the test fails, no time-out.
    assert unrecorded.status == "unresolved", unrecorded.reason
    assert unrecorded.services[0].unanswered == ["GET 127.0.0.1/api/GetBalance?accountID=7"]
    assert "no recorded answer for GET 127.0.0.1/api/GetBalance?accountID=7" in unrecorded.reason
    log = Path(unrecorded.log_dir or "") / "service-mitmproxy-replay.log"
    assert "swebounty-replay-miss: GET 127.0.0.1/api/GetBalance?accountID=7" in log.read_text()


def _unrecorded(task: Task) -> str:
    """The reference fix, also asking the backend for an answer the recording lacks (a context
    line of its hunk made a change: the hunk's line counts stay)."""
    old = "   ask('/api/Balance?accountID=7', (status, body) => {\n"
    new = ("-  ask('/api/Balance?accountID=7', (status, body) => {\n"
           "+  ask('/api/GetBalance?accountID=7', (status, body) => {\n")  # fmt: skip
    assert old in task.patch, task.patch
    return task.patch.replace(old, new)
