"""SWE-Lancer's IC tasks: an `ic_swe` row and its `issues/<folder>/` as an end-to-end fix task.

A folder beside the CSV holds the task's state and its hidden tests: `commit_id.txt` (the commit
of the fix), the patch that puts the bug back (`bug_reintroduce.patch`, `issue_introduction.patch`
in later releases; or `revert_command.txt`, `git reset --hard C`: the bug is commit C), `test.py`
(Playwright, against the app), `flow.mitm` (the backend's answers, recorded, replayed by a proxy)
and `user_tool.py`. The row's `acceptable_folders` name the folders of one task (several test
the same fix); the first that exists gives the state.

The task: base commit plus `setup_patch` (the bug put back: setups.py makes that state the
workspace's only commit); the reference fix is the setup patch reversed; the hidden tests are
`test_patch` (each folder's test.py under `swelancer/<folder>/`), never in the agent's
workspace; the folder's place is kept (`swelancer_folders`) for what is not text (the flows).
What running it takes is data (`requires`: the clone, the programs and services SWE-Lancer's
runtime starts, the flows the replaying backend answers from, a browser), which needs.py checks before any work, so each task's
verdict names everything this machine lacks; the app it serves is `swelancer_app`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from swebounty.records import safe_id
from swebounty.safefs import read_regular
from swebounty.swelancer.reverse import reverse_patch
from swebounty.swelancer.rows import (
    REPO,
    VALUE_SOURCE,
    RowError,
    literal,
    price,
    problem_statement,
)

SETUP_PATCHES = ("bug_reintroduce.patch", "issue_introduction.patch")
_MAX_TEXT = 16 << 20
_RESET = re.compile(r"\s*git reset --hard ([0-9a-f]{7,40})\s*")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
# What SWE-Lancer's runtime (runtime_scripts/, its Docker image) starts around the tests: the
# app's dev server (npm run web, https://dev.new.expensify.com:8082), mitmproxy replaying each
# folder's flow.mitm for the backend, nginx and pusher-fake for the websockets, and Chromium
# driven by Playwright from pytest. As data, checked before any work by needs.py.
CLONE = "Expensify/App, about 3.2 GB: git clone --bare https://github.com/Expensify/App.git"
PROGRAMS = ["nginx", "pusher-fake"]
REPLAY = "mitmproxy-replay"  # services/replay.py, in the catalog: answers from flow.mitm
SERVICES = [REPLAY]
APP = {"cmd": ["npm", "run", "web"], "port": 8082, "host": "dev.new.expensify.com", "tls": True}


def _text(path: Path) -> str | None:
    raw = read_regular(path, _MAX_TEXT)
    return None if raw is None else raw.decode("utf-8", "replace")


def folders_of(row: dict[str, str]) -> list[str]:
    """The task's folders: `acceptable_folders`, else the question id; each a safe name."""
    names = literal(row.get("acceptable_folders") or "", "acceptable_folders")
    if names is None or names == []:
        names = [row["question_id"]]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RowError("acceptable_folders is not a list of folder names")
    return [safe_id(n, "a folder of acceptable_folders") for n in names]


def base_state(folder: Path) -> tuple[str, str]:
    """(base commit, setup patch) of a folder: the commit plus the patch that puts the bug back,
    or the commit a `git reset --hard` names and no patch."""
    reset = _RESET.fullmatch(_text(folder / "revert_command.txt") or "")
    if reset:
        return reset.group(1), ""
    commit = (_text(folder / "commit_id.txt") or "").strip()
    if not _COMMIT.fullmatch(commit):
        raise RowError(f"{folder.name}/commit_id.txt does not hold a commit id")
    for name in SETUP_PATCHES:
        patch = _text(folder / name)
        if patch and patch.strip():
            return commit, patch
    raise RowError(
        f"{folder.name}/ has no setup patch ({' or '.join(SETUP_PATCHES)}) and no "
        "revert_command.txt: the bug cannot be put back"
    )


def _test_patch(folders: list[Path]) -> tuple[str, list[str]]:
    """A patch adding each folder's test.py under swelancer/<folder>/, and the test files."""
    parts, files = [], []
    for folder in folders:
        text = _text(folder / "test.py")
        if text is None:
            continue
        lines = text.splitlines()
        path = f"swelancer/{folder.name}/test.py"
        body = "".join(f"+{line}\n" for line in lines)
        parts.append(
            f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}"
        )
        files.append(path)
    return "".join(parts), files


def ic_task(row: dict[str, str], split: str, root: Path) -> dict[str, Any]:
    """A fix task record from an `ic_swe` row and its folders under `root/issues/`."""
    names = folders_of(row)
    issues = root / "issues"
    present = [issues / n for n in names if (issues / n).is_dir()]
    if not present:
        raise RowError(
            f"its folder{'s' if len(names) > 1 else ''} "
            f"{', '.join(f'issues/{n}/' for n in names)} {'are' if len(names) > 1 else 'is'} "
            f"not beside the CSV ({issues}): take them from the same release of "
            "openai/SWELancer-Benchmark as the CSV"
        )
    base, setup = base_state(present[0])
    if setup and ("GIT binary patch" in setup or "Binary files " in setup):
        raise RowError(f"{present[0].name}'s setup patch is binary; it cannot be reversed")
    test_patch, tests = _test_patch(present)
    if not tests:
        raise RowError(f"no test.py in {', '.join(p.name for p in present)}: nothing grades it")
    return {
        "instance_id": row["question_id"],
        "repo": REPO,
        "base_commit": base,
        "setup_patch": setup,
        "patch": reverse_patch(setup) if setup else "",
        "test_patch": test_patch,
        "FAIL_TO_PASS": tests,
        "problem_statement": problem_statement(row, None),
        "ecosystem": "node",
        "test_kind": "e2e",
        "value_usd": price(row),
        "value_source": VALUE_SOURCE,
        "split": split,
        "swelancer_variant": "ic_swe",
        "swelancer_folders": [str(p.resolve()) for p in present],
        "swelancer_missing_folders": [n for n in names if not (issues / n).is_dir()],
        "requires": {
            "local_clone": CLONE,
            "programs": PROGRAMS,
            "services": SERVICES,
            # One recording per folder, read in order as one: each folder's test.py runs in
            # the same session here (SWE-Lancer runs each apart, with its own flows).
            "service_data": {REPLAY: [str((p / "flow.mitm").resolve()) for p in present]},
            "browser": True,
        },
        "swelancer_app": APP,
        "source_dataset": "SWE-Lancer",
    }
