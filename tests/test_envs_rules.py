"""Generic rules for failure classes met on repositories nobody chose (issue 25), each on a
package index the test builds and serves locally (tests/pkg_index.py) with the real uv: no
network, and the same answer every time.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from pkg_index import PackageIndex, used_by_uv
from repo_helpers import git_repo
from swebounty.envs import DepSet, EnvBuildError, EnvManager, ResolvedSpec
from swebounty.envs.interpreters import Interpreter, discover

UTC = timezone.utc
OLD = datetime(2020, 3, 1, tzinfo=UTC)
CUTOFF = datetime(2021, 1, 1, tzinfo=UTC)


def two_interpreters() -> tuple[Interpreter, Interpreter]:
    found = discover()
    minors = {i.minor: i for i in reversed(found)}  # one per minor, the first found kept
    if len(minors) < 2:
        pytest.skip("needs two Python interpreters of different minors")
    newest, older = sorted(minors.values(), key=lambda i: i.minor, reverse=True)[:2]
    return newest, older


def cp_tag(interp: Interpreter) -> str:
    return f"cp{interp.minor[0]}{interp.minor[1]}-none-any"


def spec(newest: Interpreter, older: Interpreter, plans: list[DepSet]) -> ResolvedSpec:
    return ResolvedSpec(
        python=newest.version,
        python_fallbacks=[older.version],
        cutoff=CUTOFF,
        install_project=False,
        plans=plans,
    )


def test_a_refused_sdist_name_tries_an_older_interpreter_not_a_pin(tmp_path: Path) -> None:
    """uv refuses `.tar.bz2` sdists (not PEP 625). That is no conflict a pin could fix: the
    older interpreter, which has a wheel of the time, builds the environment."""
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    index.sdist("oldpkg", "1.0", uploaded=OLD, filename="oldpkg-1.0.tar.bz2")
    index.wheel("oldpkg", "1.0", uploaded=OLD, tag=cp_tag(older))
    index.wheel("six", "1.15.0", uploaded=OLD)
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    with used_by_uv(index, tmp_path / "uv-cache"):
        env = EnvManager(tmp_path / "cache").ensure(
            spec(newest, older, [DepSet(label="tests", lines=["oldpkg", "six"])]), ws
        )
    assert env.interpreter == older.version
    assert "oldpkg==1.0" in env.lock and "six==1.15.0" in env.lock
    why = "\n".join(env.why)
    assert f"Python {newest.minor_str}: oldpkg has only source distributions" in why
    assert "(sdist)" in why and f"trying Python {older.minor_str}" in why


def test_a_refused_sdist_on_every_interpreter_moves_to_the_next_plan(tmp_path: Path) -> None:
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    index.sdist("oldpkg", "1.0", uploaded=OLD, filename="oldpkg-1.0.tar.bz2")
    index.wheel("six", "1.15.0", uploaded=OLD)
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    plans = [DepSet(label="tox deps", lines=["oldpkg", "six"]), DepSet(label="none")]
    with used_by_uv(index, tmp_path / "uv-cache"):
        env = EnvManager(tmp_path / "cache").ensure(spec(newest, older, plans), ws)
        assert env.interpreter == newest.version  # the smaller plan on the newest again
        assert "oldpkg" not in env.lock
        assert "plan 1 fails on every interpreter" in "\n".join(env.why)

        with pytest.raises(EnvBuildError) as info:
            EnvManager(tmp_path / "cache2").ensure(spec(newest, older, plans[:1]), ws)
    error = info.value
    assert (error.kind, error.package) == ("sdist", "oldpkg")
    first = str(error).splitlines()[0]
    assert "oldpkg has only source distributions whose file names uv refuses" in first
    assert "pin" not in str(error).split("--- tail")[0] + str(error).split("\n---\n")[-1]
