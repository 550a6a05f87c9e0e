"""How a project's own scripts are read: runners behind npm-run-all, node --test, Jasmine,
scripts that are programs of the project's own, the build steps before the runner, and which
test files a test patch of snapshots alone concerns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repo_helpers import git_repo
from swebounty.envs.node_scripts import build_steps, find_runner
from swebounty.node.prepare import needs_build, no_runner, steps_for
from swebounty.node.selection import files_to_run, snapshot_owner


def _package(deps: tuple[str, ...] = ("mocha",), **scripts: str) -> dict[str, Any]:
    return {"scripts": scripts, "devDependencies": dict.fromkeys(deps, "*")}


def test_runners_behind_npm_run_all_and_node_s_own() -> None:
    package = _package(test="npm-run-all -s build test:*", build="babel src -d lib",
                       **{"test:lint": "eslint .", "test:unit": "mocha test/unit",
                          "test:unit:slow": "mocha test/slow"})  # fmt: skip
    call = find_runner(package)
    assert call is not None and (call.runner, call.paths) == ("mocha", ["test/unit"])
    call = find_runner(_package(test="node --test --test-reporter=spec --import tsx test/"))
    assert call is not None and call.runner == "nodetest" and call.paths == ["test/"]
    assert "--test-reporter=spec" not in call.flags and "--import" in call.flags
    call = find_runner(_package(test="jasmine --config=spec/jasmine.json --random=false"))
    assert call is not None and call.runner == "jasmine"
    assert call.flags == ["--config=spec/jasmine.json", "--random=false"]


def test_a_script_that_is_a_program_of_the_project_s_own(tmp_path: Path) -> None:
    git_repo(tmp_path, {"Makefile.js": "exec(`${MOCHA} ${TEST_FILES}`)\n"})
    package = _package(("mocha", "jest"), test="node Makefile.js test")
    call = find_runner(package, tmp_path)
    # The runner its program names, for the test files the harness names, never a suite of
    # the runner's own choosing.
    assert call is not None and call.runner == "mocha" and call.files_only
    assert call.script == "node Makefile.js test"
    assert find_runner(package) is None  # without the file: two runners, no telling which
    assert "'node Makefile.js test' runs no test runner" in no_runner(package)
    # Without a test script at all, the one runner installed runs its suite as it would.
    plain = find_runner(_package(("mocha",)))
    assert plain is not None and plain.runner == "mocha" and not plain.files_only


def test_build_steps_are_what_npm_test_runs_first() -> None:
    assert build_steps(_package(pretest="npm run lint && npm run build", test="mocha",
                                lint="eslint .", build="tsc")) == ["( tsc )  # npm run build"]  # fmt: skip
    steps = build_steps(_package(test="tsc --noEmit && npm run build && nyc mocha", build="x"))
    assert steps == ["( x )  # npm run build"]
    # Run without npm: its pre and post scripts, and the scripts it runs, inlined.
    nested = _package(test="npm run build && mocha", prebuild="rimraf lib",
                      build="npm run compile -- --quiet && yarn copy", compile="tsc", copy="cp a b")  # fmt: skip
    assert build_steps(nested) == [
        "( rimraf lib ) && ( ( ( tsc ) ) -- --quiet && ( ( cp a b ) ) )  # npm run build"
    ]
    assert build_steps(_package(test="rollup -c && mocha test/")) == ["rollup -c"]
    assert build_steps(_package(test="npm-run-all build test:*", build="babel src -d lib",
                                **{"test:unit": "mocha"})) == ["( babel src -d lib )  # npm run build"]  # fmt: skip
    assert build_steps(_package(test="mocha && npm run build", build="x")) == []
    # dayjs: a script before the suite that runs its time-zone tests after printing the date.
    dayjs = _package(("jest",), test="TZ=Pacific/Auckland npm run test-tz && jest",
                     **{"test-tz": "date && jest test/timezone.test --coverage=false"})  # fmt: skip
    assert build_steps(dayjs) == []


def test_a_build_the_tests_import(tmp_path: Path) -> None:
    git_repo(tmp_path, {"src/lib.js": "x", "test/a.test.js": "const a = require('../build/lib')\n",
                        "test/b.test.js": "import b from '../src/lib.js'\n"})  # fmt: skip
    package = _package(test="mocha", build="node build.js")
    assert needs_build(package, tmp_path, ["test/a.test.js"])
    assert not needs_build(package, tmp_path, ["test/b.test.js"])
    # TypeScript: a declaration file, and the ESM style that names the output of a .ts file.
    (tmp_path / "src" / "types.d.ts").write_text("export type T = 1\n")
    (tmp_path / "src" / "util.ts").write_text("export const u = 1\n")
    (tmp_path / "test" / "e.test.ts").write_text(
        "import {T} from '../src/types'\nimport {u} from '../src/util.js'\n"
    )
    assert not needs_build(package, tmp_path, ["test/e.test.ts"])
    # A `main` the checkout lacks counts only when a test imports the package itself.
    built_main = {**package, "name": "pkg", "main": "dist/index.js"}
    assert not needs_build(built_main, tmp_path, ["test/b.test.js"])
    (tmp_path / "test" / "c.test.js").write_text("const pkg = require('..')\n")
    (tmp_path / "test" / "d.test.js").write_text("import pkg from 'pkg'\n")
    assert needs_build(built_main, tmp_path, ["test/c.test.js"])
    assert needs_build(built_main, tmp_path, ["test/d.test.js"])
    assert not needs_build(package, tmp_path, ["test/c.test.js"])  # no main: nothing built
    assert steps_for(package, tmp_path, ["test/a.test.js"]) == [
        "( node build.js )  # npm run build"
    ]
    assert steps_for(_package(test="mocha"), tmp_path, ["test/a.test.js"]) == []  # no build


def test_a_test_patch_of_snapshots_runs_the_files_they_belong_to(tmp_path: Path) -> None:
    git_repo(tmp_path, {"src/a.test.js": "", "src/__snapshots__/a.test.js.snap": "",
                        "test/b.test.js": ""})  # fmt: skip
    assert snapshot_owner("src/__snapshots__/a.test.js.snap") == "src/a.test.js"
    assert snapshot_owner("__snapshots__/a.test.ts.snap") == "a.test.ts"
    assert snapshot_owner("src/a.test.js") is None
    patch = (
        "diff --git a/src/__snapshots__/a.test.js.snap b/src/__snapshots__/a.test.js.snap\n"
        "--- a/src/__snapshots__/a.test.js.snap\n+++ b/src/__snapshots__/a.test.js.snap\n"
    )

    def file_of(test_id: str) -> str:
        return test_id.split(":")[0] if ".js" in test_id else ""

    ids = ["src/a.test.js:renders", "test/b.test.js"]
    assert files_to_run(tmp_path, [], patch, ids, file_of) == (
        ["src/a.test.js", "test/b.test.js"],
        False,
    )
    # An id that names no file (a Mocha full title), or a file not in the checkout: the suite.
    assert files_to_run(tmp_path, [], patch, ["renders a thing"], file_of)[1]
    assert files_to_run(tmp_path, [], patch, ["lib/gone.test.js:x"], file_of)[1]


def test_a_build_is_kept_per_tree_and_reused(tmp_path: Path) -> None:
    from swebounty.node.buildcache import keep, listing, restore

    ws = git_repo(tmp_path / "ws", {"src/a.js": "a\n", "test/a.test.js": "t\n"})
    before = listing(ws)
    (ws / "build").mkdir()
    (ws / "build" / "a.js").write_text("built\n")
    (ws / "build" / "link.js").symlink_to("/etc/passwd")  # never kept: not a regular file
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "x.js").write_text("not the build's")
    cache = tmp_path / "cache"
    cache.mkdir()
    assert keep(cache, "k", ws, before) == 1
    other = git_repo(tmp_path / "other", {"src/a.js": "a\n"})
    assert restore(cache, "k", other) == 1
    assert (other / "build" / "a.js").read_text() == "built\n"
    assert restore(cache, "unknown", other) is None
