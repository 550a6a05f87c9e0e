"""Node tasks' hack flags, restored test configuration and verdicts."""

from __future__ import annotations

import json
from pathlib import Path

from swebounty.node.grading import grade_node, node_hack_flags
from swebounty.node.testfiles import is_js_test_file, js_test_files, restore_test_config
from swebounty.tasks import Submission, Task
from swebounty.testing import TestOutcome
from swebounty.testrun import TestRun as Run


def diff(path: str, added: list[str], removed: list[str] = ()) -> str:  # type: ignore[assignment]
    body = "".join(f"-{x}\n" for x in removed) + "".join(f"+{x}\n" for x in added)
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,{len(removed)} +1,{len(added)} @@\n{body}")  # fmt: skip


def test_js_test_files() -> None:
    assert is_js_test_file("test/req.protocol.js") and is_js_test_file("src/a.spec.ts")
    assert is_js_test_file("src/__tests__/b.tsx") and not is_js_test_file("test/support/env.js")
    assert not is_js_test_file("src/index.js") and not is_js_test_file("test/fixtures/x.js")
    patch = diff("test/a.test.js", ["it('x')"]) + diff("README.md", ["x"])
    assert js_test_files(patch) == ["test/a.test.js"]


def test_hack_flags_of_javascript_patches() -> None:
    assert node_hack_flags(diff("src/index.js", ["return 1"]), []) == []
    assert node_hack_flags(diff("test/a.test.js", ["it('x')"]), []) == ["modifies_test_file"]
    assert "modifies_test_config" in node_hack_flags(diff("jest.config.js", ["bail: 1"]), [])
    pkg = diff("package.json", ['  "jest": {"testPathIgnorePatterns": ["a"]},'])
    assert {"modifies_test_config", "adds_skip_or_xfail"} <= set(node_hack_flags(pkg, []))
    assert "adds_skip_or_xfail" in node_hack_flags(diff("src/x.js", ["describe.skip('a')"]), [])
    assert "exits_process" in node_hack_flags(diff("src/x.js", ["process.exit(0)"]), [])
    assert "reads_git_internals" in node_hack_flags(diff("src/x.js", ["read('.git/HEAD')"]), [])


def test_runner_configuration_is_the_base_commits(tmp_path: Path) -> None:
    base = {"name": "x", "jest": {"testEnvironment": "node"}, "dependencies": {"a": "1"}}
    (tmp_path / "package.json").write_text(
        json.dumps({**base, "jest": {"testPathIgnorePatterns": ["."]}, "dependencies": {"a": "2"}})
    )
    restored = restore_test_config(tmp_path, json.dumps(base), ["package.json", "src/a.js"])
    now = json.loads((tmp_path / "package.json").read_text())
    assert now["jest"] == base["jest"] and now["dependencies"] == {"a": "2"}  # the fix's deps stay
    assert restored == ["package.json (test keys)"]


def test_a_workspace_package_s_runner_configuration_is_the_base_commits(tmp_path: Path) -> None:
    from swebounty.node.testfiles import base_packages

    base = {"name": "app", "jest": {"testEnvironment": "node"}}
    pkg = tmp_path / "packages/app/package.json"
    pkg.parent.mkdir(parents=True)
    pkg.write_text(json.dumps(base))
    touched = ["packages/app/package.json", "packages/app/src/a.js"]
    before = base_packages(tmp_path, touched)
    pkg.write_text(json.dumps({**base, "jest": {"testRegex": "nothing"}, "version": "2.0.0"}))
    restored = restore_test_config(tmp_path, before, touched)
    assert restored == ["packages/app/package.json (test keys)"]
    assert json.loads(pkg.read_text()) == {**base, "version": "2.0.0"}


def task(**kw: object) -> Task:
    return Task(instance_id="a__b-1", repo="a/b", base_commit="c" * 40, ecosystem="node",
                FAIL_TO_PASS=["t.test.js:f"], PASS_TO_PASS=["t.test.js:p"], **kw)  # type: ignore[arg-type]  # fmt: skip


def test_verdicts() -> None:
    sub = Submission(instance_id="a__b-1", model_patch=diff("src/a.js", ["x"]))
    good = {"t.test.js:f": TestOutcome("passed"), "t.test.js:p": TestOutcome("passed")}
    assert grade_node(task(), sub, Run(outcomes=good, exit_code=0, patch_method="git")).resolved
    bad = {**good, "t.test.js:p": TestOutcome("failed", "boom")}
    verdict = grade_node(task(), sub, Run(outcomes=bad, exit_code=1, patch_method="git"))
    assert verdict.status == "unresolved" and "PASS_TO_PASS: 1 of 1" in verdict.reason
    lied = Run(outcomes=good, exit_code=1, patch_method="git", problem="exit 1, no failure")
    assert grade_node(task(), sub, lied).status == "error"
    infra = Run(error="installing the dependencies failed")
    assert grade_node(task(), sub, infra).status == "error"
    failed_patch = Run(patch_error="does not apply")
    assert grade_node(task(), sub, failed_patch).status == "patch_failed"
    assert grade_node(task(), sub, Run(patch_method="git")).status == "error"  # no results


def test_an_empty_submission_never_resolves_a_node_task() -> None:
    good = {"t.test.js:f": TestOutcome("passed"), "t.test.js:p": TestOutcome("passed")}
    for patch, method in (("", "empty"), (diff("src/a.js", ["x"], ["x"]), "empty")):
        sub = Submission(instance_id="a__b-1", model_patch=patch)
        verdict = grade_node(task(), sub, Run(outcomes=good, exit_code=0, patch_method=method))
        assert verdict.status == "unresolved" and verdict.empty_patch
        assert verdict.task_defect and verdict.reason.startswith("task defect: ")
    bad = {**good, "t.test.js:f": TestOutcome("failed", "boom")}
    empty = Submission(instance_id="a__b-1", model_patch="")
    sound = grade_node(task(), empty, Run(outcomes=bad, exit_code=1, patch_method="empty"))
    assert sound.status == "unresolved" and not sound.task_defect


def test_a_runner_that_wrote_no_results_is_quoted_not_called_unfinished() -> None:
    from swebounty.node.evaluate import _last_words

    stderr = (
        "Error: Cannot find module '../build'\nRequire stack:\n- /ws/test/a.test.js\n"
        "    at Module._resolveFilename (node:internal/modules/cjs/loader:1140:15)\n"
        "    at Module._load (node:internal/modules/cjs/loader:981:27)\n\nNode.js v20.11.0\n"
    )
    assert _last_words(stderr) == "; it said: Error: Cannot find module '../build'"
    assert _last_words("boom\n    at f (x.js:1:1)\n") == "; it said: boom"
    assert _last_words("") == ""
