"""From repositories to candidate tasks: mine, split, link issues, check freshness, filter, price.

Output goes through a `Sink`: one line per fix as soon as it is decided, in `<output>.partial`,
renamed into place when every repository is done. A run that stops (a refused token, a rate
limit longer than allowed, Ctrl-C) loses nothing: the next run with the same output path
resumes and skips every fix already decided.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from swebounty.collect.filters import FilterConfig, check
from swebounty.collect.gates import change_id, known_changes
from swebounty.collect.github import GitHubAuthError, GitHubClient, GitHubError
from swebounty.collect.mining import (
    Fix,
    GitError,
    fix_diff,
    fix_for_commit,
    linked_issues,
    mine_fixes,
    release_before,
    repo_slug,
)
from swebounty.collect.pricing import PricingConfig, apply_price
from swebounty.collect.repolist import RepoLog, RepoRecord, RepoSource, repo_log_path
from swebounty.collect.sink import Sink
from swebounty.collect.split import SplitRules, split_diff
from swebounty.envs.node_project import ecosystem_of
from swebounty.interruptible import as_completed
from swebounty.tasks import Task

log = logging.getLogger(__name__)


class CollectOptions(BaseModel):
    since: datetime
    until: datetime | None = None
    rules: SplitRules = Field(default_factory=SplitRules)
    filters: FilterConfig = Field(default_factory=FilterConfig)
    pricing: PricingConfig = Field(default_factory=PricingConfig)
    direct_commits: bool = Field(
        default=True, description="git-only: also mine fix-like direct commits"
    )
    allow_unlinked: bool = Field(
        default=False,
        description="API mode: keep PRs without a linked issue, stated by the PR text",
    )
    max_hint_chars: int = 10000


@dataclass
class CollectSummary:
    fixes: int = 0
    candidates: int = 0
    resumed: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    per_repo: Counter[str] = field(default_factory=Counter)
    failed_repos: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "fixes": self.fixes,
            "candidates": self.candidates,
            "resumed": self.resumed,
            "rejected": dict(self.rejected.most_common()),
            "per_repo": dict(self.per_repo),
            "failed_repos": self.failed_repos,
        }


class _Reject(Exception):
    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


def _iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)


def instance_id(repo: str, fix: Fix) -> str:
    suffix = str(fix.pr_number) if fix.pr_number is not None else fix.fix_commit[:10]
    return f"{repo.replace('/', '__')}-{suffix}"


def collect(
    sources: list[RepoSource],
    options: CollectOptions,
    output: Path,
    *,
    rejects: Path | None = None,
    client: GitHubClient | None = None,
    on_fix: Callable[[str, str], None] | None = None,
    on_repo: Callable[[str, str], None] | None = None,
    fresh: bool = False,
    workers: int = 1,
) -> CollectSummary:
    """Mine every source and write candidates to `output`; rejects (with stage and reason) to
    `rejects` (default `<output stem>.rejects.jsonl`), each repository's record to
    `<output stem>.repos.json`. `on_fix(instance_id, outcome)` is called after each fix and
    `on_repo(repo, outcome)` after each repository, for progress display. Fixes already decided
    in `output`/`rejects` (or their partial files) are skipped unless `fresh`. A repository
    that fails (a missing clone, a git error) is recorded and the others go on; only what stops
    every repository (a refused token, a rate limit longer than allowed) stops the run.
    `workers` repositories are mined at once (git-only; API mode mines one at a time)."""
    rejects = rejects or output.with_name(output.stem + ".rejects.jsonl")
    sink = Sink(output, rejects, fresh=fresh)
    summary = CollectSummary()
    if any(s.api for s in sources) and client is None:
        raise ValueError("owner/name sources need a GitHub client (API mode)")
    repo_log = RepoLog(repo_log_path(output), fresh=fresh)
    changes = known_changes(sink.partial)  # change id -> first candidate, for duplicates
    lock = threading.Lock()

    def one(source: RepoSource) -> None:
        repo = source.repo or repo_slug(source.path)
        record = RepoRecord(repo=repo, clone=None if source.problem else str(source.path))
        with lock:
            repo_log.update(record)
        start = time.monotonic()
        try:
            if source.problem:
                raise GitError(source.problem)
            _mine_one(source, repo, options, client, sink, summary, record, changes, on_fix, lock)
        except GitHubAuthError:
            raise  # a refused token refuses every repository: stop, resumable
        except GitHubError as exc:
            if "rate limit" in str(exc).lower():
                raise  # a limit longer than allowed holds for every repository
            record.status, record.error = "failed", str(exc)
        except Exception as exc:  # one repository's failure never stops the others
            if not isinstance(exc, GitError):
                log.exception("%s: mining failed", repo)
            record.status, record.error = "failed", f"{type(exc).__name__}: {exc}"
        else:
            record.status = "done"
        record.seconds = round(time.monotonic() - start, 1)
        with lock:
            repo_log.update(record)
            if record.status == "failed":
                summary.failed_repos[repo] = record.error or ""
        if record.status == "failed":
            log.warning("%s: %s", repo, record.error)
        if on_repo is not None:
            on_repo(repo, f"failed: {record.error}" if record.status == "failed" else
                    f"{record.fixes} fixes")  # fmt: skip

    # The API client keeps one token rotation: API-mode repositories are mined one at a time.
    if workers <= 1 or any(s.api for s in sources):
        for source in sources:
            one(source)
    else:
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            # In slices (interruptible.py): a Ctrl-C is taken at once, not when a repository's
            # mining ends; a fatal error (a refused token) stops the run.
            for future in as_completed([pool.submit(one, s) for s in sources]):
                future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    sink.finish()
    summary_path = output.with_name(output.stem + ".summary.json")
    summary_path.write_text(json.dumps(summary.as_dict(), indent=2), encoding="utf-8")
    return summary


def _mine_one(
    source: RepoSource,
    repo: str,
    options: CollectOptions,
    client: GitHubClient | None,
    sink: Sink,
    summary: CollectSummary,
    record: RepoRecord,
    changes: dict[str, str],
    on_fix: Callable[[str, str], None] | None,
    lock: threading.Lock,
) -> None:
    """Every fix of one repository, decided and written to `sink`; a change already collected
    (`changes`: change id -> instance id) is a duplicate."""
    fixes = _api_fixes(source, repo, options, client) if source.api and client else (
        (f, None) for f in mine_fixes(source.path, options.since, options.until, repo=repo,
                                      direct_commits=options.direct_commits)
    )  # fmt: skip
    for fix, pr in fixes:
        record.fixes += 1
        iid = instance_id(repo, fix)
        with lock:
            summary.fixes += 1
            if iid in sink.known:
                summary.resumed += 1
                continue
        try:
            try:
                task = _candidate(fix, iid, pr, options, client if source.api else None)
            except GitError as exc:  # one unreadable commit: that fix, not the repository
                raise _Reject("git", (str(exc) or "git failed").splitlines()[0]) from exc
            # Within one repository: mined in order, so the first copy is kept whatever the
            # number of workers (a fork listed beside its origin is the list's own duplicate).
            cid = f"{repo}:{(task.model_extra or {}).get('change_id')}"
            with lock:
                first = changes.setdefault(cid, iid)
            if first != iid:
                raise _Reject("duplicate", f"the same change as {first} (cherry-pick)")
        except _Reject as rej:
            with lock:
                summary.rejected[rej.stage] += 1
            sink.reject(_reject_record(iid, fix, rej))
            outcome = f"rejected: {rej.reason}"
        else:
            sink.add(task)
            with lock:
                summary.candidates += 1
                summary.per_repo[repo] += 1
            outcome = "candidate"
        if on_fix is not None:
            on_fix(iid, outcome)


def _reject_record(iid: str, fix: Fix, rej: _Reject) -> dict[str, Any]:
    return {
        "instance_id": iid,
        "repo": fix.repo,
        "fix_commit": fix.fix_commit,
        "pr_number": fix.pr_number,
        "stage": rej.stage,
        "reason": rej.reason,
    }


def _api_fixes(
    source: RepoSource, repo: str, options: CollectOptions, client: GitHubClient
) -> Iterator[tuple[Fix, dict[str, Any] | None]]:
    """Merged PRs created in the window, newest first, joined with the local clone."""
    params = {"state": "closed", "sort": "created", "direction": "desc"}
    for pr in client.paginate(f"/repos/{repo}/pulls", params):
        created = _iso(pr["created_at"])
        if created < options.since:
            break  # sorted by creation: everything further is older
        if options.until is not None and created >= options.until:
            continue
        if not pr.get("merged_at") or not pr.get("merge_commit_sha"):
            continue  # closed without merging: not a fix
        sha = pr["merge_commit_sha"]
        fix = fix_for_commit(source.path, repo, sha, pr_number=pr["number"])
        if fix is not None and fix.kind == "commit":
            # Neither a merge nor a "(#N)" squash: perhaps rebase-merged; the PR says how many
            # commits it had (the list endpoint does not).
            full = client.get_json(f"/repos/{repo}/pulls/{pr['number']}") or {}
            n = int(full.get("commits") or 1)
            if n > 1:
                fix = fix_for_commit(source.path, repo, sha, pr_number=pr["number"], n_commits=n)
        if fix is None:
            stub = Fix(repo, source.path, "merge", "", sha, "", created, _iso(pr["merged_at"]),
                       pr["number"])  # fmt: skip
            yield stub, pr
            continue
        fix.created_at = created
        fix.merged_at = _iso(pr["merged_at"])
        yield fix, pr


def _candidate(
    fix: Fix,
    iid: str,
    pr: dict[str, Any] | None,
    options: CollectOptions,
    client: GitHubClient | None,
) -> Task:
    """The candidate task of one fix, or _Reject with the stage and reason."""
    if not fix.base_commit:
        raise _Reject("git", f"commit {fix.fix_commit[:12]} is not in the clone: git fetch it")
    if fix.created_at < options.since:
        raise _Reject("freshness", f"fix created {fix.created_at:%Y-%m-%d}, before --since")
    if options.until is not None and fix.merged_at >= options.until:
        raise _Reject("freshness", f"fix merged {fix.merged_at:%Y-%m-%d}, after --until")
    raw = fix_diff(fix)
    split = split_diff(raw, options.rules)
    if split.rejection:
        raise _Reject("split", split.rejection)
    extra: dict[str, Any] = {
        "problem_source": "commit",
        "fix_commit": fix.fix_commit,
        "fix_kind": fix.kind,
        "pr_number": fix.pr_number,
        "issue_numbers": fix.issue_numbers,
        "fix_created_at": fix.created_at.isoformat(),
        "merged_at": fix.merged_at.isoformat(),
        "issue_created_at": None,
        "labels": [],
        "num_comments": 0,
        "bounty_comments": [],
        "code_files": split.paths("code"),
        "test_files": split.paths("test"),
        "binary_files": split.binary_files,
        "change_id": change_id(split.patch, split.test_patch),
    }
    statement, hints = fix.message, ""
    if client is not None and pr is not None:
        statement, hints = _link_issues(fix, pr, extra, options, client)
    task = Task(
        instance_id=iid,
        repo=fix.repo,
        base_commit=fix.base_commit,
        problem_statement=statement,
        hints_text=hints,
        patch=split.patch,
        test_patch=split.test_patch,
        created_at=fix.created_at,
        version=release_before(fix.repo_path, fix.base_commit),
        repo_url=str(fix.repo_path),
        ecosystem=ecosystem_of(split.paths("code", "test")),
        **extra,
    )
    rejected = check(task, options.filters)
    if rejected:
        raise _Reject(f"filter:{rejected[0]}", rejected[1])
    return apply_price(task, options.pricing)


def _link_issues(
    fix: Fix,
    pr: dict[str, Any],
    extra: dict[str, Any],
    options: CollectOptions,
    client: GitHubClient,
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
        if not options.allow_unlinked:
            raise _Reject("link", "no linked issue (closing keyword) found in the PR")
        extra["labels"] = labels
        return pr_text.strip(), ""
    opened = min(_iso(i["created_at"]) for i in issues)
    extra["issue_created_at"] = opened.isoformat()
    extra["problem_source"] = "issue"
    if opened < options.since:
        raise _Reject("freshness", f"issue opened {opened:%Y-%m-%d}, before --since")
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
    return statement, "\n".join(hints)[: options.max_hint_chars]
