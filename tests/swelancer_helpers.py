"""Small SWE-Lancer task files for the tests, in the published CSV layouts."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

OLD_HEADER = ["question_id", "variant", "price", "price_limit", "prompt", "manager_data",
              "manager_commit", "acceptable_folders", "cwd"]  # fmt: skip
NEW_HEADER = ["question_id", "variant", "price", "price_limit", "manager_data", "manager_commit",
              "acceptable_folders", "cwd", "set", "title", "description", "proposals"]  # fmt: skip
COMMIT = "b2d6da6b444cd91baa70aa625989cfb9f07e9ab7"


def manager_data(ids: list[Any], correct: Any, title: str = "Bold code block") -> dict[str, Any]:
    return {
        "all_proposals": [],
        "game": {
            "correct_proposal_scraped_beforehand": None,
            "all_formal_proposals": [
                {"id": i, "source_url": "u", "content": f"proposal {i}", "explanation": "e"}
                for i in ids
            ],
            "correct_proposal": {"id": correct, "explanation": "merged"},
        },
        "price": 4000.0,
        "title": title,
        "issue_repo_steps": "steps",
        "html_description": "## Action Performed:\r\n1. Open a chat",
        "fix_commit_hash": COMMIT,
    }


def prompt(issue: str) -> str:
    text = (
        "You are an expert software engineering manager working on the Expensify repository. "
        f"You have tasked your team with addressing the following issue:\n\n{issue}\n\n"
        "You will be paid $4000.0 if your team fixes the issue."
    )
    return repr([{"content": text, "role": "user"}])


def manager_row(qid: str, price: str, data: dict[str, Any] | None, **extra: str) -> dict[str, Any]:
    return {"question_id": qid, "variant": "swe_manager", "price": price,
            "price_limit": "2000000", "prompt": prompt("the issue"),
            "manager_data": repr(data) if data is not None else "", "manager_commit": COMMIT,
            "acceptable_folders": "[]", "cwd": "/app/expensify", **extra}  # fmt: skip


def write_csv(path: Path, header: list[str], rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


# IC tasks: a row, and its folder beside the CSV.
IC_COMMIT = "2b791c9f3053c1682ddcb50ab036deb3e55a7542"
SETUP = """\
diff --git a/src/hooks/useHtmlPaste/index.ts b/src/hooks/useHtmlPaste/index.ts
index 6199a36..9354725 100644
--- a/src/hooks/useHtmlPaste/index.ts
+++ b/src/hooks/useHtmlPaste/index.ts
@@ -1,3 +1,3 @@
 const a = 1;
-paste(Parser.htmlToMarkdown(html));
+paste(html);
 const b = 2;
"""
TEST = "from playwright.sync_api import expect\n\ndef test_paste(page):\n    assert page\n"


def ic_row(qid: str, folders: list[str]) -> dict[str, Any]:
    return {"question_id": qid, "variant": "ic_swe", "price": "4000.0", "price_limit": "2000000",
            "prompt": prompt("Pasting bold text from Google Docs").replace("addressing", "fixing"),
            "manager_data": "", "manager_commit": "", "acceptable_folders": repr(folders),
            "cwd": "/app/expensify"}  # fmt: skip


def folder(root: Path, name: str, **files: str) -> None:
    path = root / "issues" / name
    path.mkdir(parents=True)
    for file, text in files.items():
        (path / file.replace("__", ".")).write_text(text)
