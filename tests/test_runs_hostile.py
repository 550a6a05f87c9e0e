"""End to end: hostile submissions (a library that phones home, writes outside its
workspace, hangs) get accurate verdicts, and the run goes on.
"""

from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path

import pytest

from agent_helpers import Demo
from swebounty.store import Store
from test_runs import _eval, needs_bwrap


@pytest.fixture(scope="module")
def cache_dir(shared_demo: Demo) -> Path:
    # The demo's cache of the agent tests: its environment is built once and shared, as in
    # real use (nothing here checks what a cache holds).
    return shared_demo.cache


# ------------------------------------------------------------------ hostile submissions

_ATTACK = """
import os as _os, socket as _socket
def _attack():
    # Runs when the tests import the library: the submission's code at test time.
    try:
        _socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"escaped")
    except OSError:
        pass
    try:
        with open({marker!r}, "w") as fh:
            fh.write("escaped")
    except OSError:
        pass
    {extra}
_attack()
"""


def _hostile_patch(task_patch: str, mirror: Path, base: str, tmp: Path, code: str) -> str:
    """The gold patch plus `code` appended to the library's __init__.py."""
    from swebounty.patches import apply_patch
    from swebounty.repos import git, make_workspace

    ws = make_workspace(mirror, base, tmp / f"hostile-{uuid.uuid4().hex[:6]}")
    apply_patch(ws, task_patch)
    init = ws / "tinytext" / "__init__.py"
    init.write_text(init.read_text() + code)
    git(ws, "add", "-A")  # the gold patch may create files
    return git(ws, "diff", "--cached", "HEAD").stdout.decode()


@pytest.mark.sandbox
@pytest.mark.network
@needs_bwrap
def test_hostile_patches_get_accurate_verdicts_and_the_run_goes_on(
    cache_dir: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from swebounty.demo import build_demo

    mirror, tasks = build_demo(cache_dir / "demo")
    listener = socket.socket()
    request.addfinalizer(listener.close)  # closed even when an assertion fails first
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o777)
    outside.chmod(0o777)  # writable by anyone: only the sandbox can stop the write
    marker = outside / "escaped.txt"

    def attack(extra: str) -> str:
        return _ATTACK.format(port=port, marker=str(marker), extra=extra)

    preds = [
        # the right fix, plus network and file-system escapes: resolved, and nothing escaped
        (tasks[0], attack("pass")),
        # hangs at import: the timeout kills it; the unpatched base runs clean, so it is the
        # submission's failure (unresolved, hangs_tests), not an error every score leaves out
        (tasks[1], attack("import time\n    while True: time.sleep(1)")),
        # fork bomb at import, bounded by the process limit and the timeout
        (tasks[2], attack("while True:\n        try: _os.fork()\n        except OSError: pass")),
    ]
    lines = [
        json.dumps(
            {
                "instance_id": task.instance_id,
                "model_name_or_path": "hostile",
                "model_patch": _hostile_patch(task.patch, mirror, task.base_commit, tmp_path, code),
            }
        )
        for task, code in preds
    ]
    lines.append(json.dumps({"instance_id": tasks[3].instance_id, "model_patch": tasks[3].patch}))
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n")

    runs = tmp_path / "runs"
    _eval(cache_dir, runs, "--demo", "-p", str(path), "--run-id", "h", "--timeout", "8")
    with Store.open(runs / "runs.sqlite") as store:
        verdicts = {v.instance_id: v for v in store.verdicts("h")}
    assert verdicts[tasks[0].instance_id].status == "resolved"
    assert verdicts[tasks[1].instance_id].status == "unresolved"
    assert "timed out" in verdicts[tasks[1].instance_id].reason
    assert "base runs the same tests cleanly" in verdicts[tasks[1].instance_id].reason
    assert "hangs_tests" in verdicts[tasks[1].instance_id].hack_flags
    assert "hangs_tests" not in verdicts[tasks[0].instance_id].hack_flags
    assert verdicts[tasks[2].instance_id].status == "unresolved"
    assert verdicts[tasks[3].instance_id].status == "resolved"  # the run went on
    assert not marker.exists()
    with pytest.raises(TimeoutError):
        listener.accept()
