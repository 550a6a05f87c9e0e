"""Mine fixes from a local git clone: merged pull requests and fix commits, with no network.

Only the first-parent history of the mined branch is walked, so each pull request appears once:
- a merge commit ("Merge pull request #12 from ...") is a PR merged with a merge commit; its
  fix is the diff from the first parent to the merge;
- a commit whose subject ends in "(#12)" is a squash-merged PR;
- any other commit is a direct commit, kept only when its message reads like a fix.
Linked issues come from GitHub's closing keywords in the messages.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from swebounty.interruptible import raise_if_stopped
from swebounty.repos import RepoError
from swebounty.repos import git as run_git

log = logging.getLogger(__name__)

FixKind = Literal["merge", "squash", "rebase", "commit"]

_CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+"
    r"(?:(?P<repo>[\w.-]+/[\w.-]+)?#(?P<num>\d+)"
    r"|https?://github\.com/(?P<urlrepo>[\w.-]+/[\w.-]+)/issues/(?P<urlnum>\d+))",
    re.IGNORECASE,
)
_MERGE_PR = re.compile(r"^Merge pull request #(\d+)\b")
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")
# Words that make a direct commit (not a PR) worth a look; PRs are always kept.
_FIXLIKE = re.compile(r"\b(fix(e[sd])?|bug|regression|crash|broken|error|issue)\b", re.I)
_TRAILER = re.compile(r"^(Co-authored-by|Signed-off-by|Reviewed-by|Change-Id):.*$", re.I | re.M)
_GITHUB_REMOTE = re.compile(r"github\.com[:/](?P<slug>[\w.-]+/[\w.-]+?)(?:\.git)?/?$")


# A git command failed or the path is not a repository: the one error of the one git helper.
GitError = RepoError


@dataclass
class Fix:
    """One change that landed on the mined branch, before it is split into patch and tests."""

    repo: str
    repo_path: Path
    kind: FixKind
    base_commit: str
    fix_commit: str
    message: str
    created_at: datetime  # when the fix was started (first commit's author date) or the PR opened
    merged_at: datetime  # when it landed (committer date)
    pr_number: int | None = None
    issue_numbers: list[int] = field(default_factory=list)
    author: str = ""


def git(repo: Path, *args: str) -> bytes:
    """stdout of git in `repo` (paths unquoted); a failure raises GitError with git's message."""
    return run_git(repo, "-c", "core.quotepath=off", *args).stdout


def open_repo(path: str | Path) -> Path:
    """Check that `path` is a git repository (bare or not) and return it resolved."""
    p = Path(path).expanduser()
    if not p.exists():
        raise GitError(f"{p} does not exist: clone the repository first (git clone URL {p})")
    if run_git(p, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise GitError(
            f"{p} is not a git repository: pass the path of a clone (git clone URL {p}), "
            "or owner/name together with --repo-path CLONE"
        )
    return p.resolve()


def repo_slug(path: Path) -> str:
    """owner/name from the origin remote when it is on GitHub, else local/<directory>."""
    try:
        url = git(path, "config", "--get", "remote.origin.url").decode().strip()
    except GitError:
        url = ""
    m = _GITHUB_REMOTE.search(url)
    if m:
        return m.group("slug")
    name = path.name.removesuffix(".git") or "repo"
    return f"local/{name}"


def linked_issues(text: str, repo: str) -> list[int]:
    """Issue numbers of `repo` closed by keywords in `text` (other repos' issues are ignored)."""
    found: list[int] = []
    for m in _CLOSING.finditer(text):
        other = m.group("repo") or m.group("urlrepo")
        if other and other.lower() != repo.lower():
            continue
        num = int(m.group("num") or m.group("urlnum"))
        if num not in found:
            found.append(num)
    return found


def clean_message(message: str) -> str:
    """A commit message as a problem statement: no "(#N)" suffix, no trailers."""
    lines = message.strip().splitlines()
    if lines:
        lines[0] = _SQUASH_PR.sub("", lines[0]).rstrip()
    return _TRAILER.sub("", "\n".join(lines)).strip()


def _date(iso: str) -> datetime:
    return datetime.fromisoformat(iso.strip()).astimezone(timezone.utc)


def _log(repo: Path, *args: str) -> list[list[str]]:
    """Records of `git log` with the given args, fields split on NUL, records on RS."""
    fmt = "%H%x00%P%x00%an%x00%aI%x00%cI%x00%B%x1e"
    out = git(repo, "log", f"--format={fmt}", *args).decode("utf-8", errors="replace")
    return [rec.strip("\n").split("\x00") for rec in out.split("\x1e") if rec.strip()]


def mine_fixes(
    repo_path: str | Path,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    rev: str = "HEAD",
    repo: str | None = None,
    direct_commits: bool = True,
    stop: threading.Event | None = None,
) -> list[Fix]:
    """Fixes that landed on `rev`'s first-parent history within [since, until), oldest first.

    The window is applied to the landing (committer) date here; the caller checks creation
    dates, which need the API for issues. Once `stop` is set, KeyboardInterrupt within a commit
    (a merge costs a `git log` of its branch: thousands of them on a big history).
    """
    path = open_repo(repo_path)
    slug = repo or repo_slug(path)
    args = ["--first-parent", rev]
    if since is not None:
        args.append(f"--since={since.isoformat()}")
    if until is not None:
        args.append(f"--until={until.isoformat()}")
    fixes: list[Fix] = []
    for sha, parents_s, author, adate, cdate, body in _log(path, *args):
        raise_if_stopped(stop)
        parents = parents_s.split()
        if not parents:
            continue  # the root commit has nothing to diff against
        merged_at = _date(cdate)
        if until is not None and merged_at >= until:
            continue
        subject = body.split("\n", 1)[0]
        if len(parents) >= 2:
            fix = _merge_fix(path, slug, sha, parents, body, author, merged_at)
        elif m := _SQUASH_PR.search(subject):
            fix = Fix(slug, path, "squash", parents[0], sha, clean_message(body), _date(adate),
                      merged_at, int(m.group(1)), linked_issues(body, slug), author)  # fmt: skip
        elif direct_commits and (_FIXLIKE.search(body) or linked_issues(body, slug)):
            fix = Fix(slug, path, "commit", parents[0], sha, clean_message(body), _date(adate),
                      merged_at, None, linked_issues(body, slug), author)  # fmt: skip
        else:
            continue
        fixes.append(fix)
    fixes.reverse()
    log.info("%s: %d fixes on the first-parent history of %s", slug, len(fixes), rev)
    return fixes


def _merge_fix(
    path: Path, slug: str, sha: str, parents: list[str], body: str, author: str, merged: datetime
) -> Fix:
    # The branch's own commits carry the closing keywords and the start date of the work.
    branch = _log(path, f"{parents[0]}..{parents[1]}")
    texts = [body] + [rec[5] for rec in branch]
    started = min([_date(rec[3]) for rec in branch], default=merged)
    m = _MERGE_PR.match(body)
    lines = body.strip().splitlines()
    # "Merge pull request #N from user/branch" + blank + PR title: the title is the statement.
    title = "\n".join(lines[1:]).strip() if m else body.strip()
    # Some merge tools write "Title (#N)" as the merge subject instead.
    m = m or _SQUASH_PR.search(lines[0] if lines else "")
    branch_msgs = [clean_message(rec[5]) for rec in reversed(branch)]
    title = clean_message(title)
    # The PR title usually repeats the first commit's subject: say it once.
    head = [] if any(msg.startswith(title) for msg in branch_msgs) else [title]
    message = "\n\n".join(dict.fromkeys(x for x in [*head, *branch_msgs] if x))
    issues: list[int] = []
    for t in texts:
        issues += [n for n in linked_issues(t, slug) if n not in issues]
    return Fix(slug, path, "merge", parents[0], sha, message, started, merged,
               int(m.group(1)) if m else None, issues, author)  # fmt: skip


def fix_for_commit(
    repo_path: Path, repo: str, sha: str, *, pr_number: int, n_commits: int = 1
) -> Fix | None:
    """The fix of a PR whose landed commit is known (API mode): merge, squash or rebase.

    Returns None when the commit is not in the clone (the caller reports it).
    """
    try:
        (rec,) = _log(repo_path, "-1", sha)
    except GitError:
        return None
    _, parents_s, author, adate, cdate, body = rec
    parents = parents_s.split()
    if not parents:
        return None
    if len(parents) >= 2:
        return _merge_fix(repo_path, repo, sha, parents, body, author, _date(cdate))
    base = parents[0]
    kind: FixKind = "squash" if _SQUASH_PR.search(body.split("\n", 1)[0]) else "commit"
    if n_commits > 1 and kind == "commit":
        # Rebase-merged: the PR's commits sit linearly below the landed one.
        chain = _log(repo_path, f"-{n_commits}", "--first-parent", sha)
        if len(chain) == n_commits and all(len(r[1].split()) == 1 for r in chain):
            base, kind = chain[-1][1].split()[0], "rebase"
    return Fix(repo, repo_path, kind, base, sha, clean_message(body), _date(adate),
               _date(cdate), pr_number, linked_issues(body, repo), author)  # fmt: skip


def release_before(repo_path: Path, commit: str) -> str | None:
    """The newest tag reachable from `commit` ("v1.2.0" -> "1.2.0"), or None: the version a
    history-free checkout cannot compute itself (setuptools-scm, hatch-vcs)."""
    try:
        tag = git(repo_path, "describe", "--tags", "--abbrev=0", commit).decode().strip()
    except GitError:
        return None
    return tag.removeprefix("v") or None


def fix_diff(fix: Fix) -> bytes:
    """The fix as one diff from its base, file by file, without rename detection."""
    return git(
        fix.repo_path, "diff", "--no-color", "--no-ext-diff", "--no-renames", "--full-index",
        fix.base_commit, fix.fix_commit,
    )  # fmt: skip
