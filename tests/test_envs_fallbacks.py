"""The environment build's fallback chain (interpreters, then plans), its failures said in
words, and a small sdist built rather than moving to an older Python: offline, with a
stand-in for uv.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
import uv as uv_package

from repo_helpers import git_repo
from swebounty.envs import DepSet, EnvBuildError, EnvManager, ResolvedSpec
from swebounty.envs.failures import StepFailed
from swebounty.envs.interpreters import discover

UTC = timezone.utc


FAKE_UV = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
open({calls!r}, "a").write(json.dumps(args) + "\\n")
if args[0] == "venv":
    sys.exit(subprocess.call([{real!r}, *args]))
if args[:2] == ["pip", "compile"]:
    text = open(next(a for a in args if a.endswith(".in"))).read()
    python = args[args.index("--python") + 1]
    if "needslib-user" in text:  # an extra's package that needs a system library to build
        excluded = open(args[args.index("--excludes") + 1]).read() if "--excludes" in args else ""
        print(("" if "needslib" in excluded.split() else "needslib==0.1\\n") + "needslib-user==1.0")
        print("six==1.16.0")
        sys.exit(0)
    if "needslib" in text:
        sys.stderr.write("  x Failed to build `needslib==0.1`\\n  |-> The build backend returned "
                         "an error\\n  fatal error: lib/needed.h: No such file or directory\\n")
        sys.exit(1)
    if "numpy-built" in text and "numpy" in args:  # its build needs numpy with no wheel here
        sys.stderr.write("  x Failed to download and build `numpy-built==0.1`\\n  cause: "
                         "Because numpy==1.17.3 has no usable wheels ...\\nhint: Wheels are "
                         "required for `numpy` because building from source is disabled\\n")
        sys.exit(1)
    if "fulldisk" in text and not os.path.exists({calls!r} + ".full"):  # once
        open({calls!r} + ".full", "w").close()
        sys.stderr.write("error: Failed to download `fulldisk==1.0`\\n  Caused by: failed to "
                         "write to file: No space left on device (os error 28)\\n")
        sys.exit(1)
    if "killedonce" in text and not os.path.exists({calls!r} + ".killed"):  # as by Ctrl-C
        open({calls!r} + ".killed", "w").close()
        os.kill(os.getpid(), 9)
    if "brokenpkg" in text:
        sys.stderr.write("  x Failed to build `brokenpkg==0.1`\\n  |-> The build backend "
                         "returned an error\\n")
        sys.exit(1)
    print("six==1.16.0")
    sys.exit(0)
if args[:2] == ["pip", "install"] and "-r" in args:
    if "needslib==" in open(args[args.index("-r") + 1]).read():  # built at install, like uv
        sys.stderr.write("  x Failed to build `needslib==0.1`\\n  |-> The build backend returned "
                         "an error\\n  fatal error: lib/needed.h: No such file or directory\\n")
        sys.exit(1)
sys.exit(0)  # pip install / freeze: nothing to do
"""


def fake_uv(tmp_path: Path) -> Path:
    script = tmp_path / "uv"
    script.write_text(
        FAKE_UV.format(
            python=sys.executable,
            calls=str(tmp_path / "calls.jsonl"),
            real=uv_package.find_uv_bin(),
        )
    )
    script.chmod(0o755)
    return script


def two_interpreters() -> list[str]:
    found = discover()
    if len(found) < 2:
        pytest.skip("needs two Python interpreters to walk the fallbacks")
    return [found[0].version, found[1].version]


def spec_with_plans(plans: list[DepSet]) -> ResolvedSpec:
    newest, older = two_interpreters()
    return ResolvedSpec(
        python=newest,
        python_fallbacks=[older],
        cutoff=datetime.now(UTC) - timedelta(days=30),
        install_project=False,
        plans=plans,
    )


def test_a_package_that_builds_nowhere_moves_to_the_next_plan(tmp_path: Path) -> None:
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    # brokenpkg comes with another line's package (an extra's): no line of the plan to drop
    # alone (prune.py), so the next plan goes without it.
    spec = spec_with_plans(
        [
            DepSet(label="all extras", lines=["brokenpkg-user"]),
            DepSet(label="test extras", lines=["six"]),
        ]
    )
    env = manager.ensure(spec, ws)
    assert "six==1.16.0" in env.lock
    why = "\n".join(env.why)
    older = spec.python_fallbacks[0]
    assert "building brokenpkg 0.1 from source failed during resolve dependencies" in why
    assert f"trying Python {'.'.join(older.split('.')[:2])}" in why  # interpreters first
    assert "plan 1 fails on every interpreter" in why and "trying plan 2" in why
    calls = [json.loads(c) for c in (tmp_path / "calls.jsonl").read_text().splitlines()]
    compiled = [c for c in calls if c[:2] == ["pip", "compile"] and ":all:" not in c]
    assert len(compiled) == 3  # plan 1 on both interpreters, then plan 2 on the newest
    log = (manager.cache.spec_dir(env.spec_key or "") / "build.log").read_text()
    assert log.count("Failed to build `brokenpkg==0.1`") == 2  # each failure kept in the log


def test_numpy_is_never_built_from_source_while_an_older_python_remains(
    tmp_path: Path,
) -> None:
    """bottleneck 1.3.2's build wants numpy==1.17.3, which has no wheel for Python 3.9: uv
    compiled numpy inside the resolution for 30 minutes. Wheels only, while an older
    interpreter remains: the failure is a build failure, and the older one builds."""
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    spec = spec_with_plans([DepSet(label="tests", lines=["numpy-built", "six"])])
    env = manager.ensure(spec, ws)
    older = spec.python_fallbacks[0]
    assert env.interpreter == older
    why = "\n".join(env.why)
    assert f"trying Python {'.'.join(older.split('.')[:2])}" in why
    assert "dropped alone" not in why  # the line stays: an older Python gets it
    calls = [json.loads(c) for c in (tmp_path / "calls.jsonl").read_text().splitlines()]
    compiled = [c for c in calls if c[:2] == ["pip", "compile"] and ":all:" not in c]
    wheels_only = [c for c in compiled if "--only-binary" in c]
    assert wheels_only and all(c[c.index("--only-binary") + 1] == "numpy" for c in wheels_only)
    assert "--only-binary" not in compiled[-1]  # the oldest Python may build it


def test_a_full_disk_is_not_remembered_as_the_spec_s_failure(tmp_path: Path) -> None:
    """A download that failed on a full disk (`other`) was remembered for the spec, so the
    environment stayed unbuilt after the disk was freed (astropy-14182)."""
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    spec = spec_with_plans([DepSet(label="tests", lines=["fulldisk", "six"])])
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    with pytest.raises(EnvBuildError) as info:
        manager.ensure(spec, ws)
    assert info.value.kind == "disk"
    assert "the disk was full during resolve dependencies" in str(info.value)
    again = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    assert "six==1.16.0" in again.ensure(spec, ws).lock  # built now, not the remembered error


def test_a_step_killed_by_a_signal_is_not_remembered_nor_walked_on(tmp_path: Path) -> None:
    """A run's stop kills the sandboxes and tools of the builds in flight: such a failure was
    remembered as the spec's, and the resumed run gave the task `error` without building
    (matplotlib-23964 in the cold Lite run)."""
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    spec = spec_with_plans([DepSet(label="tests", lines=["killedonce", "six"])])
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    with pytest.raises(EnvBuildError) as info:
        manager.ensure(spec, ws)
    assert info.value.kind == "killed"
    assert "resolve dependencies was killed by SIGKILL" in str(info.value)
    calls = [json.loads(c) for c in (tmp_path / "calls.jsonl").read_text().splitlines()]
    compiled = [c for c in calls if c[:2] == ["pip", "compile"] and ":all:" not in c]
    assert len(compiled) == 1  # no older Python, no other plan: the kill says nothing of them
    assert not list((tmp_path / "cache").rglob("failed.json"))
    again = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    assert "six==1.16.0" in again.ensure(spec, ws).lock  # built now, not a remembered error


def test_a_package_missing_a_system_library_is_dropped_without_trying_older_pythons(
    tmp_path: Path,
) -> None:
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    env = manager.ensure(spec_with_plans([DepSet(label="tests", lines=["needslib", "six"])]), ws)
    assert "six==1.16.0" in env.lock
    why = "\n".join(env.why)
    assert "building needslib 0.1 needs a system library this machine lacks (lib/needed.h)" in why
    assert "dropped alone" in why and "trying Python" not in why
    calls = [json.loads(c) for c in (tmp_path / "calls.jsonl").read_text().splitlines()]
    compiled = [c for c in calls if c[:2] == ["pip", "compile"] and ":all:" not in c]
    assert len(compiled) == 2  # with it on the newest Python, then without it


def test_an_extra_s_package_missing_a_system_library_is_left_out_and_the_plan_kept(
    tmp_path: Path,
) -> None:
    """networkx's `extra` extra brings pygraphviz (graphviz headers missing): the next plan
    went without every extra, scipy too, and its tests skipped at import (networkx-8446)."""
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    spec = spec_with_plans(
        [
            DepSet(label="all extras", lines=["needslib-user", "six"]),
            DepSet(label="test extras", lines=["six"]),
        ]
    )
    env = manager.ensure(spec, ws)
    assert "needslib-user==1.0" in env.lock and "needslib==" not in env.lock
    why = "\n".join(env.why)
    assert "needs a system library this machine lacks (lib/needed.h)" in why
    assert "`needslib` left out, the rest of the plan kept" in why
    assert "trying plan 2" not in why and "trying Python" not in why
    calls = [json.loads(c) for c in (tmp_path / "calls.jsonl").read_text().splitlines()]
    compiled = [c for c in calls if c[:2] == ["pip", "compile"] and ":all:" not in c]
    assert "--excludes" not in compiled[0] and "--excludes" in compiled[-1]


def test_a_package_the_project_itself_needs_is_not_left_out(tmp_path: Path) -> None:
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    spec = spec_with_plans([DepSet(label="tests", lines=["six"])])
    spec.install = ["needslib-user"]  # what the project alone requires
    with pytest.raises(EnvBuildError) as info:
        manager.ensure(spec, ws)
    assert info.value.kind == "system" and info.value.package == "needslib==0.1"
    assert "left out" not in str(info.value)


def test_when_nothing_builds_the_error_says_why_in_words(tmp_path: Path) -> None:
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    manager = EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True)
    spec = spec_with_plans([DepSet(label="only", lines=["brokenpkg-user"])])
    with pytest.raises(EnvBuildError) as info:
        manager.ensure(spec, ws)
    error = info.value
    assert (error.kind, error.package) == ("build", "brokenpkg==0.1")
    first = str(error).splitlines()[0]
    assert first == (
        "environment not built: building brokenpkg 0.1 from source failed during "
        "resolve dependencies (build)."
    )
    # Remembered: the same words come back without building again.
    with pytest.raises(EnvBuildError) as again:
        EnvManager(tmp_path / "cache", uv_bin=fake_uv(tmp_path), offline=True).ensure(spec, ws)
    assert (again.value.kind, again.value.package) == ("build", "brokenpkg==0.1")
    assert str(again.value).splitlines()[0] == first


@pytest.mark.parametrize(
    ("output", "kind", "words"),
    [
        (
            "  x Failed to build `cffi==0.8.6`",
            "build",
            "building cffi 0.8.6 from source failed during install dependencies",
        ),
        (
            "  cause: Because the current Python version (3.12.1) does not satisfy Python<3.10 "
            "and numba==0.53.1 depends on Python<3.10, we can conclude ...",
            "python",
            "numba 0.53.1 supports no Python tried here",
        ),
        (
            "error: No solution found when resolving dependencies\n"
            "  cause: Because there are no versions of zz-no-such-pkg and you require "
            "zz-no-such-pkg, we can conclude that your requirements are unsatisfiable.",
            "resolve",
            "zz-no-such-pkg is not on the package index",
        ),
        (
            "error: No solution found when resolving dependencies\n"
            "  cause: Because pytest==6.0.0 depends on pluggy>=0.12,<1.0 and you require "
            "pluggy==1.0,\n  we can conclude that your requirements are unsatisfiable.\n",
            "resolve",
            "the requirements conflict: Because pytest==6.0.0 depends on pluggy>=0.12,<1.0 and "
            "you require pluggy==1.0, we can conclude that your requirements are unsatisfiable.",
        ),
        (
            "error sending request for url (https://pypi.org/simple/six/)",
            "network",
            "the package index was unreachable during install dependencies",
        ),
    ],
)
def test_failures_are_said_in_words(output: str, kind: str, words: str) -> None:
    from swebounty.envs.failures import classify

    assert classify(output) == kind
    assert StepFailed("install dependencies", kind, output).describe() == words


def test_a_step_that_runs_out_of_time_is_a_timeout_not_a_network_failure(tmp_path: Path) -> None:
    from swebounty.envs.steps import run_logged

    with pytest.raises(StepFailed) as info:
        run_logged("resolve dependencies", ["sleep", "5"], tmp_path / "log", timeout=0.2)
    assert info.value.kind == "timeout"
    assert info.value.describe() == "resolve dependencies ran out of time"


WHEEL_UV = """#!{python}
import sys
args = sys.argv[1:]
text = open(next(a for a in args if a.endswith(".in"))).read()
python = args[args.index("--python") + 1]
if python == {newest!r}:
    for name in ("smallpkg", "bigpkg"):
        if name in text:
            sys.stderr.write(f"  Because {{name}}==1.0 has no usable wheels, ...\\n")
            sys.exit(1)
sys.exit(0)
"""


def test_a_small_sdist_is_built_rather_than_moving_to_an_older_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """markupsafe 1.1.1 had no wheels for Python 3.9 yet; moving sphinx 3.5 to 3.8 for it
    skipped the tests that need 3.9. A big one (numpy) still moves the build."""
    from swebounty.envs.steps import Uv
    from swebounty.envs.wheels import wheels_only_older

    found = discover()
    if len(found) < 2:
        pytest.skip("needs two Python interpreters")
    newest, older = found[0], found[1]
    script = tmp_path / "uv"
    script.write_text(WHEEL_UV.format(python=sys.executable, newest=str(newest.executable)))
    script.chmod(0o755)
    sizes = {"smallpkg": 19_151, "bigpkg": 7_315_971}

    def fake_get(url: str, **kwargs: Any) -> httpx.Response:
        name = url.rstrip("/").rsplit("/", 1)[-1]
        files = [{"filename": f"{name}-1.0.tar.gz", "size": sizes[name]}]
        return httpx.Response(200, json={"files": files}, request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", fake_get)
    uvr = Uv(script, tmp_path / "log")
    cutoff = datetime(2020, 12, 1, tzinfo=UTC)
    lock = "smallpkg==1.0\nsix==1.15.0\n"
    assert wheels_only_older(uvr, newest, [older], lock, cutoff, tmp_path) == []
    lock = "bigpkg==1.0\nsmallpkg==1.0\n"
    assert wheels_only_older(uvr, newest, [older], lock, cutoff, tmp_path) == ["bigpkg"]


def test_only_a_valid_distribution_name_is_left_out() -> None:
    from swebounty.envs.leaveout import package_name

    def blamed(package: str) -> str | None:
        return package_name(StepFailed("install", "system", "", package=package))

    assert blamed("PyGraphviz==1.14") == "pygraphviz"
    assert blamed("zope.interface") == "zope-interface"
    for hostile in ("evil\nnumpy", "-e ./x", "../x", "name;rm", ""):
        assert blamed(hostile) is None, hostile
