"""Generic rules for failure classes met on repositories nobody chose (issue 25), each on a
package index the test builds and serves locally (tests/pkg_index.py) with the real uv: no
network, and the same answer every time.
"""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pkg_index import PackageIndex, used_by_uv
from repo_helpers import git_repo
from swebounty.envs import DepSet, EnvBuildError, EnvManager, ResolvedSpec, metadata, prune, sdists
from swebounty.envs.failures import StepFailed, advice
from swebounty.envs.interpreters import Interpreter, discover
from swebounty.envs.project import plan_deps, read_project

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
    """uv refuses `.tar.bz2` sdists (not PEP 625). That is no conflict a pin could fix: when
    the archive cannot be repacked either, the older interpreter, which has a wheel of the
    time, builds the environment."""
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    index.raw("oldpkg", "oldpkg-1.0.tar.bz2", b"not an archive", uploaded=OLD)
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


def test_a_refused_sdist_on_every_interpreter_drops_that_line_alone(tmp_path: Path) -> None:
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    index.raw("oldpkg", "oldpkg-1.0.tar.bz2", b"not an archive", uploaded=OLD)
    index.wheel("needsold", "1.0", uploaded=OLD, requires=["oldpkg"])
    index.wheel("six", "1.15.0", uploaded=OLD)
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    plans = [DepSet(label="tox deps", lines=["oldpkg", "six"]), DepSet(label="none")]
    with used_by_uv(index, tmp_path / "uv-cache"):
        env = EnvManager(tmp_path / "cache").ensure(spec(newest, older, plans), ws)
        assert env.interpreter == newest.version  # the pruned plan, on the newest again
        assert "six==1.15.0" in env.lock and "oldpkg" not in env.lock
        why = "\n".join(env.why)
        assert "plan 1: `oldpkg` fails on every interpreter" in why
        assert "resolved with tox deps without `oldpkg`" in why

        # Not a line of the plan (a dependency of one): nothing to drop, and no pin advised.
        only = [DepSet(label="tox deps", lines=["needsold", "six"])]
        with pytest.raises(EnvBuildError) as info:
            EnvManager(tmp_path / "cache2").ensure(spec(newest, older, only), ws)
    error = info.value
    assert (error.kind, error.package) == ("sdist", "oldpkg")
    first = str(error).splitlines()[0]
    assert "oldpkg has only source distributions whose file names uv refuses" in first
    assert advice("sdist") in str(error) and "pin" not in advice("sdist")


def test_a_refused_sdist_is_repacked_and_builds_on_the_newest_interpreter(tmp_path: Path) -> None:
    """The release of the time exists only as `.tar.bz2`: repacked as `.tar.gz`, it resolves,
    builds and installs on the newest interpreter, from the lock again after a prune."""
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    index.sdist("oldpkg", "1.0", uploaded=OLD, filename="oldpkg-1.0.tar.bz2", buildable=True)
    index.sdist("oldpkg", "2.0", uploaded=datetime(2022, 1, 1, tzinfo=UTC), buildable=True)
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    plans = [DepSet(label="tests", lines=["oldpkg"])]
    with used_by_uv(index, tmp_path / "uv-cache"):
        manager = EnvManager(tmp_path / "cache")
        env = manager.ensure(spec(newest, older, plans), ws)
        assert env.interpreter == newest.version and "oldpkg==1.0" in env.lock
        assert "oldpkg's .tar.bz2/.tgz sdists repacked as .tar.gz" in "\n".join(env.why)
        ran = subprocess.run([str(env.python), "-c", "import oldpkg; print(oldpkg.BUILT)"])
        assert ran.returncode == 0
        manager.prune(keep_keys=set())  # the environment goes; its lock brings it back
        again = EnvManager(tmp_path / "cache").ensure(spec(newest, older, plans), ws)
    assert again.key == env.key
    assert subprocess.run([str(again.python), "-c", "import oldpkg"]).returncode == 0


def test_a_line_nothing_satisfies_is_dropped_alone_and_the_plan_kept(tmp_path: Path) -> None:
    """tox deps `nose, mock, coverage>=5, psycopg-ancient` in 2015: coverage had no 5 yet and
    the driver is gone from the index. Both lines go, nose and mock stay."""
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    index.wheel("nose", "1.3.7", uploaded=OLD)
    index.wheel("mock", "1.0.1", uploaded=OLD)
    index.wheel("coverage", "3.7", uploaded=OLD)
    index.wheel("coverage", "5.0", uploaded=datetime(2022, 1, 1, tzinfo=UTC))
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    lines = ["nose", "mock", "coverage>=5", "psycopg-ancient"]
    plans = [DepSet(label="tox deps", lines=lines), DepSet(label="none")]
    with used_by_uv(index, tmp_path / "uv-cache"):
        env = EnvManager(tmp_path / "cache").ensure(spec(newest, older, plans), ws)
    assert "nose==1.3.7" in env.lock and "mock==1.0.1" in env.lock
    assert "coverage" not in env.lock
    why = "\n".join(env.why)
    assert "without `psycopg-ancient`" in why and "without `coverage>=5`" in why
    assert env.interpreter == newest.version  # a resolver problem never changes interpreter


def test_lines_that_only_conflict_with_each_other_are_not_dropped(tmp_path: Path) -> None:
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    index.wheel("alpha", "1.0", uploaded=OLD)
    index.wheel("alpha", "2.0", uploaded=OLD)
    index.wheel("beta", "1.0", uploaded=OLD, requires=["alpha>=2"])
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    plans = [DepSet(label="tox deps", lines=["alpha<2", "beta"]), DepSet(label="none")]
    with used_by_uv(index, tmp_path / "uv-cache"):
        env = EnvManager(tmp_path / "cache").ensure(spec(newest, older, plans), ws)
    assert "alpha" not in env.lock and "beta" not in env.lock  # the next plan, whole
    assert "resolved with none" in "\n".join(env.why)
    assert "without" not in "\n".join(env.why)


def test_a_line_is_named_by_its_package_not_by_a_substring() -> None:
    output = "Because only coverage==3.7 is available and you require coverage>=5, ..."
    assert prune.named_in(["cover", "coverage>=5", "-e .", "./x"], output) == ["coverage>=5"]
    failed = StepFailed("resolve dependencies", "resolve", output)
    assert prune.unresolvable(["coverage>=5"], failed, lambda line: True) == []
    assert prune.unresolvable(["coverage>=5"], failed, lambda line: False) == ["coverage>=5"]
    built = StepFailed("resolve dependencies", "build", "  x Failed to build `MySQL-python==1.2.5`")
    plan = DepSet(label="tox deps", lines=["nose", "mysql_python>=1.2"])
    assert prune.at_fault(plan, built) == "mysql_python>=1.2"


def test_a_release_with_metadata_uv_cannot_parse_is_repaired_not_walked_past(
    tmp_path: Path,
) -> None:
    """celery-era metadata: `pytz (>=2011k)`. uv skips such a release silently and walks back
    to an ancient one (here an sdist that cannot build); repaired, the release of the time
    is used."""
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    ancient = datetime(2010, 1, 1, tzinfo=UTC)
    index.sdist("calendarish", "0.1", uploaded=ancient, setup_py="raise SystemExit('no')\n")
    index.wheel("calendarish", "2.0", uploaded=OLD, requires=["pytz (>=2011k)", "six"])
    index.wheel("pytz", "2014.1", uploaded=OLD)
    index.wheel("six", "1.15.0", uploaded=OLD)
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    plans = [DepSet(label="tests", lines=["calendarish"])]
    with used_by_uv(index, tmp_path / "uv-cache"):
        env = EnvManager(tmp_path / "cache").ensure(spec(newest, older, plans), ws)
    assert "calendarish==2.0" in env.lock
    assert "pytz==2014.1" in env.lock and "six==1.15.0" in env.lock
    assert env.interpreter == newest.version
    why = "\n".join(env.why)
    assert "metadata of calendarish 2.0 repaired (`pytz (>=2011k)` -> `pytz>=2011`)" in why


@pytest.mark.parametrize(
    ("line", "fixed"),
    [
        ("pytz (>=2011k)", "pytz>=2011"),
        ("six", "six"),
        ("Django (>=1.3,<1.5.x)", "Django<1.5,>=1.3"),
        (
            "foo[bar] (>=1.0dev-r123) ; python_version < '3'",
            'foo[bar]>=1.0dev; python_version < "3"',
        ),
        ("zope.interface (>=garbage)", "zope.interface"),
        ("name ; not a marker", None),
    ],
)
def test_unparseable_requirements_are_read_leniently(line: str, fixed: str | None) -> None:
    assert metadata.lenient_requirement(line) == fixed


def test_uvs_warning_names_the_release() -> None:
    said = (
        "WARN `calendarish==2.0` has invalid metadata: after parsing `2011`, found `k`\n"
        "WARN calendarish has invalid metadata: after parsing `2011`, found `k`\n"
    )
    assert metadata.invalid_releases(said) == [("calendarish", "2.0")]
    assert metadata.lenient_specifier(">=2.6.*, !=3.0.*, >=x") == ">=2.6,!=3.0.*"


POETRY = """
[tool.poetry]
name = "proj"
version = "0.1.0"

[tool.poetry.dependencies]
python = "^3.6"
attrs = "19.1.0"

[tool.poetry.dev-dependencies]
{dev}
"""


@pytest.mark.parametrize("conflicts", [True, False])
def test_poetry_dev_dependencies_are_only_in_the_plans_that_take_them(
    tmp_path: Path, conflicts: bool
) -> None:
    """A Poetry project's dev pins may conflict with its own (attrs 19.1.0 against a plugin
    needing attrs>=20): then a plan without them resolves; when they fit, they are kept."""
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    index.wheel("attrs", "19.1.0", uploaded=OLD)
    index.wheel("attrs", "20.3.0", uploaded=OLD)
    index.wheel(
        "pytest-thing", "1.0", uploaded=OLD, requires=["attrs>=20" if conflicts else "attrs"]
    )
    index.wheel("nose", "1.3.7", uploaded=OLD)
    dev = 'pytest-thing = "^1.0"\nnose = "*"\n'
    ws = git_repo(tmp_path / "ws", {"pyproject.toml": POETRY.format(dev=dev)})
    always, plans = plan_deps(ws, read_project(ws), newest.minor_str, [])
    assert always == [] and plans[0].lines == ["pytest-thing<2,>=1.0", "nose"]
    # The project's own pin stands in for installing it (its backend is not on this index).
    rspec = spec(newest, older, plans).model_copy(update={"install": ["attrs==19.1.0"]})
    with used_by_uv(index, tmp_path / "uv-cache"):
        env = EnvManager(tmp_path / "cache").ensure(rspec, ws)
    assert "attrs==19.1.0" in env.lock
    assert ("pytest-thing" in env.lock) is not conflicts
    assert ("nose" in env.lock) is not conflicts


def test_pytest_plugins_come_from_the_era_of_the_pytest_the_environment_gets(
    tmp_path: Path,
) -> None:
    """A 2021 cutoff with `pytest==3.0.0` pinned: pytest-thing 2.0 (2020) claims pytest>=2
    but calls what 3.0 lacked; 1.0, of the time 3.0 was current, is taken."""
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    index.wheel("pytest", "3.0.0", uploaded=datetime(2017, 1, 1, tzinfo=UTC))
    index.wheel("pytest", "3.0.7", uploaded=datetime(2017, 3, 1, tzinfo=UTC))
    index.wheel("pytest", "3.1.0", uploaded=datetime(2017, 6, 1, tzinfo=UTC))
    index.wheel("pytest", "6.0.0", uploaded=datetime(2020, 7, 1, tzinfo=UTC))
    for version, month in (("1.0", 4), ("1.1", 5), ("2.0", 7)):
        when = datetime(2017 if version < "2" else 2020, month, 1, tzinfo=UTC)
        index.wheel("pytest-thing", version, uploaded=when, requires=["pytest>=2"])
    index.wheel("six", "1.15.0", uploaded=OLD)
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    old = [DepSet(label="tox deps", lines=["pytest==3.0.0", "pytest-thing", "six"])]
    current = [DepSet(label="tox deps", lines=["pytest", "pytest-thing", "six"])]
    with used_by_uv(index, tmp_path / "uv-cache"):
        env = EnvManager(tmp_path / "cache").ensure(spec(newest, older, old), ws)
        fresh = EnvManager(tmp_path / "cache").ensure(spec(newest, older, current), ws)
    # 3.1.0 (June 2017) ended 3.0's time: the plugin's May release is the last of it.
    assert "pytest-thing==1.1" in env.lock and "six==1.15.0" in env.lock
    assert "pytest plugins as of pytest 3.0.0's time (2017-06-01): pytest-thing 1.1" in "\n".join(
        env.why
    )
    assert "pytest-thing==2.0" in fresh.lock and "pytest==6.0.0" in fresh.lock  # current: as is


def test_a_repack_keeps_plain_members_and_drops_what_could_leave_the_archive() -> None:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:bz2") as tf:
        for name, kind in [("p-1.0/setup.py", tarfile.REGTYPE), ("p-1.0/sub", tarfile.DIRTYPE),
                           ("../evil.py", tarfile.REGTYPE), ("/abs.py", tarfile.REGTYPE),
                           ("p-1.0/link", tarfile.SYMTYPE)]:  # fmt: skip
            member = tarfile.TarInfo(name)
            member.type = kind
            data = b"x = 1\n" if kind == tarfile.REGTYPE else b""
            member.size = len(data)
            if kind == tarfile.SYMTYPE:
                member.linkname = "/etc/passwd"
            tf.addfile(member, io.BytesIO(data) if data else None)
    repacked = sdists.regzip(buf.getvalue())
    with tarfile.open(fileobj=io.BytesIO(repacked), mode="r:gz") as tf:
        assert tf.getnames() == ["p-1.0/setup.py", "p-1.0/sub"]
        handle = tf.extractfile("p-1.0/setup.py")
        assert handle is not None and handle.read() == b"x = 1\n"


def test_an_sdist_of_its_time_is_repaired_from_its_egg_info(tmp_path: Path) -> None:
    """2012: no wheel, PKG-INFO 1.0 without requirements, `pytz >= 2011k` only in
    `*.egg-info/requires.txt` (what uv's build turns into metadata it cannot parse)."""
    newest, older = two_interpreters()
    index = PackageIndex(tmp_path / "index")
    ancient = datetime(2010, 1, 1, tzinfo=UTC)
    index.sdist("calendarish", "0.1", uploaded=ancient, setup_py="raise SystemExit('no')\n")
    reqs = ["pytz >= 2011k", "six"]
    index.sdist("calendarish", "2.0", uploaded=OLD, requires=reqs, buildable=True, egg_info=True)
    index.wheel("pytz", "2014.1", uploaded=OLD)
    index.wheel("six", "1.15.0", uploaded=OLD)
    ws = git_repo(tmp_path / "ws", {"README": "x\n"})
    plans = [DepSet(label="tests", lines=["calendarish"])]
    with used_by_uv(index, tmp_path / "uv-cache"):
        env = EnvManager(tmp_path / "cache").ensure(spec(newest, older, plans), ws)
    assert "calendarish==2.0" in env.lock and "pytz==2014.1" in env.lock
    assert "metadata of calendarish 2.0 repaired (`pytz >= 2011k` -> `pytz>=2011`)" in "\n".join(
        env.why
    )
    # uv cannot install its build (the built metadata is as bad): the wheel is repaired too.
    show = "from importlib.metadata import requires; import calendarish; print(requires('calendarish'))"
    ran = subprocess.run([str(env.python), "-c", show], capture_output=True, text=True)
    assert ran.returncode == 0 and "pytz>=2011" in ran.stdout, ran.stderr


def test_requires_txt_sections_become_markers() -> None:
    text = "six\n\n[test]\nnose\n[:python_version < '3']\nfutures\n[ssl:sys_platform=='win32']\nx\n"
    assert metadata.egg_requires(text) == [
        "six",
        'nose; extra == "test"',
        "futures; (python_version < '3')",
        "x; (sys_platform=='win32') and extra == \"ssl\"",
    ]
