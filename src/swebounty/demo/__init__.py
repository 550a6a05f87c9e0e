"""The bundled demos: small projects whose git history is replayed from package data.

`python` (the default) is tinytext, a Python library tested with pytest; `js` is strkit, a
JavaScript library tested with Mocha; `web` is a tiny web app graded by a hidden Playwright test
driving Chromium against the running app (SWE-Lancer's kind of task). For each, `history.txt`
describes every commit (date, message, full file contents); `tasks.json` names, for each task,
the commit that fixed it. `build_demo` replays the history into a git repo with
fixed identities and dates, so commit ids are the same on every machine, and derives each
task's base commit (the fix's parent), gold patch and test patch from that history, exactly as
tasks are mined from a real project. The fixes stay in the history, later than each base:
the workspace must hide them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from swebounty.repos import RepoError, commit_date, file_lock, git, isolated_git_env
from swebounty.tasks import EnvSpec, Task

log = logging.getLogger(__name__)

DEMO_REPO = "swebounty/tinytext"
MIRROR_NAME = DEMO_REPO.replace("/", "__")
DEMOS = ("python", "js", "web")
# Per demo: the data folder, the repository's name, where its tests live, and what every task
# of it shares (ecosystem, test kind, environment).
_DEMO_CONFIG: dict[str, dict[str, Any]] = {
    "python": {"data": "", "repo": DEMO_REPO, "test_dir": "tests"},
    "js": {"data": "js", "repo": "swebounty/strkit", "test_dir": "test", "ecosystem": "node"},
    "web": {
        "data": "web",
        "repo": "swebounty/tinycounter",
        "test_dir": "e2e",
        "ecosystem": "node",
        "test_kind": "e2e",
        "env_spec": {"app_cmd": ["node", "server.js"], "app_port": 8123},
    },
}
AUTHOR = ("Tiny Text", "maintainers@tinytext.invalid")
VALUE_SOURCE = "demo estimate"
DEMO_CUTOFF = datetime(2024, 1, 20, tzinfo=timezone.utc)  # pytest 7.4.4 then
_MARKER = "swebounty-demo.json"  # inside .git: which data a built mirror came from


@dataclass
class DemoCommit:
    """One commit of the demo history."""

    label: str
    date: str = ""
    message_lines: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    files: dict[str, str | None] = field(default_factory=dict)  # None deletes the file

    @property
    def message(self) -> str:
        return "\n".join(self.message_lines).strip() + "\n"


def _data(name: str, folder: str = "") -> str:
    root = resources.files(__name__)
    return (root.joinpath(folder) if folder else root).joinpath(name).read_text(encoding="utf-8")


def parse_history(text: str) -> list[DemoCommit]:
    """Read the `%%% directive` format described at the top of history.txt."""
    commits: list[DemoCommit] = []
    block: list[str] | None = None  # lines of the file being read
    path = ""

    def close_block() -> None:
        if block is not None:
            while block and not block[-1].strip():
                block.pop()
            commits[-1].files[path] = "\n".join(block) + "\n"

    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.startswith("%%%"):
            if block is not None:
                block.append(line)
            continue
        close_block()
        block = None
        name, _, value = line[3:].strip().partition(" ")
        if name == "commit":
            commits.append(DemoCommit(label=value.strip()))
            continue
        if not commits:
            raise ValueError(f"history line {lineno}: {name!r} before the first commit")
        current = commits[-1]
        if name == "date":
            current.date = value.strip()
        elif name == "message":
            current.message_lines.append(value)
        elif name == "tag":
            current.tags.append(value.strip())
        elif name == "file":
            path, block = value.strip(), []
        elif name == "delete":
            current.files[value.strip()] = None
        else:
            raise ValueError(f"history line {lineno}: unknown directive {name!r}")
    close_block()
    return commits


def _replay(repo: Path, history: list[DemoCommit]) -> dict[str, str]:
    """Commit `history` into a new repo at `repo`; return label -> commit id."""
    repo.mkdir(parents=True)
    base_env = isolated_git_env()
    base_env.update(GIT_AUTHOR_NAME=AUTHOR[0], GIT_AUTHOR_EMAIL=AUTHOR[1])
    base_env.update(GIT_COMMITTER_NAME=AUTHOR[0], GIT_COMMITTER_EMAIL=AUTHOR[1])
    git(repo, "init", "-q", "--template=", "--initial-branch=main", env=base_env)
    git(repo, "config", "core.autocrlf", "false", env=base_env)
    ids: dict[str, str] = {}
    for commit in history:
        for name, content in commit.files.items():
            target = repo / name
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            # newline="" keeps "\n" on every platform: the blobs (and ids) must not vary.
            target.write_text(content, encoding="utf-8", newline="")
        env = {**base_env, "GIT_AUTHOR_DATE": commit.date, "GIT_COMMITTER_DATE": commit.date}
        git(repo, "add", "-A", env=env)
        git(repo, "commit", "-q", "--no-verify", "--no-gpg-sign", "-F", "-",
            input=commit.message.encode(), env=env)  # fmt: skip
        for tag in commit.tags:
            git(repo, "tag", "-a", "--no-sign", tag, "-m", f"tinytext {tag}", env=env)
        ids[commit.label] = git(repo, "rev-parse", "HEAD", env=env).stdout.decode().strip()
    return ids


def _built(mirror: Path, digest: str) -> dict[str, str] | None:
    """The label -> id map of a mirror already built from the same data, else None."""
    try:
        marker = json.loads((mirror / ".git" / _MARKER).read_text())
    except (OSError, ValueError):
        return None
    if marker.get("digest") != digest:
        return None
    commits: dict[str, str] = marker["commits"]
    head = git(mirror, "rev-parse", "HEAD", env=isolated_git_env(), check=False)
    if head.returncode != 0 or head.stdout.decode().strip() not in commits.values():
        return None
    return commits


def _build(mirror: Path, history: list[DemoCommit], digest: str) -> dict[str, str]:
    scratch = Path(tempfile.mkdtemp(prefix=".demo-", dir=mirror.parent))
    try:
        repo = scratch / mirror.name
        commits = _replay(repo, history)
        # Written last: a half-built repo never has a marker, so it is never reused.
        (repo / ".git" / _MARKER).write_text(json.dumps({"digest": digest, "commits": commits}))
        if mirror.exists():
            log.info("replacing the stale demo repo at %s", mirror)
            shutil.rmtree(mirror)
        repo.rename(mirror)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return commits


def _diff(mirror: Path, base: str, fix: str, *pathspec: str) -> str:
    proc = git(mirror, "diff", "--no-color", "--no-ext-diff", "--no-renames", base, fix,
               "--", *pathspec, env=isolated_git_env())  # fmt: skip
    return proc.stdout.decode("utf-8")


def _task(
    mirror: Path, spec: dict[str, Any], commits: dict[str, str], config: dict[str, Any]
) -> Task:
    fix = commits[spec["fix"]]
    env = isolated_git_env()
    base = git(mirror, "rev-parse", f"{fix}^", env=env).stdout.decode().strip()
    test_dir = config["test_dir"]
    if config["repo"] == DEMO_REPO:
        # Just pytest: tinytext is imported from the workspace through pytest's `pythonpath`,
        # so the demo needs no build backend (and no network) beyond pytest itself. One cutoff,
        # before every base commit, for all tasks: one spec, so one environment they all share.
        env_spec: EnvSpec | None = EnvSpec(
            install=["pytest"], cutoff=DEMO_CUTOFF, install_project=False
        )
    else:
        env_spec = EnvSpec(**config["env_spec"]) if "env_spec" in config else None
    return Task(
        instance_id=spec["instance_id"],
        repo=config["repo"],
        base_commit=base,
        problem_statement=spec["problem_statement"],
        patch=_diff(mirror, base, fix, ".", f":(exclude){test_dir}"),
        test_patch=_diff(mirror, base, fix, test_dir),
        FAIL_TO_PASS=spec["FAIL_TO_PASS"],
        PASS_TO_PASS=spec["PASS_TO_PASS"],
        created_at=commit_date(mirror, fix),
        version="0.1",
        value_usd=spec["value_usd"],
        value_source=VALUE_SOURCE,
        ecosystem=config.get("ecosystem"),  # the Python demo's: unset, its files decide
        test_kind=config.get("test_kind", "unit"),
        env_spec=env_spec,
    )


def demo_name(repo: str) -> str | None:
    """The demo (`python`, `js`, `web`) whose repository is `repo`, or None."""
    return next((name for name, c in _DEMO_CONFIG.items() if c["repo"] == repo), None)


def build_demo(dest: Path, name: str = "python") -> tuple[Path, list[Task]]:
    """Build (or reuse) demo `name`'s repo under `dest` (`dest/swebounty__tinytext` for the
    Python demo); return it and its tasks.

    Pass `dest` as `--repos-dir`: `find_mirror("swebounty/tinytext", dest)` finds the repo.
    Safe to call from several processes at once.
    """
    if name not in _DEMO_CONFIG:
        raise ValueError(f"no demo called {name!r}; choose one of {', '.join(DEMOS)}")
    config = _DEMO_CONFIG[name]
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    history_text = _data("history.txt", config["data"])
    tasks_text = _data("tasks.json", config["data"])
    digest = hashlib.sha256(f"{history_text}\0{tasks_text}".encode()).hexdigest()
    mirror_name = config["repo"].replace("/", "__")
    mirror = dest / mirror_name
    with file_lock(dest / f".{mirror_name}.lock"):
        commits = _built(mirror, digest)
        if commits is None:
            commits = _build(mirror, parse_history(history_text), digest)
    specs = json.loads(tasks_text)
    unknown = [s["fix"] for s in specs if s["fix"] not in commits]
    if unknown:
        raise RepoError(f"demo tasks name commits missing from history.txt: {unknown}")
    return mirror, [_task(mirror, spec, commits, config) for spec in specs]


__all__ = [
    "DEMOS",
    "DEMO_REPO",
    "MIRROR_NAME",
    "DemoCommit",
    "build_demo",
    "demo_name",
    "parse_history",
]
