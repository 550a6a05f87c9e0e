"""API mode: the merged pull requests of a window, and the issues each one closes.

The clone gives each PR's fix (mining.py); GitHub gives what a clone lacks: when the PR was
opened, the issues it closes (their text is the problem statement), the comments made before
the fix was started (hints), labels and bounties.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from swebounty.collect.github import GitHubClient
from swebounty.collect.mining import Fix, fix_for_commit, linked_issues


class Reject(Exception):
    """A fix that is not a candidate: the stage that dropped it and why."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


def _iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)


def api_fixes(
    clone: Path, repo: str, since: datetime, until: datetime | None, client: GitHubClient
) -> Iterator[tuple[Fix, dict[str, Any] | None]]:
    """Merged PRs created in the window, newest first, joined with the local clone."""
    params = {"state": "closed", "sort": "created", "direction": "desc"}
    for pr in client.paginate(f"/repos/{repo}/pulls", params):
        created = _iso(pr["created_at"])
        if created < since:
            break  # sorted by creation: everything further is older
        if until is not None and created >= until:
            continue
        if not pr.get("merged_at") or not pr.get("merge_commit_sha"):
            continue  # closed without merging: not a fix
        sha = pr["merge_commit_sha"]
        fix = fix_for_commit(clone, repo, sha, pr_number=pr["number"])
        if fix is not None and fix.kind == "commit":
            # Neither a merge nor a "(#N)" squash: perhaps rebase-merged; the PR says how many
            # commits it had (the list endpoint does not).
            full = client.get_json(f"/repos/{repo}/pulls/{pr['number']}") or {}
            n = int(full.get("commits") or 1)
            if n > 1:
                fix = fix_for_commit(clone, repo, sha, pr_number=pr["number"], n_commits=n)
        if fix is None:
            stub = Fix(repo, clone, "merge", "", sha, "", created, _iso(pr["merged_at"]),
                       pr["number"])  # fmt: skip
            yield stub, pr
            continue
        fix.created_at = created
        fix.merged_at = _iso(pr["merged_at"])
        yield fix, pr


def link_issues(
    fix: Fix,
    pr: dict[str, Any],
    extra: dict[str, Any],
    client: GitHubClient,
    *,
    since: datetime,
    allow_unlinked: bool,
    max_hint_chars: int,
) -> tuple[str, str]:
    """(problem statement, hints) from the issues the PR closes; fills `extra` in place."""
    repo = fix.repo
    pr_text = f"{pr.get('title') or ''}\n{pr.get('body') or ''}"
    numbers = linked_issues(pr_text + "\n" + fix.message, repo)
    issues = []
    for n in numbers:
        issue = client.get_json(f"/repos/{repo}/issues/{n}")
        if issue is None or issue.get("pull_request"):
            continue  # deleted, or a reference to another PR rather than an issue
        issues.append(issue)
    labels = [lb["name"] for lb in pr.get("labels") or []]
    extra["issue_numbers"] = [i["number"] for i in issues]
    if not issues:
        if not allow_unlinked:
            raise Reject("link", "no linked issue (closing keyword) found in the PR")
        extra["labels"] = labels
        return pr_text.strip(), ""
    opened = min(_iso(i["created_at"]) for i in issues)
    extra["issue_created_at"] = opened.isoformat()
    extra["problem_source"] = "issue"
    if opened < since:
        raise Reject("freshness", f"issue opened {opened:%Y-%m-%d}, before --since")
    hints: list[str] = []
    bounty_comments: list[dict[str, Any]] = []
    count = 0
    for issue in issues:
        labels += [lb["name"] for lb in issue.get("labels") or []]
        for c in client.paginate(f"/repos/{repo}/issues/{issue['number']}/comments"):
            count += 1
            body = c.get("body") or ""
            # Hints are what was known before the fix was started, as in SWE-bench.
            if _iso(c["created_at"]) < fix.created_at:
                hints.append(body)
            if "bount" in body.lower():
                author = (c.get("user") or {}).get("login", "")
                bounty_comments.append({"author": author, "body": body[:2000]})
    extra.update(labels=sorted(set(labels)), num_comments=count, bounty_comments=bounty_comments)
    statement = "\n\n".join(f"{i['title']}\n{i.get('body') or ''}".strip() for i in issues)
    return statement, "\n".join(hints)[:max_hint_chars]
