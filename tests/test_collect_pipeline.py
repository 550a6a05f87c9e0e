"""collect end to end on a small real repo: git-only and API mode against a recorded GitHub."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from collect_api import fake_github, rate_limited, widget_api
from collect_helpers import WidgetRepo, build_widget_repo
from swebounty.cli.collect import register
from swebounty.collect.github import GitHubAuthError, GitHubClient
from swebounty.collect.mining import GitError
from swebounty.collect.pipeline import CollectOptions, collect
from swebounty.collect.repolist import RepoSource, parse_repo_arg
from swebounty.tasks import load_tasks

SINCE = datetime(2024, 3, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def widget(tmp_path_factory: pytest.TempPathFactory) -> WidgetRepo:
    return build_widget_repo(tmp_path_factory.mktemp("widget"))


def _rejects(path: Path) -> dict[str, tuple[str, str]]:
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        out[r["instance_id"]] = (r["stage"], r["reason"])
    return out


def test_git_only_collects_the_expected_candidates(widget: WidgetRepo, tmp_path: Path) -> None:
    out = tmp_path / "candidates.jsonl"
    summary = collect([parse_repo_arg(str(widget.path))], CollectOptions(since=SINCE), out)
    tasks, errors = load_tasks(out)
    assert errors == []
    ids = [t.instance_id for t in tasks]
    direct = "acme__widget-" + widget.shas["direct"][:10]
    assert ids == [f"acme__widget-{n}" for n in (1, 2, 5)] + [direct] + [
        f"acme__widget-{n}" for n in (7, 8, 12, 13)
    ]
    rejects = _rejects(tmp_path / "candidates.rejects.jsonl")
    assert {k: v[0] for k, v in rejects.items()} == {
        "acme__widget-3": "split",
        "acme__widget-4": "split",
        "acme__widget-6": "filter:leak",
        "acme__widget-9": "freshness",
        "acme__widget-10": "filter:error_message_only",
    }
    assert rejects["acme__widget-3"][1] == "no test change"
    assert rejects["acme__widget-4"][1] == "no code change (only tests, docs or packaging)"
    assert summary.candidates == 8 and summary.fixes == 13
    by_id = {t.instance_id: t for t in tasks}
    pr1 = by_id["acme__widget-1"]
    extra = pr1.model_extra or {}
    assert pr1.base_commit == widget.shas["c0"]
    assert extra["problem_source"] == "commit" and extra["fix_kind"] == "merge"
    assert extra["issue_numbers"] == [10]
    assert "negative" in pr1.problem_statement
    assert "tests/test_core.py" in pr1.test_patch and "tests/" not in pr1.patch
    assert "widget/__init__.py" in pr1.patch
    assert pr1.value_source == "estimate" and pr1.value_usd and pr1.value_usd > 0
    assert pr1.created_at == datetime(2024, 3, 5, 10, tzinfo=timezone.utc)
    assert pr1.repo_url == str(widget.path)
    assert (by_id[direct].model_extra or {})["fix_kind"] == "commit"
    summary_file = json.loads((tmp_path / "candidates.summary.json").read_text())
    assert summary_file["candidates"] == 8


def test_a_rerun_resumes_and_fresh_starts_over(widget: WidgetRepo, tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    source = [parse_repo_arg(str(widget.path))]
    collect(
        source, CollectOptions(since=SINCE, until=datetime(2024, 3, 15, tzinfo=timezone.utc)), out
    )
    first = out.read_text()
    # A wider window keeps what was decided and adds the rest.
    wider = collect(source, CollectOptions(since=SINCE), out)
    assert wider.resumed == 4 and wider.candidates == 6
    assert out.read_text().startswith(first) and len(load_tasks(out)[0]) == 8
    again = collect(source, CollectOptions(since=SINCE), out)
    assert again.resumed == 13 and again.candidates == 0
    redo = collect(source, CollectOptions(since=SINCE), out, fresh=True)
    assert redo.resumed == 0 and redo.candidates == 8


def test_until_bounds_the_window(widget: WidgetRepo, tmp_path: Path) -> None:
    until = datetime(2024, 3, 15, tzinfo=timezone.utc)
    out = tmp_path / "c.jsonl"
    collect([parse_repo_arg(str(widget.path))], CollectOptions(since=SINCE, until=until), out)
    tasks, _ = load_tasks(out)
    assert [t.instance_id for t in tasks] == ["acme__widget-1", "acme__widget-2"]


def _client(url: str, cache: Path | None, waits: list[float], token: str = "good") -> GitHubClient:
    return GitHubClient([token], base_url=url, cache_dir=cache, sleep=waits.append)


def test_api_mode_links_issues_waits_out_a_rate_limit_and_reruns_from_cache(
    widget: WidgetRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = RepoSource(widget.path, "acme/widget", api=True)
    with fake_github() as gh:
        widget_api(gh, widget)
        gh.once["/repos/acme/widget/issues/14"] = [rate_limited(reset_in=2)]
        waits: list[float] = []
        client = _client(gh.url, tmp_path / "cache", waits)
        out = tmp_path / "api.jsonl"
        with caplog.at_level(logging.WARNING):
            collect([source], CollectOptions(since=SINCE), out, client=client)
        assert len(waits) == 1 and 0 < waits[0] <= 4
        assert "waiting" in caplog.text
        assert "/repos/acme/widget/pulls?page=3" not in [r.path for r in gh.requests]
        assert "/repos/acme/widget/issues/14" in gh.paths()
        tasks, _ = load_tasks(out)
        assert [t.instance_id for t in tasks] == [
            "acme__widget-7",
            "acme__widget-2",
            "acme__widget-1",
        ]
        rejects = _rejects(tmp_path / "api.rejects.jsonl")
        assert {k: v[0] for k, v in rejects.items()} == {
            "acme__widget-10": "filter:error_message_only",
            "acme__widget-8": "freshness",
            "acme__widget-6": "filter:leak",
            "acme__widget-5": "link",
            "acme__widget-12": "link",
            "acme__widget-13": "link",
            "acme__widget-4": "split",
            "acme__widget-3": "split",
        }
        assert "issue opened 2023-11-01" in rejects["acme__widget-8"][1]
        assert "/repos/acme/widget/issues/12" in gh.paths()  # looked up, found to be a PR
        pr1 = {t.instance_id: t for t in tasks}["acme__widget-1"]
        extra = pr1.model_extra or {}
        assert pr1.problem_statement.startswith("add() is wrong for negative numbers\n")
        assert extra["problem_source"] == "issue" and extra["issue_numbers"] == [10]
        assert extra["issue_created_at"].startswith("2024-03-02")
        assert "I can reproduce" in pr1.hints_text and "thanks" not in pr1.hints_text
        assert pr1.value_usd == 250.0 and pr1.value_source == "bounty"
        assert extra["labels"] == ["bug"] and extra["num_comments"] == 3
        assert pr1.created_at == datetime(2024, 3, 5, 9, tzinfo=timezone.utc)
        first_run = out.read_text()

        # The same run again: every answer comes back 304 from the cache, and nothing changes.
        again = _client(gh.url, tmp_path / "cache", waits)
        out2 = tmp_path / "api2.jsonl"
        collect([source], CollectOptions(since=SINCE), out2, client=again)
        assert again.stats.requests > 0
        assert again.stats.not_modified == again.stats.requests
        assert out2.read_text() == first_run


def test_a_refused_token_mid_run_keeps_what_was_collected(
    widget: WidgetRepo, tmp_path: Path
) -> None:
    source = RepoSource(widget.path, "acme/widget", api=True)
    out = tmp_path / "api.jsonl"
    with fake_github() as gh:
        widget_api(gh, widget)
        # page 1, issue 16 and its comments are answered; then the token is revoked.
        gh.refuse_after = 3
        with pytest.raises(GitHubAuthError, match="refused the token"):
            collect([source], CollectOptions(since=SINCE), out, client=_client(gh.url, None, []))
        assert not out.exists()
        partial = _rejects(tmp_path / "api.rejects.jsonl.partial")
        assert list(partial) == ["acme__widget-13", "acme__widget-12", "acme__widget-10"]

        gh.refuse_after = None
        summary = collect(
            [source], CollectOptions(since=SINCE), out, client=_client(gh.url, None, [])
        )
        assert summary.resumed == 3
        tasks, _ = load_tasks(out)
        assert len(tasks) == 3
        rejects = (tmp_path / "api.rejects.jsonl").read_text().splitlines()
        assert len(rejects) == 8  # acme__widget-10 once, not twice
        assert not (tmp_path / "api.jsonl.partial").exists()


def test_unlinked_prs_can_be_kept_with_their_own_text(widget: WidgetRepo, tmp_path: Path) -> None:
    with fake_github() as gh:
        widget_api(gh, widget)
        out = tmp_path / "u.jsonl"
        collect(
            [RepoSource(widget.path, "acme/widget", api=True)],
            CollectOptions(since=SINCE, allow_unlinked=True),
            out,
            client=_client(gh.url, None, []),
        )
    tasks = {t.instance_id: t for t in load_tasks(out)[0]}
    t5 = tasks["acme__widget-5"]
    assert (t5.model_extra or {})["problem_source"] == "commit"
    assert t5.problem_statement.startswith("Respect the upper bound in clamp()")


def test_repo_arguments(widget: WidgetRepo, tmp_path: Path) -> None:
    assert parse_repo_arg(str(widget.path)) == RepoSource(widget.path.resolve())
    assert parse_repo_arg("acme/widget", widget.path) == RepoSource(
        widget.path.resolve(), "acme/widget", api=True
    )
    assert parse_repo_arg(f"acme/widget={widget.path}").api
    named = parse_repo_arg(f"acme/widget={widget.path}", git_only=True)
    assert named.repo == "acme/widget" and not named.api
    with pytest.raises(ValueError, match="--repo-path"):
        parse_repo_arg("acme/widget")
    (tmp_path / "plain").mkdir()
    with pytest.raises(GitError, match="not a git repository"):
        parse_repo_arg(str(tmp_path / "plain"))
    with pytest.raises(GitError, match="does not exist"):
        parse_repo_arg(str(tmp_path / "nowhere"))


# ---------------------------------------------------------------------------- CLI, bad input


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def test_cli_collects_and_reports(cli: typer.Typer, widget: WidgetRepo, tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    result = CliRunner().invoke(
        cli, ["collect", str(widget.path), "--since", "2024-03-01", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert len(load_tasks(out)[0]) == 8


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "last tuesday"], "is not a date"),
        (["--since", "2024-03-01", "--until", "2024-02-01"], "--until must be after"),
        (["--since", "2024-03-01", "--no-filter", "nope"], "unknown filter"),
    ],
)
def test_cli_rejects_bad_options(
    cli: typer.Typer, widget: WidgetRepo, tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "c.jsonl"
    result = CliRunner().invoke(cli, ["collect", str(widget.path), *args, "-o", str(out)])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not out.exists()


def test_cli_not_a_repo(cli: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["collect", str(tmp_path), "--since", "2024-03-01"])
    assert result.exit_code == 2
    assert "not a git repository" in " ".join(result.output.split())


def test_cli_refused_token_is_a_clear_error(
    cli: typer.Typer, widget: WidgetRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "c.jsonl"
    with fake_github() as gh:
        widget_api(gh, widget)
        gh.refuse_tokens.add("revoked")
        monkeypatch.setenv("GITHUB_TOKEN", "revoked")
        monkeypatch.delenv("GITHUB_TOKENS", raising=False)
        monkeypatch.setenv("GITHUB_API_URL", gh.url)
        result = CliRunner().invoke(
            cli,
            ["collect", "acme/widget", "--repo-path", str(widget.path), "--since", "2024-03-01",
             "-o", str(out), "--cache-dir", str(tmp_path / "cache")],
        )  # fmt: skip
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "refused the token" in text and "re-run" in text
