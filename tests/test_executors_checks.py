"""The executors' checks that need no cluster: a missing Ray names its extra, executor options
are refused before anything runs, a local run never imports Ray, logs shipped from a worker
are regular files within a bound, and a cluster too small for the run says what to change.
(The same run on a Ray cluster is in test_executors.py.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swebounty.cli import app
from swebounty.evalinputs import EvalInputError
from swebounty.evaluation import evaluate
from swebounty.executors import ExecutorError
from swebounty.executors.worker import Shipped, pack_logs, unpack_logs

try:
    import ray  # noqa: F401

    RAY_WHY = ""
except ImportError:
    RAY_WHY = "the ray extra is not installed (pip install -e '.[ray]')"
runner = CliRunner()


def test_a_missing_ray_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(EvalInputError, match=r"pip install 'swebounty\[ray\]'"):
        evaluate("demo", "gold", executor="ray", cache_dir=tmp_path, runs_dir=tmp_path, unsafe=True)
    result = runner.invoke(app, ["eval", "--demo", "--gold", "--executor", "ray", "--unsafe",
                                 "--cache-dir", str(tmp_path), "--runs-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 2
    assert "--executor ray needs ray" in result.output and "swebounty[ray]" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--executor", "dask"], "choose local or ray"),
        (["--address", "10.0.0.1:6379"], "--address names a Ray cluster: add --executor ray"),
        (["--executor", "ray", "--task-cpus", "0"], "--task-cpus: Input should be greater"),
        (["--executor", "ray", "--task-memory", "-1"], "--task-memory: Input should be greater"),
    ],
)
@pytest.mark.parametrize("command", ["eval", "run", "validate"])
def test_executor_options_are_checked_before_anything_runs(
    command: str, args: list[str], message: str, tmp_path: Path
) -> None:
    target = {"eval": ["--demo", "--gold"], "run": ["--demo", "--agent", "gold"]}
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text("")
    argv = [command, *target.get(command, [str(candidates)]), *args]
    result = runner.invoke(app, [*argv, "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "c").exists()


def test_a_local_run_never_imports_ray() -> None:
    code = (
        "import sys\n"
        "import swebounty.evaluation, swebounty.executors, swebounty.cli.evaluate\n"
        "from swebounty.evaluation import _executor_config\n"
        "_executor_config('local')\n"
        "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if 'ray' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_shipped_logs_are_regular_files_only_and_bounded(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "artifacts").mkdir(parents=True)
    (src / "test_output.txt").write_text("ok\n")
    (src / "artifacts" / "shot.png").write_bytes(b"\x89PNG" + b"x" * 100)
    (src / "big.log").write_bytes(b"y" * 5000)
    (src / "secret").symlink_to("/etc/passwd")
    os.mkfifo(src / "fifo")
    files, dropped = pack_logs(src, limit=1000)
    assert set(files) == {"artifacts/shot.png", "test_output.txt"}
    assert dropped == ["big.log"]  # larger than what was left of the limit
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "test_output.txt").symlink_to(tmp_path / "victim")  # never written through
    unpack_logs(Shipped(None, "n", logs=files, dropped=dropped), dest)
    assert (dest / "test_output.txt").read_text() == "ok\n"
    assert not (dest / "test_output.txt").is_symlink() and not (tmp_path / "victim").exists()
    assert "big.log" in (dest / "logs-left-out.txt").read_text()


def test_an_unfit_cluster_is_named_with_what_to_change() -> None:
    if RAY_WHY:
        pytest.skip(RAY_WHY)
    from swebounty.executors.ray_cluster import _check_fit

    nodes = [{"node": "a", "cpus": 4.0, "memory": 3.0 * (1 << 30)}]
    _check_fit(nodes, 1, 2 << 30)
    with pytest.raises(ExecutorError, match=r"largest node offers 4 CPUs and 3\.0 GiB"):
        _check_fit(nodes, 1, 8 << 30)


def test_a_local_ray_node_slow_to_start_is_started_again() -> None:
    # Under load (CI beside other work) Ray's fixed 30 s wait for its raylet ran out and every
    # test on the cluster errored; the run should start it again, once the first try is ended.
    from swebounty.executors.ray_cluster import start_local

    calls: list[str] = []
    slow = Exception("The current node timed out during startup. This could happen because...")

    def start() -> None:
        calls.append("start")
        if calls.count("start") < 3:
            raise slow

    start_local(start, lambda: calls.append("stop"))
    assert calls == ["start", "stop", "start", "stop", "start"]

    calls.clear()
    with pytest.raises(Exception, match="timed out during startup"):
        start_local(lambda: (_ for _ in ()).throw(slow), lambda: calls.append("stop"), attempts=2)
    assert calls == ["stop"]  # tried twice, stopped between, the last error raised

    def broken() -> None:
        raise ValueError("object_store_memory is too large")

    with pytest.raises(ValueError):
        start_local(broken, lambda: calls.append("stop"))
    assert calls == ["stop"]  # any other failure is raised at once
