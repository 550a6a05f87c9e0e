"""The sandbox holds for Node tasks: tests and browser reach only their own loopback, and
nothing they write lands outside the workspace.

The probes run as the hidden tests of tasks built on the bundled demos (so they run exactly
where a submission's code runs), and the host checks afterwards that nothing got through.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from swebounty.demo import build_demo
from swebounty.evalcontext import EvalContext
from swebounty.report.browser import browser_missing
from swebounty.runs import evaluate_one
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
NO_BROWSER = browser_missing()
pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.network,  # the demos' Node environments come from npm's registry once
    pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}"),
]


@pytest.fixture()
def host_listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP server on the host's loopback that records every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    seen: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except OSError:
                continue
            seen.append(str(addr))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], seen
    stop.set()
    thread.join()
    server.close()


def _add_file(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}")  # fmt: skip


def _every_probe_passed(verdict: Verdict) -> None:
    """A probe is a task whose tests pass with no change: the empty submission that runs it
    is never resolved, and reported as a task defect (grading.empty_never_resolves)."""
    assert verdict.tests and all(t.status == "passed" for t in verdict.tests), verdict.tests
    assert verdict.status == "unresolved" and verdict.task_defect, verdict.reason


def test_node_tests_reach_only_their_own_loopback_and_write_only_the_workspace(
    tmp_path: Path, host_listener: tuple[int, list[str]]
) -> None:
    port, seen = host_listener
    cache = tmp_path / "cache"
    mirror, (demo, _) = build_demo(cache / "demo", "js")
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)  # only the sandbox may stop a write here
    targets = [str(outside / "planted"), str(mirror / "planted"), str(Path.home() / "planted")]
    probe = f"""'use strict'
const assert = require('assert')
const fs = require('fs')
const net = require('net')
const dns = require('dns')
const path = require('path')

function connect (port, host) {{
  return new Promise(resolve => {{
    const s = net.connect({{ port, host, timeout: 3000 }})
    s.on('connect', () => {{ s.destroy(); resolve('connected') }})
    s.on('error', e => resolve(e.code))
    s.on('timeout', () => {{ s.destroy(); resolve('timeout') }})
  }})
}}

describe('sandbox', function () {{
  this.timeout(20000)
  it('cannot reach a listener on the host loopback', async function () {{
    assert.notStrictEqual(await connect({port}, '127.0.0.1'), 'connected')
  }})
  it('cannot resolve or reach the registry', async function () {{
    const found = await new Promise(r => dns.lookup('registry.npmjs.org', e => r(e ? e.code : 'resolved')))
    assert.notStrictEqual(found, 'resolved')
    assert.notStrictEqual(await connect(443, '104.16.0.34'), 'connected')
  }})
  it('reaches its own loopback', async function () {{
    const server = net.createServer(c => c.end()).listen(0, '127.0.0.1')
    await new Promise(r => server.on('listening', r))
    assert.strictEqual(await connect(server.address().port, '127.0.0.1'), 'connected')
    server.close()
  }})
  it('cannot write into the shared node_modules', function () {{
    const target = path.join(fs.realpathSync('node_modules'), 'planted.js')
    assert.throws(() => fs.writeFileSync(target, 'x'))
  }})
  it('writes elsewhere land nowhere the host keeps', function () {{
    for (const target of {json.dumps(targets)}) {{
      try {{ fs.mkdirSync(path.dirname(target), {{ recursive: true }}); fs.writeFileSync(target, 'x') }} catch (e) {{}}
    }}
  }})
}})
"""
    ids = ["cannot reach a listener on the host loopback", "cannot resolve or reach the registry",
           "reaches its own loopback", "cannot write into the shared node_modules",
           "writes elsewhere land nowhere the host keeps"]  # fmt: skip
    task = Task(
        instance_id="node-sandbox-probe",
        repo=demo.repo,
        base_commit=demo.base_commit,
        test_patch=_add_file("test/sandbox.test.js", probe),
        FAIL_TO_PASS=[f"test/sandbox.test.js:sandbox {i}" for i in ids],
        ecosystem="node",
    )
    ctx = EvalContext.create(cache_dir=cache, runs_dir=tmp_path / "runs", repos_dir=mirror.parent)
    verdict = evaluate_one(
        task, Submission(instance_id=task.instance_id), ctx, tmp_path / "runs" / "probe"
    )
    _every_probe_passed(verdict)
    assert seen == []
    for target in targets:
        assert not Path(target).exists(), target
    env_modules = next((cache / "node" / "envs").glob("node-*/node_modules"))
    assert not (env_modules / "planted.js").exists()


@pytest.mark.browser
@pytest.mark.skipif(NO_BROWSER is not None, reason=f"no browser: {NO_BROWSER}")
def test_the_browser_sees_the_app_and_nothing_else(
    tmp_path: Path, host_listener: tuple[int, list[str]]
) -> None:
    port, seen = host_listener
    cache = tmp_path / "cache"
    mirror, (demo,) = build_demo(cache / "demo", "web")
    probe = f"""import pytest


def test_app_answers(page, app_url):
    page.goto(app_url)
    assert page.text_content("h1") == "Counter"


def test_host_loopback_is_out_of_reach(page):
    with pytest.raises(Exception):
        page.goto("http://127.0.0.1:{port}/", timeout=5000)


def test_the_internet_is_out_of_reach(page):
    with pytest.raises(Exception):
        page.goto("https://registry.npmjs.org/", timeout=5000)
"""
    task = demo.model_copy(update={
        "instance_id": "e2e-sandbox-probe",
        "test_patch": _add_file("e2e/test_probe.py", probe),
        "FAIL_TO_PASS": [f"e2e/test_probe.py::{n}" for n in
                         ("test_app_answers", "test_host_loopback_is_out_of_reach",
                          "test_the_internet_is_out_of_reach")],
        "PASS_TO_PASS": [],
    })  # fmt: skip
    ctx = EvalContext.create(cache_dir=cache, runs_dir=tmp_path / "runs", repos_dir=mirror.parent)
    verdict = evaluate_one(
        task, Submission(instance_id=task.instance_id), ctx, tmp_path / "runs" / "probe"
    )
    _every_probe_passed(verdict)
    assert seen == []


def test_a_patch_never_brings_its_own_test_runner(tmp_path: Path) -> None:
    """A fake mocha in the patch's node_modules would report whatever it likes: it is removed,
    the environment's runner runs, and the verdict says what was put back."""
    cache = tmp_path / "cache"
    mirror, (demo, _) = build_demo(cache / "demo", "js")
    fake = "#!/usr/bin/env node\nconsole.log('FAKE MOCHA RAN')\nprocess.exit(0)\n"
    manifest = json.dumps({"name": "mocha", "version": "99.0.0", "bin": {"mocha": "bin/mocha.js"}})
    paths = ["node_modules/mocha/package.json", "node_modules/mocha/bin/mocha.js"]
    patch = _add_file(paths[0], manifest) + _add_file(paths[1], fake)
    ctx = EvalContext.create(cache_dir=cache, runs_dir=tmp_path / "runs", repos_dir=mirror.parent)
    logs = tmp_path / "runs" / "fake"
    sub = Submission(instance_id=demo.instance_id, model_patch=patch)
    verdict = evaluate_one(demo, sub, ctx, logs)
    assert verdict.status == "unresolved", verdict.reason
    assert "modifies_test_config" in verdict.hack_flags
    assert set(paths) <= set(verdict.test_infra_reverted)
    assert "FAKE MOCHA RAN" not in (logs / "test_output.txt").read_text()
