"""collect over many repositories: the --repos list, and one repository's failure isolated."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from collect_helpers import WidgetRepo, build_widget_repo
from swebounty.cli.collect import register
from swebounty.collect.repolist import load_repo_log, read_repo_list
from swebounty.tasks import load_tasks

runner = CliRunner()


@pytest.fixture(scope="module")
def widget(tmp_path_factory: pytest.TempPathFactory) -> WidgetRepo:
    return build_widget_repo(tmp_path_factory.mktemp("widget"))


def _cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def _empty_repo(path: Path) -> Path:
    """A git repository without a commit: `git log` fails in it."""
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_a_repo_list_names_clones_by_folder_or_path(widget: WidgetRepo, tmp_path: Path) -> None:
    clones = tmp_path / "clones"
    clones.mkdir()
    (clones / "acme__widget").symlink_to(widget.path)
    listing = tmp_path / "repos.txt"
    listing.write_text(
        "# fresh repositories\n\nacme/widget\nacme/widget  # twice: once\n"
        f"other/lib={tmp_path / 'nowhere'}\n"
    )
    lines = read_repo_list(listing, clones)
    assert [(x.repo, x.clone) for x in lines[:1]] == [("acme/widget", widget.path.resolve())]
    assert lines[1].repo == "other/lib" and lines[1].clone is None
    assert lines[1].problem and "does not exist" in lines[1].problem
    listing.write_text("acme/widget\n")
    with pytest.raises(ValueError, match="--repos-dir"):
        read_repo_list(listing)
    listing.write_text("not a slug\n")
    with pytest.raises(ValueError, match=r"repos\.txt:1"):
        read_repo_list(listing, clones)


def test_one_failing_repository_never_stops_the_others(widget: WidgetRepo, tmp_path: Path) -> None:
    clones = tmp_path / "clones"
    clones.mkdir()
    _empty_repo(clones / "other__empty")
    listing = tmp_path / "repos.txt"
    # The broken ones come first: the good one after them must still be mined.
    listing.write_text(f"other/empty\nother/missing\nacme/widget={widget.path}\n")
    out = tmp_path / "candidates.jsonl"
    args = ["collect", "--repos", str(listing), "--repos-dir", str(clones), "--git-only",
            "--since", "2024-03-01", "-o", str(out)]  # fmt: skip
    result = runner.invoke(_cli(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "2 of 3 repositories failed" in result.output
    tasks, _ = load_tasks(out)
    assert len(tasks) == 8 and {t.repo for t in tasks} == {"acme/widget"}
    log = load_repo_log(tmp_path / "candidates.repos.json")
    assert log["acme/widget"].status == "done" and log["acme/widget"].fixes == 13
    assert log["other/empty"].status == "failed" and log["other/empty"].error
    assert log["other/missing"].status == "failed"
    assert "does not exist" in (log["other/missing"].error or "")
    summary = json.loads((tmp_path / "candidates.summary.json").read_text())
    assert set(summary["failed_repos"]) == {"other/empty", "other/missing"}

    assert "it tries them again" in result.output

    # Resumed: nothing decided twice, every failed repository tried again: the one whose clone
    # has appeared since is mined, the other fails again.
    (clones / "other__missing").symlink_to(widget.path)
    again = runner.invoke(_cli(), args, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert (
        "already decided (resumed)" in again.output and "1 of 3 repositories failed" in again.output
    )
    tasks, _ = load_tasks(out)
    assert len(tasks) == 16 and {t.repo for t in tasks} == {"acme/widget", "other/missing"}
    assert len((tmp_path / "candidates.rejects.jsonl").read_text().splitlines()) == 10
    log = load_repo_log(tmp_path / "candidates.repos.json")
    assert {r: x.status for r, x in log.items()} == {
        "other/empty": "failed", "other/missing": "done", "acme/widget": "done"
    }  # fmt: skip


def test_collect_needs_some_repository(tmp_path: Path) -> None:
    result = runner.invoke(_cli(), ["collect", "--since", "2024-03-01"])
    assert result.exit_code != 0 and "--repos FILE" in result.output
    result = runner.invoke(
        _cli(), ["collect", "--since", "2024-03-01", "--repos", str(tmp_path / "none.txt")]
    )
    assert result.exit_code != 0 and "does not exist" in result.output


def test_repositories_mined_in_parallel_give_what_one_at_a_time_gives(
    widget: WidgetRepo, tmp_path: Path
) -> None:
    clones = tmp_path / "clones"
    clones.mkdir()
    _empty_repo(clones / "other__empty")
    listing = tmp_path / "repos.txt"
    listing.write_text(f"acme/widget={widget.path}\nother/empty\nacme/copy={widget.path}\n")
    outputs = {}
    for workers in ("1", "3"):
        out = tmp_path / workers / "c.jsonl"
        args = ["collect", "--repos", str(listing), "--repos-dir", str(clones), "--git-only",
                "--since", "2024-03-01", "-o", str(out), "--workers", workers]  # fmt: skip
        result = runner.invoke(_cli(), args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        log = load_repo_log(out.with_name("c.repos.json"))
        assert {r: x.status for r, x in log.items()} == {
            "acme/widget": "done", "other/empty": "failed", "acme/copy": "done"
        }  # fmt: skip
        outputs[workers] = sorted(t.instance_id for t in load_tasks(out)[0])
    # A copy of a repository under another name is not a duplicate of it: duplicates are
    # judged within a repository, so the outcome never depends on which thread came first.
    assert outputs["1"] == outputs["3"] and len(outputs["1"]) == 16
