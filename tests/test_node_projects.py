"""How JavaScript projects really test, each on a small repository made here, evaluated end to
end (gold resolves, empty does not): Jasmine, Vitest, node's own runner, a test script that is a
program of the project's own ending in Mocha, a build step the tests need, and a test patch that
changes a Jest snapshot alone. Their runners come from npm's registry the first time."""

from __future__ import annotations

from pathlib import Path

import pytest

from node_repo_helpers import js_task
from swebounty.evalcontext import EvalContext
from swebounty.runs import evaluate_one
from swebounty.sandbox import bwrap_available
from swebounty.tasks import Submission, Task
from swebounty.verdicts import Verdict

BWRAP_OK, BWRAP_WHY = bwrap_available()
pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.network,
    pytest.mark.slow,
    pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}"),
]

BROKEN = "exports.add = (a, b) => a - b;\n"
FIXED = "exports.add = (a, b) => a + b;\n"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _both(task: Task, cache: Path, tmp: Path) -> tuple[Verdict, Verdict]:
    ctx = EvalContext.create(cache_dir=cache, runs_dir=tmp / "runs", repos_dir=tmp / "repos")
    gold = evaluate_one(task, Submission(instance_id=task.instance_id, model_patch=task.patch),
                        ctx, tmp / "runs" / "gold")  # fmt: skip
    empty = evaluate_one(task, Submission(instance_id=task.instance_id, model_patch=""), ctx,
                         tmp / "runs" / "empty")  # fmt: skip
    assert gold.status == "resolved", gold.reason
    assert empty.status == "unresolved", empty.reason
    assert gold.env_key and gold.env_key.startswith("node-")  # no ecosystem given: found
    return gold, empty


def test_jasmine(cache: Path, tmp_path: Path) -> None:
    base = {
        "package.json": '{"name": "j", "version": "1.0.0", "scripts": {"test": "jasmine"},'
        ' "devDependencies": {"jasmine": "^5.1.0"}}\n',
        "spec/support/jasmine.json": '{"spec_dir": "spec", "spec_files": ["**/*[sS]pec.js"]}\n',
        "lib/add.js": BROKEN,
        "spec/other.spec.js": "describe('other', () => { it('holds', () => expect(1).toBe(1)); });\n",
    }
    tests = {"spec/add.spec.js": "const {add} = require('../lib/add');\n"
             "describe('add', () => { it('adds two numbers', () => expect(add(2, 3)).toBe(5)); });\n"}  # fmt: skip
    task = js_task(tmp_path / "repos", "jas", base, {"lib/add.js": FIXED}, tests,
                   ["spec/add.spec.js:add adds two numbers"], ["other holds"])  # fmt: skip
    _, empty = _both(task, cache, tmp_path)
    assert [t.status for t in empty.tests] == ["failed", "passed"]


def test_vitest(cache: Path, tmp_path: Path) -> None:
    base = {
        "package.json": '{"name": "v", "version": "1.0.0", "scripts": {"test": "vitest run"},'
        ' "devDependencies": {"vitest": "^1.6.0"}}\n',
        "lib/add.js": BROKEN,
        "test/other.test.js": "import { it, expect } from 'vitest';\n"
        "it('holds', () => expect(1).toBe(1));\n",
    }
    tests = {"test/add.test.js": "import { describe, it, expect } from 'vitest';\n"
             "import { add } from '../lib/add';\n"
             "describe('add', () => { it('adds', () => expect(add(2, 3)).toBe(5)); });\n"}  # fmt: skip
    task = js_task(tmp_path / "repos", "vt", base, {"lib/add.js": FIXED}, tests,
                   ["add > adds"], ["test/add.test.js"])  # fmt: skip
    _, empty = _both(task, cache, tmp_path)
    assert [t.status for t in empty.tests] == ["failed", "failed"]


def test_node_s_own_test_runner(cache: Path, tmp_path: Path) -> None:
    base = {
        "package.json": '{"name": "n", "version": "1.0.0", "scripts": {"test": "node --test test/"}}\n',
        "lib/add.js": BROKEN,
    }
    tests = {"test/add.test.js": "const test = require('node:test');\n"
             "const assert = require('node:assert');\nconst {add} = require('../lib/add');\n"
             "test.describe('add', () => { test.it('adds', () => assert.equal(add(2, 3), 5)); });\n"}  # fmt: skip
    task = js_task(tmp_path / "repos", "nt", base, {"lib/add.js": FIXED}, tests,
                   ["test/add.test.js:add adds"], [])  # fmt: skip
    _both(task, cache, tmp_path)


def test_a_test_script_of_the_project_s_own_ending_in_mocha(cache: Path, tmp_path: Path) -> None:
    base = {
        "package.json": '{"name": "m", "version": "1.0.0", "scripts": {"test": "node Makefile.js test"},'
        ' "devDependencies": {"mocha": "^10.2.0"}}\n',
        "Makefile.js": "// runs mocha over the files it lists\n"
        "require('child_process').execFileSync('node_modules/.bin/mocha', ['tests/lib/**/*.js'],"
        " {stdio: 'inherit'});\n",
        "lib/add.js": BROKEN,
        "tests/lib/other.js": "it('other holds', () => {});\n",
    }
    tests = {"tests/lib/add.js": "const assert = require('assert');\n"
             "const {add} = require('../../lib/add');\n"
             "describe('add', () => { it('adds', () => assert.strictEqual(add(2, 3), 5)); });\n"}  # fmt: skip
    task = js_task(tmp_path / "repos", "mk", base, {"lib/add.js": FIXED}, tests,
                   ["tests/lib/add.js:add adds"], ["tests/lib/other.js"])  # fmt: skip
    gold, _ = _both(task, cache, tmp_path)
    assert {t.status for t in gold.tests} == {"passed"}
    # Ids that name no file: mocha's default suite is not what the script runs; said so.
    by_title = task.model_copy(update={"instance_id": "o__mk-2", "FAIL_TO_PASS": ["add adds"]})
    ctx = EvalContext.create(
        cache_dir=cache, runs_dir=tmp_path / "runs", repos_dir=tmp_path / "repos"
    )
    sub = Submission(instance_id="o__mk-2", model_patch=task.patch)
    verdict = evaluate_one(by_title, sub, ctx, tmp_path / "runs" / "titles")
    assert verdict.status == "error" and "'node Makefile.js test'" in verdict.reason


def test_a_build_step_the_tests_need(cache: Path, tmp_path: Path) -> None:
    build = ("const fs = require('fs'); fs.mkdirSync('build', {recursive: true});\n"
             "fs.copyFileSync('src/add.js', 'build/add.js');\n")  # fmt: skip
    base = {
        "package.json": '{"name": "b", "version": "1.0.0", "main": "build/add.js",'
        ' "scripts": {"build": "node scripts/build.js", "pretest": "npm run build",'
        ' "test": "mocha"}, "devDependencies": {"mocha": "^10.2.0"}}\n',
        "scripts/build.js": build,
        "src/add.js": BROKEN,
        ".gitignore": "build/\n",
    }
    tests = {"test/add.test.js": "const assert = require('assert');\n"
             "const {add} = require('../build/add');\n"
             "describe('add', () => { it('adds', () => assert.strictEqual(add(2, 3), 5)); });\n"}  # fmt: skip
    task = js_task(tmp_path / "repos", "bs", base, {"src/add.js": FIXED}, tests,
                   ["test/add.test.js:add adds"], [])  # fmt: skip
    gold, _ = _both(task, cache, tmp_path)
    built = (Path(gold.log_dir or "") / "build_output.txt").read_text()
    assert "( node scripts/build.js )  # npm run build" in built  # without npm: pretest's build
    # The same tree again (a rerun): the kept build is copied in, not built again.
    ctx = EvalContext.create(
        cache_dir=cache, runs_dir=tmp_path / "runs", repos_dir=tmp_path / "repos"
    )
    sub = Submission(instance_id=task.instance_id, model_patch=task.patch)
    again = evaluate_one(task, sub, ctx, tmp_path / "runs" / "again")
    assert again.status == "resolved", again.reason
    assert "1 file(s) reused" in (tmp_path / "runs" / "again" / "build_output.txt").read_text()


def test_a_test_patch_of_a_snapshot_alone(cache: Path, tmp_path: Path) -> None:
    snap = ("// Jest Snapshot v1, https://goo.gl/fbAQLP\n\n"
            "exports[`greet says hello 1`] = `\"{}\"`;\n")  # fmt: skip
    base = {
        "package.json": '{"name": "s", "version": "1.0.0", "scripts": {"test": "jest"},'
        ' "devDependencies": {"jest": "^29.7.0"}}\n',
        "src/greet.js": "exports.greet = (n) => 'hi ' + n;\n",
        "src/greet.test.js": "const {greet} = require('./greet');\n"
        "test('greet says hello', () => expect(greet('x')).toMatchSnapshot());\n",
        "src/__snapshots__/greet.test.js.snap": snap.format("hi x"),
        # Fails whenever it runs: the hidden tests never need it, so it must not run.
        "src/other.test.js": "test('unrelated and broken', () => expect(1).toBe(2));\n",
    }
    task = js_task(tmp_path / "repos", "sn", base,
                   {"src/greet.js": "exports.greet = (n) => 'hello ' + n;\n"},
                   {"src/__snapshots__/greet.test.js.snap": snap.format("hello x")},
                   ["src/greet.test.js:greet says hello"], [])  # fmt: skip
    gold, _ = _both(task, cache, tmp_path)
    assert "other.test.js" not in (Path(gold.log_dir or "") / "junit.xml").read_text()
