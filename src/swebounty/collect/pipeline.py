"""From repositories to candidate tasks: mine, split, link issues, check freshness, filter, price.
API mode's pull requests and the issues they close are pulls.py's.

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
from datetime import datetime
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
    mine_fixes,
    release_before,
    repo_slug,
)
from swebounty.collect.pricing import PricingConfig, apply_price
from swebounty.collect.pulls import Reject, api_fixes, link_issues
from swebounty.collect.repolist import RepoLog, RepoRecord, RepoSource, repo_log_path
from swebounty.collect.sink import Sink
from swebounty.collect.split import SplitRules, split_diff
from swebounty.envs.node_project import ecosystem_of
from swebounty.interruptible import as_completed, raise_if_stopped
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
    `workers` repositories are mined at once (git-only; API mode mines one at a time).

    Every run mines every source again, those recorded as failed or stopped too (a clone fixed
    since, a transient git error): the fixes already decided are skipped, not decided again.
    Interrupted (Ctrl-C), a repository being mined stops at its next fix and is recorded as
    `stopped`, neither done nor failed."""
    rejects = rejects or output.with_name(output.stem + ".rejects.jsonl")
    sink = Sink(output, rejects, fresh=fresh)
    summary = CollectSummary()
    if any(s.api for s in sources) and client is None:
        raise ValueError("owner/name sources need a GitHub client (API mode)")
    repo_log = RepoLog(repo_log_path(output), fresh=fresh)
    changes = known_changes(sink.partial)  # change id -> first candidate, for duplicates
    lock = threading.Lock()
    stop = threading.Event()  # set by an interrupted main thread: the workers' mining ends

    def one(source: RepoSource) -> None:
        if stop.is_set():
            return  # taken from the queue as the run stopped: never begun
        repo = source.repo or repo_slug(source.path)
        record = RepoRecord(repo=repo, clone=None if source.problem else str(source.path))
        with lock:
            repo_log.update(record)
        start = time.monotonic()
        try:
            if source.problem:
                raise GitError(source.problem)
            _mine_one(source, repo, options, client, sink, summary, record, changes, on_fix, lock,
                      stop)  # fmt: skip
        except KeyboardInterrupt:
            record.status = "stopped"  # Ctrl-C, or `stop` seen between two fixes
            raise
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
        finally:
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
        except BaseException:
            stop.set()  # before the shutdown waits for them: mining a big history takes minutes
            raise
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
    stop: threading.Event | None = None,
) -> None:
    """Every fix of one repository, decided and written to `sink`; a change already collected
    (`changes`: change id -> instance id) is a duplicate. Once `stop` is set, KeyboardInterrupt
    before the next fix."""
    fixes: Iterator[tuple[Fix, dict[str, Any] | None]]
    if source.api and client is not None:
        fixes = api_fixes(source.path, repo, options.since, options.until, client)
    else:
        mined = mine_fixes(source.path, options.since, options.until, repo=repo,
                           direct_commits=options.direct_commits, stop=stop)  # fmt: skip
        fixes = ((f, None) for f in mined)
    for fix, pr in fixes:
        raise_if_stopped(stop)
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
                raise Reject("git", (str(exc) or "git failed").splitlines()[0]) from exc
            # Within one repository: mined in order, so the first copy is kept whatever the
            # number of workers (a fork listed beside its origin is the list's own duplicate).
            cid = f"{repo}:{(task.model_extra or {}).get('change_id')}"
            with lock:
                first = changes.setdefault(cid, iid)
            if first != iid:
                raise Reject("duplicate", f"the same change as {first} (cherry-pick)")
        except Reject as rej:
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


def _reject_record(iid: str, fix: Fix, rej: Reject) -> dict[str, Any]:
    return {
        "instance_id": iid,
        "repo": fix.repo,
        "fix_commit": fix.fix_commit,
        "pr_number": fix.pr_number,
        "stage": rej.stage,
        "reason": rej.reason,
    }


def _candidate(
    fix: Fix,
    iid: str,
    pr: dict[str, Any] | None,
    options: CollectOptions,
    client: GitHubClient | None,
) -> Task:
    """The candidate task of one fix, or Reject with the stage and reason."""
    if not fix.base_commit:
        raise Reject("git", f"commit {fix.fix_commit[:12]} is not in the clone: git fetch it")
    if fix.created_at < options.since:
        raise Reject("freshness", f"fix created {fix.created_at:%Y-%m-%d}, before --since")
    if options.until is not None and fix.merged_at >= options.until:
        raise Reject("freshness", f"fix merged {fix.merged_at:%Y-%m-%d}, after --until")
    raw = fix_diff(fix)
    split = split_diff(raw, options.rules)
    if split.rejection:
        raise Reject("split", split.rejection)
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
        statement, hints = link_issues(fix, pr, extra, client, since=options.since,
                                       allow_unlinked=options.allow_unlinked,
                                       max_hint_chars=options.max_hint_chars)  # fmt: skip
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
        raise Reject(f"filter:{rejected[0]}", rejected[1])
    return apply_price(task, options.pricing)
