"""The GitHub client against a local server: pagination, cache, rate limits, tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from collect_api import FakeGitHub, fake_github, rate_limited
from swebounty.collect.github import GitHubAuthError, GitHubClient, GitHubError


@pytest.fixture
def gh() -> FakeGitHub:
    with fake_github() as server:
        server.routes["/items"] = [1, 2]
        server.links["/items"] = "/items?page=2"
        server.routes["/items?page=2"] = [3]
        server.routes["/thing"] = {"a": 1}
        yield server


def test_pagination_follows_link_headers(gh: FakeGitHub) -> None:
    with GitHubClient(base_url=gh.url) as client:
        assert list(client.paginate("/items")) == [1, 2, 3]
        assert gh.requests[0].path == "/items?per_page=100"
        assert gh.requests[1].path == "/items?page=2"


def test_stopping_early_fetches_no_further_page(gh: FakeGitHub) -> None:
    with GitHubClient(base_url=gh.url) as client:
        for item in client.paginate("/items"):
            if item == 2:
                break
    assert len(gh.requests) == 1


def test_conditional_requests_make_a_rerun_free(gh: FakeGitHub, tmp_path: Path) -> None:
    with GitHubClient(base_url=gh.url, cache_dir=tmp_path) as first:
        assert first.get_json("/thing") == {"a": 1}
        assert list(first.paginate("/items")) == [1, 2, 3]
    with GitHubClient(base_url=gh.url, cache_dir=tmp_path) as second:
        assert second.get_json("/thing") == {"a": 1}
        assert list(second.paginate("/items")) == [1, 2, 3]
        assert second.stats.not_modified == second.stats.requests == 3
    assert "If-None-Match" in gh.requests[-1].headers
    # A changed resource is fetched again, not served stale.
    gh.routes["/thing"] = {"a": 2}
    with GitHubClient(base_url=gh.url, cache_dir=tmp_path) as third:
        assert third.get_json("/thing") == {"a": 2}
        assert third.stats.not_modified == 0


def test_a_torn_cache_entry_is_a_miss(gh: FakeGitHub, tmp_path: Path) -> None:
    with GitHubClient(base_url=gh.url, cache_dir=tmp_path) as client:
        client.get_json("/thing")
    for f in tmp_path.iterdir():
        f.write_text("{not json")
    with GitHubClient(base_url=gh.url, cache_dir=tmp_path) as client:
        assert client.get_json("/thing") == {"a": 1}


def test_rate_limit_waits_until_reset_and_logs(
    gh: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    gh.once["/thing"] = [rate_limited(reset_in=30)]
    waits: list[float] = []
    with GitHubClient(["t1"], base_url=gh.url, sleep=waits.append) as client:
        assert client.get_json("/thing") == {"a": 1}
    assert len(waits) == 1 and 25 < waits[0] <= 32
    assert "waiting" in caplog.text and "rate limit" in caplog.text


def test_secondary_limit_uses_retry_after(gh: FakeGitHub) -> None:
    gh.once["/thing"] = [(429, {"Retry-After": "7"}, {"message": "slow down"})]
    waits: list[float] = []
    with GitHubClient(base_url=gh.url, sleep=waits.append) as client:
        assert client.get_json("/thing") == {"a": 1}
    assert waits == [pytest.approx(8.0, abs=0.5)]


def test_an_exhausted_token_hands_over_to_the_next(gh: FakeGitHub) -> None:
    gh.once["/thing"] = [rate_limited(reset_in=600)]
    waits: list[float] = []
    with GitHubClient(["t1", "t2"], base_url=gh.url, sleep=waits.append) as client:
        assert client.get_json("/thing") == {"a": 1}
    assert waits == []
    tokens = [r.headers["Authorization"] for r in gh.requests]
    assert len(set(tokens)) == 2


def test_a_wait_longer_than_allowed_is_an_error(gh: FakeGitHub) -> None:
    gh.once["/thing"] = [rate_limited(reset_in=7200)]
    with (
        GitHubClient(base_url=gh.url, max_wait=60, sleep=lambda s: None) as client,
        pytest.raises(GitHubError, match="re-run later"),
    ):
        client.get_json("/thing")


def test_refused_tokens(gh: FakeGitHub) -> None:
    gh.refuse_tokens.add("bad")
    with GitHubClient(["bad", "good"], base_url=gh.url) as client:
        assert client.get_json("/thing") == {"a": 1}
        assert client.get_json("/thing") == {"a": 1}
    with (
        GitHubClient(["bad"], base_url=gh.url) as client,
        pytest.raises(GitHubAuthError, match="GITHUB_TOKEN"),
    ):
        client.get_json("/thing")


def test_not_found_is_none_and_other_errors_raise(gh: FakeGitHub) -> None:
    gh.routes["/forbidden"] = (403, {}, {"message": "Resource not accessible"})
    with GitHubClient(base_url=gh.url) as client:
        assert client.get_json("/missing") is None
        with pytest.raises(GitHubError, match="403"):
            client.get_json("/forbidden")


def test_server_errors_are_retried(gh: FakeGitHub) -> None:
    gh.once["/thing"] = [(502, {}, {"message": "bad gateway"})]
    waits: list[float] = []
    with GitHubClient(base_url=gh.url, sleep=waits.append) as client:
        assert client.get_json("/thing") == {"a": 1}
    assert waits == [2.0]


def test_unreachable_server_says_so() -> None:
    with (
        GitHubClient(base_url="http://127.0.0.1:9", sleep=lambda s: None) as client,
        pytest.raises(GitHubError, match="cannot reach"),
    ):
        client.get_json("/thing")


def test_tokens_from_env() -> None:
    client = GitHubClient.from_env({"GITHUB_TOKENS": "a, b c", "GITHUB_API_URL": "http://x"})
    assert [t.value for t in client._tokens] == ["a", "b", "c"]
    assert client.base_url == "http://x"
    client.close()
