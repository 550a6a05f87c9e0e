"""What package.json, lockfiles, .nvmrc and CI files say: runner calls, Node constraints."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from swebounty.envs.node_project import ci_matrix, read_project
from swebounty.envs.node_scripts import find_runner


def scripts(**kw: str) -> dict[str, object]:
    return {"scripts": kw}


def test_the_full_suite_call_of_a_chain_of_scripts() -> None:
    # dayjs: one file under several time zones first, then the whole suite.
    call = find_runner(scripts(
        test="TZ=Pacific/Auckland npm run test-tz && TZ=Europe/London npm run test-tz && jest",
        **{"test-tz": "date && jest test/timezone.test --coverage=false"},
    ))  # fmt: skip
    assert call is not None and call.runner == "jest" and call.paths == [] and call.flags == []


def test_node_flags_and_wrappers_are_seen_through() -> None:
    call = find_runner(
        scripts(test="node --experimental-vm-modules node_modules/jest/bin/jest.js --coverage")
    )
    assert call is not None
    assert (call.runner, call.node_flags, call.flags) == ("jest", ["--experimental-vm-modules"], [])
    # axios: npm run chains, a wrapper script, a glob; lint and karma are not test runners.
    call = find_runner(scripts(
        test="npm run test:eslint && npm run test:mocha && npm run test:exports",
        **{"test:eslint": "node bin/ssl_hotfix.js eslint lib/**/*.js",
           "test:mocha": "node bin/ssl_hotfix.js mocha test/unit/**/*.js --timeout 30000 --exit",
           "test:exports": "node bin/ssl_hotfix.js mocha test/module/test.js --timeout 30000"},
    ))  # fmt: skip
    assert call is not None and call.runner == "mocha"
    assert call.paths == ["test/unit/**/*.js"] and call.flags == ["--timeout", "30000"]


def test_reporter_and_bail_flags_are_the_harness_s() -> None:
    call = find_runner(scripts(
        test="mocha --require test/support/env --reporter spec --bail --check-leaks test/ test/acceptance/"
    ))  # fmt: skip
    assert call is not None
    assert call.flags == ["--require", "test/support/env", "--check-leaks"]
    assert call.paths == ["test/", "test/acceptance/"]


def test_env_assignments_and_cross_env_are_kept() -> None:
    call = find_runner(scripts(test="cross-env NODE_ENV=test TZ=UTC vitest run --coverage"))
    assert (
        call is not None
        and call.runner == "vitest"
        and call.env == {"NODE_ENV": "test", "TZ": "UTC"}
    )


def test_a_runner_among_dependencies_when_no_script_names_one() -> None:
    call = find_runner({"scripts": {"test": "echo no tests"}, "devDependencies": {"mocha": "^9"}})
    assert call is not None and call.runner == "mocha"
    assert find_runner({"scripts": {"test": "tsc && eslint ."}}) is None


def test_ci_matrix(tmp_path: Path) -> None:
    wf = tmp_path / ".github" / "workflows"
    wf.mkdir(parents=True)
    (wf / "ci.yml").write_text(
        "jobs:\n  t:\n    strategy:\n      matrix:\n        node-version: [14.x, 16.x, '18']\n"
        "    steps:\n      - uses: actions/setup-node@v3\n        with:\n"
        "          node-version: ${{ matrix.node-version }}\n"
    )
    (tmp_path / ".travis.yml").write_text("language: node_js\nnode_js:\n  - 10\n  - '12'\n")
    assert ci_matrix(tmp_path) == [10, 12, 14, 16, 18]


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_read_project(tmp_path: Path) -> None:
    pkg = {"engines": {"node": ">=16"}, "packageManager": "pnpm@8.6.0+sha256.abc",
           "scripts": {"test": "vitest"}, "devDependencies": {"vitest": "^0.34"}}  # fmt: skip
    project = read_project(write(tmp_path, {
        "package.json": json.dumps(pkg), ".nvmrc": "v18\n",
        "pnpm-lock.yaml": "lockfileVersion: '6.0'\n",
    }))  # fmt: skip
    assert (project.manager, project.manager_version) == ("pnpm", "8.6.0")
    assert project.lockfile == "pnpm-lock.yaml" and project.lockfile_version == 6
    assert project.constraints.pinned == "18" and project.constraints.engines == ">=16"
    assert project.runner is not None and project.runner.runner == "vitest"


def test_lock_digest_follows_the_lockfile_only(tmp_path: Path) -> None:
    a = write(tmp_path / "a", {"package.json": '{"name": "x", "devDependencies": {"jest": "^29"}}',
                               "yarn.lock": "# yarn lockfile v1\n"})  # fmt: skip
    b = write(tmp_path / "b", {"package.json": '{"name": "y", "version": "2.0.0", '
                               '"devDependencies": {"jest": "^29"}}', "yarn.lock": "# yarn lockfile v1\n"})  # fmt: skip
    first, second = read_project(a), read_project(b)
    assert first.manager == "yarn" and first.lock_digest == second.lock_digest
    (b / "yarn.lock").write_text("# yarn lockfile v1\nleft-pad@1:\n")
    assert read_project(b).lock_digest != first.lock_digest


def test_lock_digest_is_the_one_cache_keys_were_made_with(tmp_path: Path) -> None:
    """The digest is a cache key: hashing the lockfile in chunks gives what reading it whole
    gave (a lockfile of megabytes spans many chunks), pinned here."""
    package = {"name": "x", "devDependencies": {"jest": "^29"}}
    lock = "# yarn lockfile v1\n" + '"left-pad@^1": version "1.3.0"\n' * 40_000  # 1.2 MB
    ws = write(tmp_path, {"package.json": json.dumps(package), "yarn.lock": lock,
                          ".npmrc": "fund=false\n"})  # fmt: skip
    whole = hashlib.sha256()
    deps = {k: package.get(k) for k in ("dependencies", "devDependencies", "optionalDependencies",
                                        "peerDependencies", "overrides", "resolutions",
                                        "workspaces", "pnpm")}  # fmt: skip
    whole.update(json.dumps(deps, sort_keys=True).encode())
    for name in ("yarn.lock", ".npmrc", ".yarnrc", ".yarnrc.yml"):
        if (ws / name).is_file():
            whole.update(name.encode() + b"\0" + (ws / name).read_bytes())
    digest = read_project(ws).lock_digest
    assert digest == whole.hexdigest()[:16] == "ae14df95f210633a"


def test_not_a_node_project(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a Node project"):
        read_project(tmp_path)


def test_the_scripts_other_runner_calls_and_their_variables() -> None:
    from swebounty.envs.node_scripts import other_runner_calls

    pkg = scripts(
        test="TZ=Pacific/Auckland npm run test-tz && TZ=Europe/London npm run test-tz && jest",
        **{"test-tz": "date && jest test/timezone.test --coverage=false"},
    )
    others = other_runner_calls(pkg)
    assert [(c.env, c.paths) for c in others] == [
        ({"TZ": "Pacific/Auckland"}, ["test/timezone.test"]),
        ({"TZ": "Europe/London"}, ["test/timezone.test"]),
    ]
    assert other_runner_calls(scripts(test="jest --ci")) == []
