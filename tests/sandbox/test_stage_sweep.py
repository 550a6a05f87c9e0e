"""A stage directory is removed only when the harness that made it has died: a live run's stage
looks empty and old from the host, and a second harness must not take it from under the run."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from sandbox.helpers import World, _require_bwrap, _run
from swebounty.sandbox import BwrapSandbox, RunResult
from swebounty.sandbox._cgroups import harness_tag
from swebounty.sandbox._stage import STAGE_PREFIX, sweep_stage_dirs

LONG_AGO = time.time() - 3 * 86400


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_only_the_stages_of_dead_harnesses_are_swept(tmp_path: Path) -> None:
    namespace = harness_tag().split(".")[0]  # "h<pid namespace>"
    names = {
        "live": f"{STAGE_PREFIX}{harness_tag()}-abc",
        "dead": f"{STAGE_PREFIX}{namespace}.{_dead_pid()}-abc",
        "dead_busy": f"{STAGE_PREFIX}{namespace}.{_dead_pid()}-def",
        "other_namespace_old": f"{STAGE_PREFIX}h1.{_dead_pid()}-abc",
        "other_namespace": f"{STAGE_PREFIX}h1.{_dead_pid()}-def",
        "untagged_old": f"{STAGE_PREFIX}abc",
        "untagged_recent": f"{STAGE_PREFIX}def",
    }
    for name in names.values():
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (LONG_AGO, LONG_AGO))
    (tmp_path / names["dead_busy"] / "file").write_text("not empty")
    recent = time.time() - 3600  # older than the old 10-minute sweep age, younger than a day
    for name in ("untagged_recent", "other_namespace"):  # whose maker this harness cannot see
        os.utime(tmp_path / names[name], (recent, recent))
    (tmp_path / f"{STAGE_PREFIX}h0.1-link").symlink_to(tmp_path / names["live"])

    assert sweep_stage_dirs(tmp_path) == 3
    left = {n for n, name in names.items() if (tmp_path / name).exists()}
    assert left == {"live", "dead_busy", "other_namespace", "untagged_recent"}
    assert (tmp_path / names["live"]).is_dir()  # the link was not followed


SECOND_HARNESS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from swebounty.sandbox import BwrapSandbox, Policy
    sb = BwrapSandbox()
    sb.prepare_workdir(Path(sys.argv[1]))
    result = sb.run(["/bin/true"], workdir=Path(sys.argv[1]), mounts=[],
                    policy=Policy(timeout_s=30))
    sys.exit(result.returncode)
    """
)


@pytest.mark.sandbox
def test_a_second_harness_leaves_a_long_run_intact(world: World, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a harness running as root stages its mounts on the host")
    _require_bwrap()
    sb = BwrapSandbox()
    sb.prepare_workdir(world.ws)
    # The first harness's run waits until the second harness has come and gone.
    wait = "i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo done"
    before = set(Path(tempfile.gettempdir()).glob(f"{STAGE_PREFIX}{harness_tag()}-*"))
    results: list[RunResult] = []
    first = threading.Thread(
        target=lambda: results.append(_run(world, sb, ["/bin/sh", "-c", wait], timeout_s=60))
    )
    first.start()
    try:
        stage = None
        for _ in range(400):
            made = set(Path(tempfile.gettempdir()).glob(f"{STAGE_PREFIX}{harness_tag()}-*"))
            if made - before:
                stage = (made - before).pop()
                break
            time.sleep(0.025)
        assert stage is not None, "the first run made no stage directory"
        os.utime(stage, (LONG_AGO, LONG_AGO))  # older than any sweep age

        second_ws = tmp_path / "second"
        second_ws.mkdir()
        second = subprocess.run(
            [sys.executable, "-c", SECOND_HARNESS, str(second_ws)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert second.returncode == 0, second.stderr[-2000:]
        assert stage.is_dir(), "the second harness removed the live run's stage"
    finally:
        (world.ws / "go").write_text("")
        first.join(timeout=90)
    assert results, "the first run raised instead of returning its result"
    assert results[0].returncode == 0 and results[0].stdout.strip() == "done", results[0]
    assert not stage.exists()  # its own harness removed it when the run ended
