"""SWE-Lancer's IC rows: each with its `issues/<folder>/` beside the CSV becomes an end-to-end
fix task whose starting state is the commit plus the setup patch, whose reference fix is that
patch reversed, and whose browser tests stay hidden; a row without its folder says so."""

from __future__ import annotations

from pathlib import Path

from swebounty.agents.base import PublicTask
from swebounty.formats import load_file
from swelancer_helpers import (
    IC_COMMIT,
    OLD_HEADER,
    SETUP,
    TEST,
    folder,
    ic_row,
    manager_data,
    manager_row,
    write_csv,
)


def test_ic_rows_with_their_folders_are_e2e_fix_tasks(tmp_path: Path) -> None:
    folder(tmp_path, "14294", commit_id__txt=IC_COMMIT + "\n", bug_reintroduce__patch=SETUP,
           test__py=TEST, revert_command__txt="", flow__mitm="\x00recorded")  # fmt: skip
    folder(tmp_path, "7", commit_id__txt=IC_COMMIT, issue_introduction__patch=SETUP, test__py=TEST,
           revert_command__txt="")  # fmt: skip
    folder(
        tmp_path,
        "8",
        commit_id__txt=IC_COMMIT,
        issue_introduction__patch="",
        test__py=TEST,
        revert_command__txt="git reset --hard 75bf54eb0166d846af9836bd6e95787b143bc15e\n",
    )
    rows = [ic_row("14294", ["14294", "14294_1"]), ic_row("7_1", ["7"]), ic_row("8", ["8"]),
            manager_row("14294-manager-0", "4000", manager_data([0, 1], 1))]  # fmt: skip
    tasks, errors = load_file(write_csv(tmp_path / "swelancer_tasks_lite.csv", OLD_HEADER, rows))
    assert errors == []
    paste, seven, reset, manager = tasks
    assert (paste.kind, paste.ecosystem, paste.test_kind) == ("fix", "node", "e2e")
    assert paste.base_commit == IC_COMMIT and paste.setup_patch == SETUP
    assert "-paste(html);\n+paste(Parser.htmlToMarkdown(html));" in paste.patch
    assert paste.test_patch.startswith("diff --git a/swelancer/14294/test.py")
    assert paste.FAIL_TO_PASS == ["swelancer/14294/test.py"]
    assert paste.problem_statement == "Pasting bold text from Google Docs"
    extra = paste.model_extra or {}
    assert extra["swelancer_missing_folders"] == ["14294_1"]
    assert extra["swelancer_folders"] == [str((tmp_path / "issues" / "14294").resolve())]
    assert extra["split"] == "lite" and paste.value_usd == 4000.0
    # The recorded backend goes to the catalog's replay, which needs.py and the run check.
    assert paste.requires is not None and paste.requires.files == []
    assert paste.requires.service_data == {
        "mitmproxy-replay": [str((tmp_path / "issues" / "14294" / "flow.mitm").resolve())]
    }
    assert paste.requires.services == ["mitmproxy-replay"]
    assert seven.setup_patch == SETUP  # the later releases' name for the setup patch
    assert reset.base_commit.startswith("75bf54eb") and reset.setup_patch == reset.patch == ""
    assert manager.kind == "pick"
    # What the agent sees: neither the setup patch (it reveals the fix) nor the tests.
    public = PublicTask.from_task(paste).model_dump_json()
    assert "htmlToMarkdown" not in public and "playwright" not in public


def test_an_ic_row_without_its_folder_or_its_state_says_what_is_missing(tmp_path: Path) -> None:
    folder(tmp_path, "9", commit_id__txt="not a commit", test__py=TEST)
    folder(tmp_path, "10", commit_id__txt=IC_COMMIT, test__py=TEST)
    folder(tmp_path, "11", commit_id__txt=IC_COMMIT, bug_reintroduce__patch=SETUP)
    rows = [ic_row("5", ["5", "5_1"]), ic_row("9", ["9"]), ic_row("10", ["10"]),
            ic_row("11", ["11"]), ic_row("12", ["../etc"])]  # fmt: skip
    tasks, errors = load_file(write_csv(tmp_path / "swelancer_tasks.csv", OLD_HEADER, rows))
    assert tasks == []
    messages = [e.message for e in errors]
    assert "issues/5/, issues/5_1/ are not beside the CSV" in messages[0]
    assert "9/commit_id.txt does not hold a commit id" in messages[1]
    assert "no setup patch" in messages[2] and "no test.py" in messages[3]
    assert "is not a safe name" in messages[4]
