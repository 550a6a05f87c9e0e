"""The result channel: one message, signed with the run's key, or nothing is believed."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from swebounty.pytest_guard import (
    ChannelTampered,
    GuardResult,
    compiled,
    disagreements,
    new_key,
    read_channel,
    runner_argv,
    write_config,
)
from swebounty.sandbox import Policy, UnsafeSandbox
from swebounty.testing import parse_junit_bytes, pytest_command

XML = (
    b'<testsuites><testsuite><testcase classname="t" name="test_a" file="t.py"/>'
    b'<testcase classname="t" name="test_b" file="t.py"><failure message="no"/></testcase>'
    b"</testsuite></testsuites>"
)


def frame(key: bytes, payload: dict[str, object]) -> bytes:
    body = json.dumps(payload).encode()
    mac = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
    return b"SWEBOUNTY-RESULT " + mac + b" " + str(len(body)).encode() + b"\n" + body


def test_a_signed_message_is_read() -> None:
    key = new_key()
    payload = {"exitstatus": 1, "xml": XML.hex(), "statuses": {"t.py::test_a": "passed"}}
    got = read_channel(frame(key, payload), key)
    assert got is not None and got.exitstatus == 1 and got.xml == XML
    assert got.statuses == {"t.py::test_a": "passed"} and got.problems == []


@pytest.mark.parametrize(
    "mangle",
    [
        lambda f, k: frame(new_key(), {"exitstatus": 0}),  # another key
        lambda f, k: f + b"junk",  # bytes after the message
        lambda f, k: b"x" + f,  # bytes before it
        lambda f, k: frame(k, {"exitstatus": 0}) + f,  # a forged message first
        lambda f, k: f.replace(b'"exitstatus": 1', b'"exitstatus": 0'),  # edited body
    ],
)
def test_anything_else_on_the_channel_is_tampering(mangle: object) -> None:
    key = new_key()
    genuine = frame(key, {"exitstatus": 1})
    with pytest.raises(ChannelTampered):
        read_channel(mangle(genuine, key), key)  # type: ignore[operator]


def test_no_message_or_a_cut_one_is_no_result() -> None:
    key = new_key()
    genuine = frame(key, {"exitstatus": 1})
    assert read_channel(None, key) is None
    assert read_channel(b"", key) is None
    assert read_channel(genuine[:10], key) is None  # killed while writing the header
    assert read_channel(genuine[:-3], key) is None  # killed while writing the body
    with pytest.raises(ChannelTampered, match="larger than the channel keeps"):
        read_channel(genuine[:-3], key, truncated=True)


def test_an_xml_that_passes_what_pytest_failed_disagrees() -> None:
    outcomes = parse_junit_bytes(XML)
    seen = {"t.py::test_a": "passed", "t.py::test_b": "failed"}
    assert disagreements(XML, outcomes, seen) == []
    forged = XML.replace(b'<failure message="no"/>', b"")
    problems = disagreements(forged, parse_junit_bytes(forged), seen)
    assert any("t.py::test_b passed" in p for p in problems)
    assert any("0 failing testcases" in p for p in problems)


# ---------------------------------------------------------------------------- the guard itself

OLD = ("3.6", "pytest==3.6.4", "2022-12-31")  # the oldest era environments are built for


def _venv(tmp: Path, kind: str, old: tuple[str, ...] = OLD) -> Path:
    """`old`: (Python version, packages..., the newest date they may have)."""
    if kind == "current":
        return Path(sys.prefix)
    version, *packages, before = old
    # A real interpreter, not a pyenv shim (uv trips on shims).
    candidates = sorted(
        Path(os.path.expanduser("~/.pyenv/versions")).glob(f"{version}.*/bin/python")
    )
    which = shutil.which(f"python{version}")
    if which and "/shims/" not in which:
        candidates.append(Path(which))
    found = next(iter(candidates), None)
    if found is None:
        pytest.skip(f"no Python {version} here")
    venv = tmp / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    uv = [sys.executable, "-m", "uv"]
    subprocess.run([*uv, "venv", "-q", "-p", str(found), str(venv)], env=env, check=True)
    proc = subprocess.run(
        [*uv, "pip", "install", "-q", "-p", str(venv / "bin" / "python"), "--exclude-newer",
         before, *packages], env=env, capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"cannot build a {' '.join(packages)} environment here: {proc.stderr[-300:]}")
    return venv


def _base_prefix(venv: Path) -> str:
    code = "import sys; print(sys.base_prefix)"
    python = venv / "bin" / "python"
    return subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()


def _guarded_run(
    venv: Path,
    tmp: Path,
    tamper: bool,
    extra_test: str = "",
    runner: Path | None = None,
    files: dict[str, str] | None = None,
    site: Path | None = None,
) -> GuardResult | None:
    """`files`: more files of the workspace, each one the submission's unless its name starts
    with "base:"; `site`: a directory of installed packages (on the path, and trusted)."""
    ws = tmp / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "tests").mkdir()
    init = "def f():\n    return 1\n"
    if tamper:
        init += "import _pytest.python as _p\n_p.Function.runtest = lambda self: None\n"
    (ws / "pkg" / "__init__.py").write_text(init)
    (ws / "tests" / "test_x.py").write_text(
        "from pkg import f\n\ndef test_ok():\n    assert f() == 1\n\n"
        "def test_bad():\n    assert f() == 2\n" + extra_test
    )
    untrusted = [str(ws / "pkg" / "__init__.py")]
    for name, text in (files or {}).items():
        base = name.startswith("base:")
        path = ws / name.removeprefix("base:")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if not base:
            untrusted.append(str(path))
    junit = tmp / "junit.xml"
    trusted = [str(venv), _base_prefix(venv), *([str(site)] if site else [])]
    config = {
        "workspace": str(ws), "infra": {"files": {}, "names": [], "suffixes": []},
        "untrusted_files": untrusted, "trusted_dirs": trusted, "junit": str(junit),
        "args": pytest_command([], ["tests/test_x.py"], junit), "setup": None,
    }  # fmt: skip
    write_config(tmp / "config.json", config)
    key = new_key()
    path = os.pathsep.join([str(ws), *([str(site)] if site else [])])
    policy = Policy(timeout_s=120, env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"})
    python = str(venv / "bin" / "python")
    run = UnsafeSandbox().run(runner_argv(python, tmp / "config.json", runner), workdir=ws, mounts=[],
                              policy=policy, stdin=key, result_channel=True)  # fmt: skip
    return read_channel(run.channel, key)


@pytest.mark.parametrize("kind", ["current", pytest.param("old", marks=pytest.mark.network)])
def test_the_guard_reports_honest_runs_and_catches_a_patched_runner(
    tmp_path: Path, kind: str
) -> None:
    venv = _venv(tmp_path, kind)
    honest = _guarded_run(venv, tmp_path / "honest", tamper=False)
    assert honest is not None and honest.problems == []
    assert honest.statuses == {"tests/test_x.py::test_ok": "passed",
                               "tests/test_x.py::test_bad": "failed"}  # fmt: skip
    assert honest.exitstatus == 1 and honest.xml is not None
    forged = _guarded_run(venv, tmp_path / "forged", tamper=True)
    assert forged is not None
    assert forged.problems[-1] == (
        "pytest's reporting machinery was changed: _pytest.python.Function.runtest"
    )  # after the passes its runtest made (testcalls.py)


SPAWN = """
def _double(x):
    import pytest  # the child must see the environment's site-packages too

    return 2 * x


def test_spawned_children_get_the_environment():
    import multiprocessing
    import subprocess
    import sys

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.map(_double, [1, 2]) == [2, 4]
    # What test.support and others do to start "the same interpreter":
    flags = subprocess._args_from_interpreter_flags()
    subprocess.run([sys.executable, *flags, "-c", "import pytest"], check=True)
"""


def test_children_spawned_by_the_tests_start_with_site(tmp_path: Path) -> None:
    # The runner starts with -S; multiprocessing hands the interpreter's flags to its children.
    run = _guarded_run(Path(sys.prefix), tmp_path, tamper=False, extra_test=SPAWN)
    assert run is not None and run.problems == []
    assert run.statuses["tests/test_x.py::test_spawned_children_get_the_environment"] == "passed"


def test_the_guard_resolves_each_path_once_per_check_and_afresh_after(tmp_path: Path) -> None:
    """Hundreds of hook implementations share a few files: one realpath each per check, but
    never one remembered from an earlier check (a link may have moved since)."""
    import importlib.util

    from swebounty.pytest_guard import GUARD_DIR

    spec = importlib.util.spec_from_file_location(
        "guard_under_test", GUARD_DIR / "swebounty_guard.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    guard = module.Guard(None, {"workspace": str(tmp_path), "junit": "j.xml"}, [])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "here").symlink_to(tmp_path / "a")
    path = str(tmp_path / "here" / "m.py")
    resolved: list[str] = []

    def check() -> None:
        resolved.append(guard._real(path))
        (tmp_path / "here").unlink()
        (tmp_path / "here").symlink_to(tmp_path / "b")
        resolved.append(guard._real(path))  # within one check: as first seen

    guard._verify = check
    guard.verify()
    assert resolved == [str(tmp_path / "a" / "m.py")] * 2
    assert guard._real(path) == str(tmp_path / "b" / "m.py")  # outside a check: afresh
    guard.verify()
    assert resolved[2:] == [str(tmp_path / "b" / "m.py")] * 2


def test_the_runner_and_the_guard_run_from_their_copy_compiled_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compiled, "_made", {})
    version = ".".join(map(str, sys.version_info[:3]))
    python, cache = Path(sys.executable).resolve(), tmp_path / "cache"
    runner = compiled.compiled_runner(cache, version, python)
    assert runner is not None and runner.name == "run_pytest.pyc"
    for name in compiled.FILES[1:]:
        pyc = runner.parent / "__pycache__" / f"{name[:-3]}.{sys.implementation.cache_tag}.pyc"
        assert int.from_bytes(pyc.read_bytes()[4:8], "little") == 1  # unchecked hash
    assert compiled.compiled_runner(cache, "3.6.15", python) is None  # no hash-based pycs

    def no_compiler(*a: object, **k: object) -> None:
        raise AssertionError("compiled again")

    # Made once: a later process finds it on disk, no compiler runs.
    monkeypatch.setattr(compiled, "_made", {})
    fake = type("NoSubprocess", (), {"run": no_compiler, "SubprocessError": OSError})
    monkeypatch.setattr(compiled, "subprocess", fake)
    assert compiled.compiled_runner(cache, version, python) == runner
    monkeypatch.setattr(compiled, "subprocess", subprocess)
    # Its sources are never compiled per run: broken, the guarded run still works.
    for name in compiled.FILES:
        (runner.parent / name).write_text("not python (\n")
    honest = _guarded_run(Path(sys.prefix), tmp_path / "honest", tamper=False, runner=runner)
    assert honest is not None and honest.problems == [] and honest.exitstatus == 1
    assert honest.statuses["tests/test_x.py::test_bad"] == "failed"
    forged = _guarded_run(Path(sys.prefix), tmp_path / "forged", tamper=True, runner=runner)
    assert forged is not None and forged.problems[-1] == (
        "pytest's reporting machinery was changed: _pytest.python.Function.runtest"
    )  # after the passes its runtest made (testcalls.py)

    # It is what runs: cut its runner's code off and nothing reports.
    runner.write_bytes(runner.read_bytes()[:16])
    assert _guarded_run(Path(sys.prefix), tmp_path / "cut", tamper=False, runner=runner) is None

    # A changed guard is compiled anew, beside the old one.
    here = tmp_path / "guard"
    here.mkdir()
    for name in compiled.FILES:
        shutil.copyfile(compiled.HERE / name, here / name)
    with (here / "machinery.py").open("a") as f:
        f.write("# changed\n")
    monkeypatch.undo()
    monkeypatch.setattr(compiled, "_made", {})
    monkeypatch.setattr(compiled, "HERE", here)
    changed = compiled.compiled_runner(cache, version, python)
    assert changed is not None and changed.parent != runner.parent


SUBTESTS = """
import unittest


class TestSub(unittest.TestCase):
    def test_all_good(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 3)

    def test_one_bad(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)
"""


def test_pytest_s_own_subtest_reports_are_genuine(tmp_path: Path) -> None:
    # pytest 9 reports each unittest subTest with _pytest.subtests.SubtestReport: not tampering.
    if importlib.util.find_spec("_pytest.subtests") is None:
        pytest.skip("this pytest has no subtests of its own (pytest < 9)")
    run = _guarded_run(Path(sys.prefix), tmp_path, tamper=False, extra_test=SUBTESTS)
    assert run is not None and run.problems == []
    assert run.statuses["tests/test_x.py::TestSub::test_all_good"] == "passed"
    assert run.statuses["tests/test_x.py::TestSub::test_one_bad"] == "failed"
    assert run.exitstatus == 1 and b'name="test_one_bad"' in (run.xml or b"")


# A plugin reporting with a TestReport subclass of its own, as pytest-subtests does (its
# SubTestReport, an attrs class): members written in its file, members generated by
# dataclasses, and the reports its makereport hook makes.
PLUGIN_REPORT = """
import dataclasses

import pytest
from _pytest.reports import TestReport


@dataclasses.dataclass(init=False)
class PluginReport(TestReport):
    origin: str = "plugin"

    @property
    def head_line(self):
        return "plugin " + self.nodeid

    @classmethod
    def _from_json(cls, reportdict):
        return super()._from_json(reportdict)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    return PluginReport.from_item_and_call(item, call)
"""


def _plugin_site(tmp: Path, name: str = "reportplugin", source: str = PLUGIN_REPORT) -> Path:
    """An installed plugin `name` (its __init__.py: `source`), loaded through its pytest11
    entry point."""
    site = tmp / "site"
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text(source)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[pytest11]\n{name} = {name}\n")
    return site


HONEST = {"tests/test_x.py::test_ok": "passed", "tests/test_x.py::test_bad": "failed"}


def test_an_installed_plugin_s_own_report_class_is_genuine(tmp_path: Path) -> None:
    site = _plugin_site(tmp_path)
    run = _guarded_run(Path(sys.prefix), tmp_path / "run", tamper=False, site=site)
    assert run is not None and run.problems == []
    assert run.statuses == HONEST and run.exitstatus == 1


def test_a_report_class_of_the_repository_is_refused_even_from_a_base_file(
    tmp_path: Path,
) -> None:
    """The same plugin in the repository's own files (unchanged by the submission, so its hook
    is genuine): its report class is the repository's, never accepted."""
    run = _guarded_run(
        Path(sys.prefix), tmp_path, tamper=False,
        files={"base:reportplugin/__init__.py": PLUGIN_REPORT,
               "base:conftest.py": "pytest_plugins = ['reportplugin']\n"},
    )  # fmt: skip
    assert run is not None and run.statuses == HONEST
    assert run.problems == [
        "a test report is a <class 'reportplugin.PluginReport'>, not pytest's TestReport nor "
        "an installed plugin's"
    ]
