"""Monorepos: the root hands its tests to the workspace packages, each package keeps its own
node_modules, and links to the project's own packages land in the task's workspace."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from repo_helpers import git_repo
from swebounty.envs.node_scripts import find_runner
from swebounty.envs.node_workspaces import (
    delegates_to_workspaces,
    has_project_links,
    keep_nested_modules,
    link_modules,
    nested_packages,
    packages_of_tests,
)
from swebounty.evalcontext import EvalContext
from swebounty.runs import evaluate_one
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Submission, Task

BWRAP_OK, BWRAP_WHY = bwrap_available()


@pytest.mark.parametrize(
    ("script", "delegates"),
    [
        ("npm run test --workspaces --if-present", True),  # Kong/insomnia
        ("npm test -ws", True),
        ("npm run test -w packages/app", True),
        ("pnpm -r test", True),
        ("pnpm --filter './packages/**' test", True),
        ("lerna run test --stream", True),
        ("yarn workspaces run test", True),
        ("yarn workspace @x/app test", True),
        ("cross-env CI=1 turbo run test", True),
        ("nx run-many -t test", True),
        ("jest -w 2", False),
        ("vitest run", False),
        ("npm run build && jest", False),
        ("mocha -r ts-node/register 'test/**/*.ts'", False),
    ],
)
def test_root_scripts_that_hand_the_tests_to_the_packages(script: str, delegates: bool) -> None:
    package = {"scripts": {"test": script}, "devDependencies": {"jest": "^29"}}
    assert delegates_to_workspaces(package) is delegates
    # A delegating root has no runner of its own, whatever its devDependencies hold.
    assert (find_runner(package) is None) is delegates


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_each_test_file_runs_in_the_package_that_holds_it(tmp_path: Path) -> None:
    ws = write(tmp_path / "ws", {
        "package.json": json.dumps({"workspaces": ["packages/*"],
                                    "scripts": {"test": "npm test --workspaces"}}),
        "packages/app/package.json": json.dumps({"scripts": {"test": "jest --coverage"}}),
        "packages/ui/lib/package.json": json.dumps({"scripts": {"test": "vitest run"}}),
        "packages/docs/package.json": json.dumps({"scripts": {"build": "tsc"}}),
    })  # fmt: skip
    found = packages_of_tests(ws, ["packages/app/src/a.test.ts", "packages/ui/lib/x/b.spec.ts",
                               "packages/docs/c.test.js", "packages/app/d.test.ts"])  # fmt: skip
    assert {rel: (call.runner, files) for rel, (call, files) in found.items()} == {
        "packages/app": ("jest", ["src/a.test.ts", "d.test.ts"]),
        "packages/ui/lib": ("vitest", ["x/b.spec.ts"]),
    }
    # A package.json that is a link (a patch could plant one) is not read through.
    outside = write(
        tmp_path / "outside", {"package.json": json.dumps({"scripts": {"test": "jest"}})}
    )
    (ws / "packages/docs/package.json").unlink()
    (ws / "packages/docs/package.json").symlink_to(outside / "package.json")
    assert "packages/docs" not in packages_of_tests(ws, ["packages/docs/c.test.js"])


def test_ids_named_as_each_package_s_runner_names_them_find_their_package(tmp_path: Path) -> None:
    from swebounty.envs.node_workspaces import plan_package_runs
    from swebounty.node.evaluate import _file_prefix

    # Kong/insomnia: `npm test --workspaces`; the ids are relative to the package whose log
    # they came from, and the test patch changes only a Jest snapshot.
    ws = write(tmp_path, {
        "package.json": json.dumps({"scripts": {"test": "npm run test --workspaces --if-present"}}),
        "packages/app/package.json": json.dumps({"scripts": {"test": "jest"}}),
        "packages/app/src/a.test.ts": "", "packages/app/src/__snapshots__/a.test.ts.snap": "",
        "packages/app/src/both.test.ts": "",
        "packages/cli/package.json": json.dumps({"scripts": {"test": "jest --silent"}}),
        "packages/cli/src/c.test.ts": "", "packages/cli/src/both.test.ts": "",
        "packages/cli/node_modules/x/package.json": json.dumps({"scripts": {"test": "jest"}}),
    })  # fmt: skip
    expected = ["src/a.test.ts", "src/c.test.ts:c works", "src/both.test.ts",
                "packages/cli/src/both.test.ts"]  # fmt: skip
    plan, mapped = plan_package_runs(
        ws, [], ["packages/app/src/__snapshots__/a.test.ts.snap"], expected, _file_prefix
    )
    assert [(rel, call.runner, files) for call, files, rel in plan] == [
        ("packages/app", "jest", ["src/a.test.ts", "src/both.test.ts"]),
        ("packages/cli", "jest", ["src/both.test.ts", "src/c.test.ts"]),
    ]
    # The changed package claims an id both packages could own; a root path says which.
    assert mapped == ["packages/app/src/a.test.ts", "packages/cli/src/c.test.ts:c works",
                      "packages/app/src/both.test.ts", "packages/cli/src/both.test.ts"]  # fmt: skip
    # An id that names no file: the changed packages run whole.
    plan, _ = plan_package_runs(ws, [], ["packages/app/x.snap"], ["a title"], _file_prefix)
    assert [(rel, files) for _, files, rel in plan] == [("packages/app", None)]


def _install_tree(build: Path) -> None:
    """What npm leaves after installing a workspace: hoisted packages, a link to a package of
    the project itself, and a package's own node_modules."""
    write(build, {
        "node_modules/dep/index.js": "module.exports = 1\n",
        "node_modules/@s/other/index.js": "module.exports = 2\n",
        "packages/app/node_modules/dep/index.js": "module.exports = 'app pins its own'\n",
        "packages/app/src/index.js": "",
        "packages/lib/index.js": "module.exports = 'lib, as installed'\n",
    })  # fmt: skip
    (build / "node_modules/@s/lib").symlink_to("../../packages/lib")
    (build / "node_modules/.bin").mkdir()
    (build / "node_modules/.bin/dep").symlink_to("../dep/index.js")


def test_a_workspace_gets_every_package_s_modules_and_links_to_its_own_packages(
    tmp_path: Path,
) -> None:
    build, env = tmp_path / "build", tmp_path / "env"
    _install_tree(build)
    env.mkdir()
    os.replace(build / "node_modules", env / "node_modules")
    assert keep_nested_modules(build, env) == ["packages/app"]
    assert nested_packages(env) == ["packages/app"]
    assert has_project_links(env / "node_modules")

    ws = write(tmp_path / "ws", {"packages/lib/index.js": "module.exports = 'lib, patched'\n",
                                 "packages/app/src/index.js": ""})  # fmt: skip
    assert link_modules(env / "node_modules", ws, "")
    assert link_modules(env / "nested/packages/app/node_modules", ws, "packages/app")
    modules = ws / "node_modules"
    assert modules.is_dir() and not modules.is_symlink()
    assert (modules / "dep").resolve() == (env / "node_modules/dep").resolve()
    assert (modules / "@s/other").resolve() == (env / "node_modules/@s/other").resolve()
    # The link to the project's own package lands on the task's copy, not the installed one.
    assert (modules / "@s/lib/index.js").read_text() == "module.exports = 'lib, patched'\n"
    assert (modules / ".bin/dep").resolve() == (env / "node_modules/dep/index.js").resolve()
    own = ws / "packages/app/node_modules/dep/index.js"
    assert own.read_text() == "module.exports = 'app pins its own'\n"
    # A node_modules already there (the patch's) is left alone.
    assert not link_modules(env / "node_modules", ws, "")


def test_no_modules_are_linked_through_a_link_the_patch_planted(tmp_path: Path) -> None:
    env = write(tmp_path / "env", {"nested/packages/app/node_modules/dep/index.js": ""})
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    (ws / "packages").mkdir(parents=True)
    (ws / "packages/app").symlink_to(outside)
    assert not link_modules(env / "nested/packages/app/node_modules", ws, "packages/app")
    assert list(outside.iterdir()) == []
    assert not link_modules(env / "nested/packages/app/node_modules", ws, "packages/gone")


def test_a_plain_install_has_no_project_links(tmp_path: Path) -> None:
    modules = write(tmp_path, {"node_modules/dep/index.js": "", "node_modules/.pnpm/x/y": ""})
    (modules / "node_modules/x").symlink_to(".pnpm/x")
    assert not has_project_links(modules / "node_modules")


# ---------------------------------------------------------------------------- end to end

_MONOREPO = {
    "package.json": json.dumps({
        "name": "mono", "private": True, "workspaces": ["packages/*"],
        "scripts": {"test": "npm run test --workspaces --if-present"},
        "devDependencies": {"mocha": "10.8.2"},
    }),
    "packages/util/package.json": json.dumps({"name": "@mono/util", "version": "1.0.0",
                                              "main": "index.js"}),
    # The bug: lives in another package than the tests, reached through the workspace link.
    "packages/util/index.js": "exports.double = n => n + n + 1\n",
    "packages/app/package.json": json.dumps({
        "name": "@mono/app", "version": "1.0.0", "main": "index.js",
        "scripts": {"test": "mocha --reporter dot test/"},
        "dependencies": {"@mono/util": "1.0.0"},
        # Not the root's version: npm installs it in packages/app/node_modules.
        "devDependencies": {"mocha": "10.7.3"},
    }),
    "packages/app/index.js": "const { double } = require('@mono/util')\n"
                             "exports.quadruple = n => double(double(n))\n",
    "packages/app/test/old.test.js": "const assert = require('assert')\n"
                                     "it('loads', () => assert.ok(require('..').quadruple))\n",
    "packages/app/test/cases.test.js": "const assert = require('assert')\n"
                                       "const { quadruple } = require('..')\n"
                                       "it('cases', () => { for (const [n, want] of require('./cases.json'))"
                                       " assert.strictEqual(quadruple(n), want) })\n",
    "packages/app/test/cases.json": "[]\n",
}  # fmt: skip

_FIX = """diff --git a/packages/util/index.js b/packages/util/index.js
--- a/packages/util/index.js
+++ b/packages/util/index.js
@@ -1 +1 @@
-exports.double = n => n + n + 1
+exports.double = n => n + n
"""

_TEST = """diff --git a/packages/app/test/app.test.js b/packages/app/test/app.test.js
new file mode 100644
--- /dev/null
+++ b/packages/app/test/app.test.js
@@ -0,0 +1,6 @@
+const assert = require('assert')
+const { quadruple } = require('..')
+describe('quadruple', () => {
+  it('multiplies by four', () => assert.strictEqual(quadruple(3), 12))
+  it('runs with its own mocha', () => assert.match(require('mocha/package.json').version, /^10\\.7\\./))
+})
"""


# A test patch that changes no test file, only its data (Multi-SWE-bench's insomnia task
# changes a Jest snapshot): the package is found from the data's path.
_DATA = """diff --git a/packages/app/test/cases.json b/packages/app/test/cases.json
--- a/packages/app/test/cases.json
+++ b/packages/app/test/cases.json
@@ -1 +1 @@
-[]
+[[3, 12], [0, 0]]
"""


def _monorepo_mirror(repos: Path) -> str:
    src = git_repo(repos.parent / "src", _MONOREPO, when="2025-06-01T00:00:00Z")
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(src), str(repos / "mono__repo")], check=True
    )
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


@pytest.mark.sandbox
@pytest.mark.network  # mocha comes from npm's registry once
@pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")
def test_a_monorepo_task_runs_in_its_package_and_sees_the_patched_sibling(tmp_path: Path) -> None:
    repos = tmp_path / "repos"
    repos.mkdir()
    base = _monorepo_mirror(repos)
    # Ids as the package's own runner names them (Multi-SWE-bench's insomnia tasks) and from
    # the repository's root: both are matched.
    task = Task(
        instance_id="mono__repo-1", repo="mono/repo", base_commit=base, patch=_FIX,
        test_patch=_TEST, ecosystem="node",
        FAIL_TO_PASS=["test/app.test.js:quadruple multiplies by four"],
        PASS_TO_PASS=["packages/app/test/app.test.js:quadruple runs with its own mocha",
                      "test/old.test.js"],
    )  # fmt: skip
    ctx = EvalContext.create(cache_dir=tmp_path / "cache", runs_dir=tmp_path / "runs",
                             repos_dir=repos)  # fmt: skip
    gold = evaluate_one(task, Submission(instance_id=task.instance_id, model_patch=_FIX), ctx,
                        tmp_path / "runs" / "gold")  # fmt: skip
    assert gold.status == "resolved", (gold.reason, gold.tests)
    empty = evaluate_one(task, Submission(instance_id=task.instance_id), ctx,
                         tmp_path / "runs" / "empty")  # fmt: skip
    assert empty.status == "unresolved", empty.reason
    status = {t.test_id: t.status for t in empty.tests}
    assert status == {
        "test/app.test.js:quadruple multiplies by four": "failed",
        "packages/app/test/app.test.js:quadruple runs with its own mocha": "passed",
        "test/old.test.js": "passed",
    }

    data_task = task.model_copy(update={
        "instance_id": "mono__repo-2", "test_patch": _DATA,
        "FAIL_TO_PASS": ["test/cases.test.js"], "PASS_TO_PASS": ["test/old.test.js:loads"],
    })  # fmt: skip
    gold = evaluate_one(data_task, Submission(instance_id="mono__repo-2", model_patch=_FIX), ctx,
                        tmp_path / "runs" / "gold-2")  # fmt: skip
    assert gold.status == "resolved", (gold.reason, gold.tests)
    empty = evaluate_one(data_task, Submission(instance_id="mono__repo-2"), ctx,
                         tmp_path / "runs" / "empty-2")  # fmt: skip
    assert [(t.test_id, t.status) for t in empty.tests] == [
        ("test/cases.test.js", "failed"),
        ("test/old.test.js:loads", "passed"),
    ]
