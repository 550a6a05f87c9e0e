"""What a task requires beyond what swebounty builds is checked before any work: each lack is
named, and the evaluation or the attempt is an error (the machine's), never the model's fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_helpers import needs_bwrap
from swebounty.cli import app
from swebounty.needs import cannot_run, missing
from swebounty.store import Store
from swebounty.tasks import Requirements, Task
from swelancer_helpers import IC_COMMIT, OLD_HEADER, SETUP, TEST, folder, ic_row, write_csv


def _task(**requires: object) -> Task:
    return Task(instance_id="t-1", repo="owner/big", base_commit="c" * 40,
                requires=Requirements.model_validate(requires))  # fmt: skip


def test_each_lack_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flows = tmp_path / "flow.mitm"
    flows.write_bytes(b"recorded")
    task = _task(local_clone="2 GB: git clone URL", files=[str(flows), str(tmp_path / "gone"),
                 "relative/flow.mitm"], programs=["sh", "no-such-program-i9"],
                 services=["httpbin", "no-such-service"], browser=True)  # fmt: skip
    monkeypatch.setattr("swebounty.report.browser.browser_missing", lambda: "no Chromium found")
    lacks = missing(task, repos_dir=tmp_path, cache_dir=tmp_path / "cache")
    assert lacks == [
        f"a clone of owner/big (2 GB: git clone URL; put it at {tmp_path}/owner__big)",
        f"the file {tmp_path / 'gone'} (the task's data: take it with the dataset)",
        "the file relative/flow.mitm (the task's data: take it with the dataset)",
        "the program no-such-program-i9 on PATH",
        "the service no-such-service (not in swebounty's service catalog)",
        "a browser: no Chromium found",
    ]
    assert cannot_run(lacks[:1]).startswith("cannot run on this machine; it lacks a clone")
    # A clone where --repos-dir says, or in the cache, is enough; nothing declared, nothing more.
    clone = tmp_path / "owner__big"
    for sub in ("objects", "refs"):
        (clone / sub).mkdir(parents=True)
    (clone / "HEAD").write_text("ref: refs/heads/main\n")
    assert missing(_task(local_clone="x"), repos_dir=tmp_path, cache_dir=tmp_path) == []
    assert missing(Task(instance_id="t", repo="o/r", base_commit="c"), repos_dir=None,
                   cache_dir=tmp_path) == []  # fmt: skip


def test_a_service_that_reads_the_tasks_files_needs_them(tmp_path: Path) -> None:
    flows = tmp_path / "flow.mitm"
    flows.write_bytes(b"recorded")
    replay = "mitmproxy-replay"  # the catalog's replaying backend: it reads recorded flows
    assert missing(_task(services=[replay], service_data={replay: [str(flows)]}),
                   repos_dir=None, cache_dir=tmp_path) == []  # fmt: skip
    lacks = missing(_task(services=[replay]), repos_dir=None, cache_dir=tmp_path)
    assert lacks == [f"the files the service {replay} reads (the task gives none in "
                     "requires.service_data)"]  # fmt: skip
    task = _task(services=[replay, "httpbin"],
                 service_data={replay: [str(tmp_path / "gone.mitm")], "other": [str(flows)]})  # fmt: skip
    assert missing(task, repos_dir=None, cache_dir=tmp_path) == [
        f"the file {tmp_path / 'gone.mitm'} the service {replay} reads (take it with the dataset)",
        "the service other its requires.service_data names (it is not among requires.services)",
    ]
    assert task.requires is not None
    assert task.requires.data_files == [str(tmp_path / "gone.mitm"), str(flows)]  # hidden data


@needs_bwrap
def test_swelancer_ic_tasks_say_what_this_machine_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no nginx, no pusher-fake, whatever is here
    folder(tmp_path, "14294", commit_id__txt=IC_COMMIT, bug_reintroduce__patch=SETUP,
           test__py=TEST, revert_command__txt="")  # fmt: skip
    dataset = write_csv(tmp_path / "swelancer_tasks_lite.csv", OLD_HEADER, [ic_row("14294", [])])
    runs = tmp_path / "runs"
    common = ["--cache-dir", str(tmp_path / "cache"), "--runs-dir", str(runs),
              "--repos-dir", str(tmp_path)]  # fmt: skip
    for agent in (["--agent", "gold"], ["--agent", "command", "--command", "true"]):
        result = CliRunner().invoke(app, ["run", str(dataset), *agent, "--run-id", agent[1],
                                          *common], catch_exceptions=False)  # fmt: skip
        assert result.exit_code == 0, result.output
    with Store.open(runs / "runs.sqlite") as store:
        [gold] = store.verdicts("gold")
        [command] = store.verdicts("command")
        [attempt] = store.attempts("command")
    for verdict in (gold, command):
        assert verdict.status == "error"
        for lack in ("a clone of Expensify/App", "/issues/14294/flow.mitm", "nginx",
                     "pusher-fake", "mitmproxy-replay"):  # fmt: skip
            assert lack in verdict.reason, verdict.reason
    assert attempt.status == "infra_error" and attempt.seconds < 5  # refused before any work
    report = json.loads((runs / "gold" / "report.json").read_text())
    assert report["error_ids"] == ["14294"]


def test_an_agent_may_not_mount_a_task_folder(tmp_path: Path) -> None:
    folder(tmp_path, "14294", commit_id__txt=IC_COMMIT, bug_reintroduce__patch=SETUP,
           test__py=TEST, revert_command__txt="")  # fmt: skip
    data = tmp_path / "data"
    data.mkdir()
    dataset = write_csv(data / "swelancer_tasks.csv", OLD_HEADER, [ic_row("14294", [])])
    (tmp_path / "issues").rename(data / "issues")
    result = CliRunner().invoke(app, ["run", str(dataset), "--agent", "command", "--command",
                                      "true", "--mount", str(data / "issues" / "14294"),
                                      "--runs-dir", str(tmp_path / "runs"),
                                      "--cache-dir", str(tmp_path / "cache")])  # fmt: skip
    assert result.exit_code != 0 and "would show the agent" in result.output
