"""node/runners/channel.js and what the harness reads of it: one message signed with the run's
key, on the pipe the run inherited; a second `take()` spoils the channel; the machinery watch
names what was replaced, and so does assertions.js's watch of a realm's assertions. Run with the machine's node (no sandbox: the channel is a pipe)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from swebounty.node.runners.cases import cases_of, tampered
from swebounty.pytest_guard import ChannelTampered, new_key, read_signed

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="no node on this machine")
RUNNERS = Path(__file__).resolve().parents[1] / "src/swebounty/node/runners"
CHANNEL = RUNNERS / "channel.js"


def _run(script: str, key: bytes, tmp: Path) -> tuple[bytes, str]:
    """(what `script` sent on the channel, its stdout), `channel` bound to channel.js."""
    main = tmp / "main.js"
    main.write_text(f"const channel = require({str(CHANNEL)!r});\n{script}")
    read, write = os.pipe()
    env = {"PATH": os.environ["PATH"], "SWEBOUNTY_RESULT_FD": str(write)}
    proc = subprocess.Popen([str(NODE), str(main)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, pass_fds=[write], env=env)  # fmt: skip
    os.close(write)
    out, _ = proc.communicate(key + b"\n", timeout=60)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    return data, out.decode()


CASES = """{cases: [
  {file: '/ws/test/a.test.js', ancestors: ['a'], title: 'works', status: 'passed'},
  {file: '/ws/test/a.test.js', ancestors: ['a'], title: '"before each" hook for "x"',
   status: 'error', message: 'boom'}], errors: ['outside'], tampered: ['Runner.prototype.fail']}"""


def test_one_signed_message_and_no_key_or_fd_left_to_the_tests(tmp_path: Path) -> None:
    key = new_key()
    script = (
        "const send = channel.take();\n"
        "console.log(JSON.stringify([process.env.SWEBOUNTY_RESULT_FD || null]));\n"
        f"send({CASES});\nsend({{cases: []}});\n"  # a second send is dropped
    )
    data, out = _run(script, key, tmp_path)
    assert out.strip() == "[null]"  # its children never learn where the channel is
    doc = read_signed(data, key)
    assert doc is not None
    results = cases_of(doc, Path("/ws"))
    assert [(c.file, c.title, c.status) for c in results.cases] == [
        ("test/a.test.js", "works", "passed"),
        ("test/a.test.js", '"before each" hook for "x"', "error"),
        (None, "(error outside the tests 1)", "error"),
    ]
    assert results.file_errors == {"test/a.test.js": '"before each" hook for "x": boom'}
    assert tampered(doc) == ["Runner.prototype.fail"]
    with pytest.raises(ChannelTampered, match="not signed with this run's key"):
        read_signed(data, new_key())


def test_a_second_take_spoils_the_channel_whoever_sends(tmp_path: Path) -> None:
    key = new_key()
    for script in (
        # the code under test takes it after the reporter did, and the reporter sends
        f"const send = channel.take();\nconsole.log(channel.take());\nsend({CASES});\n",
        # the code under test takes it first and sends its own results
        f"channel.take()({CASES});\nchannel.take();\n",
    ):
        data, _ = _run(script, key, tmp_path)
        with pytest.raises(ChannelTampered):
            read_signed(data, key)


def test_the_watch_names_what_was_replaced_or_added(tmp_path: Path) -> None:
    script = (
        "const watch = channel.watch(channel.common());\n"
        "const assert = require('assert');\n"
        "assert.strictEqual = () => {};\n"
        "assert.extra = () => {};\n"
        "console.log(JSON.stringify(watch.changed()));\n"
    )
    _, out = _run(script, new_key(), tmp_path)
    assert out.strip() == '["assert.strictEqual","assert.extra"]'


def test_the_assertions_watch_names_what_was_replaced_not_what_was_added(tmp_path: Path) -> None:
    # A realm as Jest's test files see it: `expect` and its matcher registry, set up before
    # the watch; then a test's own custom matcher (fine) and the code under test's changes.
    script = (
        f"const assertions = require({str(RUNNERS / 'assertions.js')!r});\n"
        "const registry = {matchers: {toBe() {}, toEqual() {}}};\n"
        "global[Symbol.for('$$jest-matchers-object')] = registry;\n"
        "global.expect = () => {};\nglobal.expect.extend = () => {};\n"
        "const extra = {util: {eql() {}}};\n"
        "const watch = assertions.watch(global, extra);\n"
        "const ok = JSON.stringify(watch.changed());\n"
        "registry.matchers.toBeWithin = () => {};\n"
        "const added = JSON.stringify(watch.changed());\n"
        "registry.matchers.toBe = () => ({pass: true});\n"
        "delete registry.matchers.toEqual;\n"
        "Object.is = () => true;\n"
        "extra.util.eql = () => true;\n"
        "console.log(ok, added, JSON.stringify(watch.changed()));\n"
        "global.expect = () => {};\n"
        "console.log(JSON.stringify(watch.changed().slice(0, 2)));\n"
    )
    _, out = _run(script, new_key(), tmp_path)
    first, second = out.strip().splitlines()
    assert first == '[] [] ["matcher.toBe","matcher.toEqual","Object.is","util.eql"]'
    assert second == '["expect","expect.extend"]'
