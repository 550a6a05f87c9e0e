"""A recorded GitHub API for the collect tests, served on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from collect_helpers import WidgetRepo

# ---------------------------------------------------------------------------- GitHub server

Route = tuple[int, dict[str, str], Any]


@dataclass
class Request:
    path: str
    headers: dict[str, str]


class FakeGitHub:
    """Serves recorded API answers on 127.0.0.1 with ETags, Link pagination and scripted
    one-shot answers (a 403 rate limit, a 401 refusal)."""

    def __init__(self) -> None:
        self.routes: dict[str, Any] = {}
        self.links: dict[str, str] = {}
        self.once: dict[str, list[Route]] = {}
        self.requests: list[Request] = []
        self.refuse_tokens: set[str] = set()
        self.refuse_after: int | None = None  # refuse every token after this many requests
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, headers, body = fake.answer(self.path, dict(self.headers.items()))
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def answer(self, path: str, headers: dict[str, str]) -> Route:
        with self.lock:
            self.requests.append(Request(path, headers))
            auth = headers.get("Authorization", "")
            token = auth.removeprefix("Bearer ")
            refused = token in self.refuse_tokens or (
                self.refuse_after is not None and len(self.requests) > self.refuse_after
            )
            if refused:
                return 401, {}, {"message": "Bad credentials"}
            if self.once.get(path):
                return self.once[path].pop(0)
        route = path if path in self.routes else path.split("?")[0]
        if route not in self.routes:
            return 404, {}, {"message": "Not Found"}
        body = self.routes[route]
        if isinstance(body, tuple):
            return body  # type: ignore[no-any-return]
        etag = '"' + hashlib.sha256(json.dumps(body).encode()).hexdigest()[:16] + '"'
        out = {"ETag": etag, "Content-Type": "application/json"}
        if route in self.links:
            out["Link"] = f'<{self.url}{self.links[route]}>; rel="next"'
        if headers.get("If-None-Match") == etag:
            return 304, out, None
        return 200, out, body

    def paths(self) -> list[str]:
        return [r.path.split("?")[0] for r in self.requests]

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def fake_github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        yield gh


def rate_limited(reset_in: float = 0.0) -> Route:
    return (
        403,
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time() + reset_in))},
        {"message": "API rate limit exceeded"},
    )


# ---------------------------------------------------------------------------- widget's API


def _pr(n: int, title: str, body: str, created: str, merged: str | None, sha: str | None) -> dict:
    return {
        "number": n,
        "state": "closed",
        "title": title,
        "body": body,
        "created_at": created,
        "merged_at": merged,
        "merge_commit_sha": sha,
        "labels": [],
        "user": {"login": "dev"},
        "html_url": f"https://github.com/acme/widget/pull/{n}",
    }


def _issue(n: int, title: str, body: str, created: str, labels: tuple[str, ...] = ()) -> dict:
    return {
        "number": n,
        "state": "closed",
        "title": title,
        "body": body,
        "created_at": created,
        "labels": [{"name": name} for name in labels],
        "user": {"login": "reporter"},
    }


def _comment(login: str, created: str, body: str) -> dict:
    return {"user": {"login": login}, "created_at": created, "body": body}


def widget_api(gh: FakeGitHub, w: WidgetRepo) -> None:
    """Recorded answers for acme/widget, in GitHub's shapes (the fields collect reads)."""
    s = w.shas
    base = "/repos/acme/widget"
    page1 = [
        _pr(13, "Add median()", "median([3, 1, 2]) should give 2.", "2024-03-30T09:00:00Z",
            "2024-03-30T10:00:00Z", s["pr13"]),
        _pr(12, "Simplify div()", "", "2024-03-29T09:30:00Z", "2024-03-29T10:00:00Z",
            s["pr12"]),
        _pr(11, "Try a faster mean", "", "2024-03-29T09:00:00Z", None, None),
        _pr(10, "Clearer error for the root of a negative number", "Fixes #16",
            "2024-03-27T09:00:00Z", "2024-03-28T10:00:00Z", s["pr10"]),
        _pr(8, "Double without the spare zero", "Fixes #15", "2024-03-23T09:00:00Z",
            "2024-03-24T10:00:00Z", s["pr8"]),
        _pr(7, "Make scale() multiply by its factor", "Fixes #14", "2024-03-21T09:00:00Z",
            "2024-03-22T10:00:00Z", s["pr7"]),
        _pr(6, "Accept hex in parse()", "Fixes #13", "2024-03-19T09:00:00Z",
            "2024-03-20T10:00:00Z", s["pr6"]),
    ]  # fmt: skip
    page2 = [
        _pr(5, "Respect the upper bound in clamp()", "Values above hi came back unchanged; "
            "this fixes #12 too.",
            "2024-03-15T09:00:00Z", "2024-03-16T10:00:00Z", s["pr5"]),
        _pr(4, "Add more tests for add", "", "2024-03-13T09:00:00Z", "2024-03-14T10:00:00Z",
            s["pr4"]),
        _pr(3, "Document div", "", "2024-03-11T09:00:00Z", "2024-03-12T10:00:00Z", s["pr3"]),
        _pr(2, "Return 0.0 from mean() of an empty list", "Closes #11", "2024-03-09T09:00:00Z",
            "2024-03-10T10:00:00Z", s["pr2"]),
        _pr(1, "add() returns wrong sums for negative numbers", "Fixes #10",
            "2024-03-05T09:00:00Z", "2024-03-06T10:00:00Z", s["pr1"]),
        _pr(9, "Round halves up", "Fixes #17", "2024-02-20T09:00:00Z", "2024-03-26T10:00:00Z",
            s["pr9"]),
    ]  # fmt: skip
    gh.routes[f"{base}/pulls"] = page1
    gh.links[f"{base}/pulls"] = f"{base}/pulls?page=2"
    gh.routes[f"{base}/pulls?page=2"] = page2
    gh.links[f"{base}/pulls?page=2"] = f"{base}/pulls?page=3"
    # Everything on page 3 is older than the window: it must never be asked for.
    gh.routes[f"{base}/pulls?page=3"] = (500, {}, {"message": "page 3 must not be fetched"})
    issues = [
        _issue(10, "add() is wrong for negative numbers", "add(-1, -2) returns 3, expected -3.",
               "2024-03-02T08:00:00Z", ("bug",)),
        _issue(11, "mean([]) crashes", "mean([]) raises ZeroDivisionError; 0.0 would be better.",
               "2024-03-08T08:00:00Z", ("bug",)),
        _issue(13, "parse() should accept hex", "Hex strings like 0x10 fail. I think it should "
               "just do `return int(text.strip(), base=0)`.", "2024-03-18T08:00:00Z"),
        _issue(14, "scale() adds instead of multiplying", "scale(3, 4) returns 7, not 12.",
               "2024-03-20T08:00:00Z"),
        _issue(15, "double() has a spare term", "double(x) computes x + x + 0, which breaks "
               "for lists.", "2023-11-01T08:00:00Z"),
        _issue(16, "Unhelpful error from root()", "root(-1) says only 'bad'; say what is wrong.",
               "2024-03-26T08:00:00Z"),
    ]  # fmt: skip
    for issue in issues:
        gh.routes[f"{base}/issues/{issue['number']}"] = issue
        gh.routes[f"{base}/issues/{issue['number']}/comments"] = []
    gh.routes[f"{base}/issues/10/comments"] = [
        _comment("helper", "2024-03-03T08:00:00Z", "I can reproduce: add(-1, -2) gives 3."),
        _comment("algora-pbc[bot]", "2024-03-04T08:00:00Z",
                 "## 💎 $250 bounty • acme\n### Steps to solve: open a PR with /claim #10"),
        _comment("reporter", "2024-03-07T08:00:00Z", "Fixed by #1, thanks!"),
    ]  # fmt: skip
    # "fixes #12" in PR 5 names a pull request, not an issue: it links nothing.
    gh.routes[f"{base}/issues/12"] = {**_issue(12, "Clamp tweak", "", "2024-03-14T08:00:00Z"),
                                      "pull_request": {"url": f"{base}/pulls/12"}}  # fmt: skip
