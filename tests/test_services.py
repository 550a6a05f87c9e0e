"""Test services (swebounty.services): the catalog and its checks, per-repository declarations,
the command that runs a service beside the tests, and the driver that starts it (run here as a
plain process; tests/test_services_sandbox.py runs it in the sandbox)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from swebounty.envs.interpreters import Interpreter
from swebounty.envs.models import EnvBuildError, Environment
from swebounty.envs.overrides import load_overrides
from swebounty.services.catalog import Service, ServiceError, declared, load_catalog
from swebounty.services.runtime import DRIVER, Built, StandIns, service_spec, shipped_catalog
from swebounty.tasks import EnvSpec

SERVICE = """\
[[service]]
name = "echo"
why = "the tests call echo.example.org"
python = "3.12"
packages = ["echo-server==1.2.3", "waitress==3.0.2"]
cutoff = 2025-01-01T00:00:00Z
version_of = "echo-server"
argv = ["{python}", "-m", "echo_server", "--port", "{port}"]
port = 41000
env = { ECHO_URL = "http://127.0.0.1:{port}/" }
"""


def catalog_of(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    return path


def test_shipped_catalog_pins_httpbin_and_every_declared_service_exists() -> None:
    catalog = shipped_catalog()
    httpbin = catalog.get("httpbin")
    assert httpbin.version == "0.10.2"
    assert all("==" in p for p in httpbin.packages)
    assert httpbin.variables(47080) == {"HTTPBIN_URL": "http://127.0.0.1:47080/"}
    command = httpbin.command("/svc/bin/python", 47080, "/tools")
    assert "/tools/gunicorn_conf.py" in command and "127.0.0.1:47080" in command
    assert (DRIVER.parent / "gunicorn_conf.py").is_file()
    for override in load_overrides():
        for name in override.services:
            catalog.get(name)  # raises for a name the catalog lacks
    # requests' tests, whatever their era, get the local httpbin
    when = datetime(2014, 3, 15, tzinfo=timezone.utc)
    got = declared(load_overrides(), catalog, "psf/requests", "2.3", when)
    assert [s.name for s in got] == ["httpbin"]
    assert declared(load_overrides(), catalog, "pallets/flask", "2.0", when) == []


def test_a_service_fills_its_command_and_variables(tmp_path: Path) -> None:
    echo = load_catalog(catalog_of(tmp_path, SERVICE)).get("echo")
    assert echo.version == "1.2.3"
    assert echo.command("/envs/e/bin/python", 41000) == [
        "/envs/e/bin/python", "-m", "echo_server", "--port", "41000"]  # fmt: skip
    assert echo.variables(5) == {"ECHO_URL": "http://127.0.0.1:5/"}
    spec = service_spec(echo, [python("3.11.7"), python("3.12.1"), python("3.13.0")])
    assert spec == EnvSpec(python="3.12", install=["echo-server==1.2.3", "waitress==3.0.2"],
                           install_project=False, cutoff=echo.cutoff)  # fmt: skip


def python(version: str) -> Interpreter:
    prefix = Path(f"/py/{version}")
    return Interpreter(version=version, executable=prefix / "bin" / "python3", prefix=prefix,
                       source="pyenv")  # fmt: skip


def test_a_service_takes_the_newest_interpreter_of_its_range(tmp_path: Path) -> None:
    ranged = load_catalog(catalog_of(tmp_path, SERVICE.replace('"3.12"', '">=3.9,<3.13"')))
    echo = ranged.get("echo")
    # an ordinary user's Debian has 3.11 only; the minor version is in the spec (its key)
    assert service_spec(echo, [python("3.8.18"), python("3.11.2")]).python == "3.11"
    assert (
        service_spec(echo, [python("3.11.2"), python("3.12.1"), python("3.13.0")]).python == "3.12"
    )
    with pytest.raises(EnvBuildError, match=r"Python >=3.9,<3.13, and none is installed"):
        service_spec(echo, [python("3.8.18"), python("3.13.0")])
    with pytest.raises(ServiceError, match=r"neither 3\.N nor a version range"):
        load_catalog(catalog_of(tmp_path, SERVICE.replace('"3.12"', '"py3"')))
    assert shipped_catalog().get("httpbin").interpreter([python("3.9.18")]) is not None


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (('"echo-server==1.2.3"', '"echo-server>=1.2"'), "exact pins"),
        (('"--port", "{port}"', '"--port", "{host}"'), "unknown placeholders"),
        (('argv = ["{python}", ', 'argv = ["python", '), "must start with {python}"),
        (('version_of = "echo-server"', 'version_of = "flask"'), "not one of the packages"),
        (("ECHO_URL", "SWEBOUNTY_KEY"), "not a variable a service may set"),
        (("port = 41000", "port = 80"), "greater than or equal to 1024"),
        (('why = "the tests call echo.example.org"\n', ""), "why"),
        (("port = 41000", 'port = 41000\nshell = "sh -c"'), "shell"),
    ],
)
def test_a_broken_catalog_is_an_error_naming_the_problem(
    tmp_path: Path, change: tuple[str, str], says: str
) -> None:
    assert change[0] in SERVICE
    with pytest.raises(ServiceError, match="is invalid") as info:
        load_catalog(catalog_of(tmp_path, SERVICE.replace(*change)))
    assert says in str(info.value)


def test_a_service_named_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match="named twice"):
        load_catalog(catalog_of(tmp_path, SERVICE + "\n" + SERVICE))


def test_declarations_follow_the_overrides_rules(tmp_path: Path) -> None:
    catalog = load_catalog(catalog_of(tmp_path, SERVICE))
    path = tmp_path / "overrides.toml"
    path.write_text(
        '[[override]]\nrepo = "org/proj"\nversions = "<2"\n'
        'why = "its 1.x tests call echo.example.org"\nservices = ["echo"]\n'
        '[[override]]\nrepo = "org/proj"\n'
        'why = "every era: the same service, declared again"\nservices = ["echo"]\n'
        '[[override]]\nrepo = "org/other"\nwhy = "a service nobody has catalogued"\n'
        'services = ["ftp"]\n'
    )
    overrides = load_overrides(path)
    when = datetime(2020, 1, 1, tzinfo=timezone.utc)
    assert [s.name for s in declared(overrides, catalog, "org/proj", "1.0", when)] == ["echo"]
    assert [s.name for s in declared(overrides, catalog, "org/proj", "3.0", when)] == ["echo"]
    assert declared(overrides, catalog, "org/none", "1.0", when) == []
    with pytest.raises(ServiceError, match="no test service named 'ftp'"):
        declared(overrides, catalog, "org/other", "1.0", when)


def fake_env(tmp_path: Path, name: str) -> Environment:
    venv = tmp_path / name
    return Environment(key=f"key-{name}", path=venv, python=venv / "bin" / "python",
                       interpreter="3.12.1", interpreter_prefix=tmp_path / "py312",
                       interpreter_executable=tmp_path / "py312" / "bin" / "python3.12",
                       spec=EnvSpec())  # fmt: skip


def stand_ins(tmp_path: Path, services: list[Service]) -> StandIns:
    built = [Built(service=s, env=fake_env(tmp_path, f"env-{s.name}")) for s in services]
    return StandIns(built=built, logs=tmp_path / "logs")


def test_wrap_nests_one_driver_per_service_outside_the_workspace(tmp_path: Path) -> None:
    echo = load_catalog(catalog_of(tmp_path, SERVICE)).get("echo")
    other = echo.model_copy(update={"name": "other", "port": 42000, "env": {"OTHER": "{port}"}})
    ins = stand_ins(tmp_path, [echo, other])
    argv = ins.wrap(["/task/python", "-S", "run_pytest.py", "config.json"], isolated=True)
    echo_python = str(tmp_path / "env-echo" / "bin" / "python")
    assert argv[:3] == [echo_python, "-I", str(DRIVER)]
    outer = argv[argv.index("--") + 1 : argv.index("--pytest")]
    # the service gets a clean environment and an isolated interpreter: nothing of the
    # workspace (its cwd is the service's environment) is on its path
    assert outer[:2] == ["/usr/bin/env", "-i"]
    assert outer[-6:] == [echo_python, "-I", "-m", "echo_server", "--port", "41000"]
    assert argv[argv.index("--app-cwd") + 1] == str(tmp_path / "env-echo")
    inner = argv[argv.index("--pytest") + 1 :]
    assert inner[:3] == [str(tmp_path / "env-other" / "bin" / "python"), "-I", str(DRIVER)]
    assert inner[-4:] == ["/task/python", "-S", "run_pytest.py", "config.json"]
    assert ins.variables() == {"ECHO_URL": "http://127.0.0.1:41000/", "OTHER": "42000"}
    mounts = {m.path: m.writable for m in ins.mounts()}
    assert mounts.pop(tmp_path / "logs") is True
    assert not any(mounts.values())  # the services' code is read-only
    assert {DRIVER.parent, tmp_path / "env-echo", tmp_path / "py312"} <= set(mounts)
    uses = ins.uses()
    assert [(u.name, u.version, u.env_key) for u in uses] == [
        ("echo", "1.2.3", "key-env-echo"), ("other", "1.2.3", "key-env-other")]  # fmt: skip
    assert uses[0].url == "http://127.0.0.1:41000/" and uses[0].python == "3.12.1"


def test_without_a_sandbox_of_its_own_a_service_takes_a_free_port(tmp_path: Path) -> None:
    echo = load_catalog(catalog_of(tmp_path, SERVICE)).get("echo")
    ins = stand_ins(tmp_path, [echo])
    argv = ins.wrap(["true"], isolated=False)
    port = int(argv[argv.index("--port") + 1])
    assert port != 41000 and ins.variables()["ECHO_URL"] == f"http://127.0.0.1:{port}/"
    assert not stand_ins(tmp_path, [])  # no services: nothing to wrap


# ------------------------------------------------------------------ the driver, as a process

APP = "import http.server as s; s.test(HandlerClass=s.SimpleHTTPRequestHandler, port={port}, bind='127.0.0.1')"
TESTS = """\
import os, sys, urllib.request
os.write(int(os.environ["SWEBOUNTY_RESULT_FD"]), b"through the channel")
body = urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=10).read()
print("sessions", os.environ["SWEBOUNTY_SERVICE_SESSIONS"], "answered", len(body) > 0)
sys.exit(7)
"""


def free_port() -> int:
    from swebounty.services.runtime import _free_port

    return _free_port()


def drive(tmp_path: Path, app: list[str], tests: list[str], port: int) -> tuple[int, str, bytes]:
    read, write = os.pipe()
    env = {**os.environ, "SWEBOUNTY_RESULT_FD": str(write), "SWEBOUNTY_SERVICE_SESSIONS": "1"}
    argv = [sys.executable, "-I", str(DRIVER), "--port", str(port), "--app-log",
            str(tmp_path / "app.log"), "--app-cwd", str(tmp_path), "--ready-s", "20",
            "--", *app, "--pytest", *tests]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, pass_fds=[write], stdout=subprocess.PIPE, text=True)
    os.close(write)
    out, _ = proc.communicate(timeout=60)
    with os.fdopen(read, "rb") as channel:
        return proc.returncode, out, channel.read()


def test_the_driver_starts_the_service_runs_the_tests_and_stops_it(tmp_path: Path) -> None:
    port = free_port()
    app = [sys.executable, "-c", APP.format(port=port)]
    code, out, channel = drive(tmp_path, app, [sys.executable, "-c", TESTS.format(port=port)],
                               port)  # fmt: skip
    assert code == 7, out  # the tests' exit code
    assert channel == b"through the channel"  # the result channel reached the tests
    sessions = out.split()[1].split(",")
    assert sessions[0] == "1" and len(sessions) == 2  # the service's session added
    assert "answered True" in out
    # the service was stopped with the run: its session is gone
    assert not Path(f"/proc/{sessions[1]}").exists()


def test_a_service_that_never_answers_is_exit_code_90(tmp_path: Path) -> None:
    port = free_port()
    code, _, channel = drive(tmp_path, [sys.executable, "-c", "raise SystemExit(2)"],
                             [sys.executable, "-c", "pass"], port)  # fmt: skip
    assert code == 90 and channel == b""  # the tests never ran


def test_the_runner_spares_the_services_sessions_when_it_cleans_up() -> None:
    # _kill_leftovers itself only ever runs inside the sandbox's pid namespace; here, the
    # session it reads for each process is the kernel's.
    sys.path.insert(0, str(DRIVER.parents[1] / "pytest_guard"))
    try:
        import run_pytest  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    assert run_pytest._session(os.getpid()) == os.getsid(0)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             start_new_session=True)  # fmt: skip
    try:
        assert run_pytest._session(child.pid) == child.pid
    finally:
        child.kill()
        child.wait()
