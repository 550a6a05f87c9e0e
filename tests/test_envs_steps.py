"""Build commands: isolated from ambient configuration, the cutoff passed, failures classified."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
import uv as uv_package

from env_helpers import tls_refusing_uv
from swebounty.envs import buildbox
from swebounty.envs.failures import NOT_THE_SPEC, StepFailed, classify
from swebounty.envs.releases import newest_release_before, tag_release
from swebounty.envs.steps import Uv, isolated_env, run_logged
from swebounty.sandbox import bwrap_available
from swebounty.sandbox._process import kill_running

BWRAP_OK, BWRAP_WHY = bwrap_available()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"no bubblewrap sandbox: {BWRAP_WHY}")

UV_YANKED = """error: No solution found when resolving dependencies
  cause: Because types-pkg-resources<=0.1.2 was yanked (reason: Use types-setuptools instead)
  and only the following versions of types-pkg-resources are available:"""
UV_BUILD = """  x Failed to build `numpy==1.16.0`
  |-> The build backend returned an error"""
UV_CONFLICT = """error: No solution found when resolving dependencies
  cause: Because pytest==6.0.0 depends on pluggy>=0.12,<1.0 and you require pluggy==1.0,
  we can conclude that your requirements are unsatisfiable."""
UV_PYTHON = """  cause: Because the current Python version (3.11.7) does not satisfy Python>=3.6,<3.10
  and foo==1.0 depends on Python>=3.6,<3.10, we can conclude that foo==1.0 cannot be used."""


@pytest.mark.parametrize(
    ("output", "kind"),
    [
        (UV_YANKED, "yanked"),
        (UV_BUILD, "build"),
        (
            UV_BUILD + "\n  fatal error: libmemcached/memcached.h: No such file or directory",
            "system",
        ),
        (UV_CONFLICT, "resolve"),
        (
            "  cause: Because numpy==1.17.3 has no usable wheels and you require numpy==1.17.3"
            ", we can conclude ...\nhint: Wheels are required for `numpy` because building "
            "from source is disabled for `numpy`",
            "build",  # a wheel-only package (wheels.NO_SOURCE_BUILDS): an older Python may fix
        ),
        (UV_PYTHON, "python"),
        ("error sending request for url", "network"),
        ("  x Failed to build `x==1`\n  No space left on device (os error 28)", "disk"),
        ("boom", "other"),
    ],
)
def test_failures_are_classified(output: str, kind: str) -> None:
    assert classify(output) == kind


def test_yanked_names_are_read_from_the_message() -> None:
    assert StepFailed("resolve", "yanked", UV_YANKED).yanked == ["types-pkg-resources"]


def test_ambient_pip_and_uv_configuration_never_reach_a_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("PIP_CONSTRAINT", "/etc/xdg/pip/constraints.txt")
    monkeypatch.setenv("UV_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("UV_EXCLUDE_NEWER", "2030-01-01")
    env = isolated_env()
    assert not [
        k
        for k in env
        if k.startswith("PIP_")
        and k not in ("PIP_CONFIG_FILE", "PIP_DISABLE_PIP_VERSION_CHECK", "PIP_NO_INPUT")
    ]
    assert "UV_FIND_LINKS" not in env and "UV_EXCLUDE_NEWER" not in env
    assert env["UV_NO_CONFIG"] == "1" and env["PIP_CONFIG_FILE"] == os.devnull
    assert env["UV_PYTHON_DOWNLOADS"] == "never"


def fake_uv(tmp_path: Path) -> Path:
    """A stand-in for uv that records its argv and environment."""
    script = tmp_path / "uv"
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"open({str(tmp_path / 'calls.jsonl')!r}, 'a').write(json.dumps("
        "{'argv': sys.argv[1:], 'env': dict(os.environ)}) + '\\n')\n"
        "print('pytest==6.2.5')\n"
    )
    script.chmod(0o755)
    return script


def test_compile_passes_the_cutoff_and_the_interpreter(tmp_path: Path) -> None:
    import json

    uv = Uv(fake_uv(tmp_path), tmp_path / "build.log", offline=True)
    cutoff = datetime(2021, 1, 1, 12, 30, tzinfo=timezone.utc)
    req = tmp_path / "in.txt"
    req.write_text("pytest\n")
    out = uv.compile(Path("/py/bin/python3.8"), req, cutoff, cwd=tmp_path)
    assert out.strip() == "pytest==6.2.5"
    call = json.loads((tmp_path / "calls.jsonl").read_text().splitlines()[0])
    argv = call["argv"]
    assert argv[:2] == ["pip", "compile"]
    assert argv[argv.index("--exclude-newer") + 1] == "2021-01-01T12:30:00Z"
    assert argv[argv.index("--python") + 1] == "/py/bin/python3.8"
    assert "--offline" in argv
    assert call["env"]["UV_NO_CONFIG"] == "1"
    assert "$ " in (tmp_path / "build.log").read_text()


def test_before_2019_only_build_environments_get_a_newer_setuptools(tmp_path: Path) -> None:
    import json

    uv = Uv(fake_uv(tmp_path), tmp_path / "build.log", offline=True)
    req = tmp_path / "in.txt"
    req.write_text("click\n")
    uv.compile(
        Path("/py/bin/python3.6"), req, datetime(2018, 5, 1, tzinfo=timezone.utc), cwd=tmp_path
    )
    uv.compile(
        Path("/py/bin/python3.7"), req, datetime(2019, 6, 1, tzinfo=timezone.utc), cwd=tmp_path
    )
    old, new = (json.loads(x)["argv"] for x in (tmp_path / "calls.jsonl").read_text().splitlines())
    exempt = [old[i + 1] for i, a in enumerate(old) if a == "--exclude-newer-package"]
    assert exempt == ["setuptools=2019-02-06T00:00:00Z", "wheel=2019-02-06T00:00:00Z"]
    constraints = Path(old[old.index("--constraints") + 1]).read_text()
    # Offline there is no index to ask for the exact releases of the cutoff.
    assert constraints == "setuptools<40.8.0\nwheel<0.33.0\n"
    assert "--exclude-newer-package" not in new and "--constraints" not in new


@pytest.mark.network
def test_a_2017_setup_py_project_with_an_sdist_dependency_resolves(tmp_path: Path) -> None:
    """uv's fallback backend needs setuptools>=40.8.0 (2019) for a project naming no backend
    and for sdist-only dependencies (pympler 0.5): both resolve at a 2017 cutoff, and the
    environment's setuptools stays the one of 2017."""
    python = Path("/root/.pyenv/versions/3.6.15/bin/python3.6")
    if not python.exists():
        pytest.skip("needs Python 3.6 (pyenv) for a 2017 resolution")
    try:
        httpx.head("https://pypi.org/simple/six/", timeout=10, follow_redirects=True)
    except httpx.HTTPError as exc:
        pytest.skip(f"the package index is unreachable here: {exc}")
    project = tmp_path / "project"
    project.mkdir()
    (project / "setup.py").write_text(
        "from setuptools import setup\nfrom localhelper import VERSION\n"
        "setup(name='oldproj', version=VERSION, py_modules=['oldproj'], install_requires=['six'],"
        " extras_require={'tests': ['pympler==0.5']})\n"
    )
    (project / "localhelper.py").write_text("VERSION = '0.3'\n")  # setup.py imports locally
    (project / "oldproj.py").write_text("")
    req = tmp_path / "requirements.in"
    req.write_text("./project[tests]\nsetuptools\n")
    uv = Uv(Path(uv_package.find_uv_bin()), tmp_path / "build.log")
    lock = uv.compile(python, req, datetime(2017, 8, 1, tzinfo=timezone.utc), cwd=tmp_path)
    assert {"pympler==0.5", "six==1.10.0", "setuptools==36.2.6"} <= set(lock.split())


def test_failed_step_raises_with_kind(tmp_path: Path) -> None:
    script = tmp_path / "uv"
    script.write_text(f"#!/bin/sh\necho '{UV_CONFLICT.splitlines()[0]}' >&2\nexit 1\n")
    script.chmod(0o755)
    with pytest.raises(StepFailed) as info:
        Uv(script, tmp_path / "log").venv(Path("/py"), tmp_path / "v")
    assert info.value.kind == "resolve"


SELF_KILL = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]


def test_a_step_killed_by_a_signal_is_its_own_kind(tmp_path: Path) -> None:
    """Killed (Ctrl-C, a run's stop, the OOM killer) says nothing about the spec: not `other`,
    which is remembered as the spec's failure."""
    with pytest.raises(StepFailed) as info:
        run_logged("resolve dependencies", SELF_KILL, tmp_path / "log", cwd=tmp_path)
    assert info.value.kind == "killed" and "killed" in NOT_THE_SPEC
    assert info.value.describe() == "resolve dependencies was killed by SIGKILL"


@pytest.mark.sandbox
@needs_bwrap
def test_a_build_sandbox_ended_by_the_run_s_stop_is_killed(tmp_path: Path) -> None:
    """The run's stop ends the build sandboxes in flight (sandbox.kill_running, as runs._cancel
    does): `killed`, not `other`, which was remembered as the spec's failure."""
    work = tmp_path / "work"
    work.mkdir()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]

    def stop() -> None:
        deadline = time.monotonic() + 30
        while not kill_running() and time.monotonic() < deadline:
            time.sleep(0.05)

    stopper = threading.Thread(target=stop)
    stopper.start()
    try:
        with pytest.raises(StepFailed) as info:
            buildbox.run_step("prepare the project's metadata", sleeper, tmp_path / "log",
                              workdir=work, reads=[Path(sys.prefix), Path(sys.base_prefix)],
                              env={}, timeout=60)  # fmt: skip
    finally:
        stopper.join()
    assert info.value.kind == "killed"
    assert "was killed by SIGKILL" in info.value.describe()


def test_newest_release_before_the_cutoff_counts_yanked_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = [
        {
            "filename": "types_pkg_resources-0.1.2-py3-none-any.whl",
            "upload-time": "2021-05-01T00:00:00Z",
            "yanked": "old",
        },
        {
            "filename": "types-pkg_resources-0.1.3.tar.gz",
            "upload-time": "2021-06-01T00:00:00Z",
            "yanked": "old",
        },
        {
            "filename": "types_pkg_resources-0.2.0-py3-none-any.whl",
            "upload-time": "2022-01-01T00:00:00Z",
        },
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/simple/types-pkg-resources/"
        return httpx.Response(200, json={"files": files})

    transport = httpx.MockTransport(handler)

    def fake_get(url: str, **kwargs: Any) -> httpx.Response:
        with httpx.Client(transport=transport) as client:
            return client.get(url, headers=kwargs.get("headers"))

    monkeypatch.setattr(httpx, "get", fake_get)
    cutoff = datetime(2021, 10, 15, tzinfo=timezone.utc)
    assert newest_release_before("types-pkg_resources", cutoff) == "0.1.3"
    assert (
        newest_release_before("types-pkg_resources", datetime(2020, 1, 1, tzinfo=timezone.utc))
        is None
    )


def test_tag_release_falls_back_to_the_tasks_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hatch-vcs project unknown to the index (or built offline) still gets a release tag,
    from the task's version, so it does not build as 0.1.dev1 (what broke attrs)."""
    repo = tmp_path / "proj"
    repo.mkdir()
    for argv in (
        ["init", "-q"],
        [
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "base",
        ],
    ):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    looked: list[str] = []

    def unknown(name: str, cutoff: datetime, index: str = "") -> None:
        looked.append(name)

    monkeypatch.setattr("swebounty.envs.releases.newest_release_before", unknown)
    cutoff = datetime(2025, 8, 1, tzinfo=timezone.utc)
    version, env = tag_release(repo, "my-proj", "", cutoff, hint="25.3.0")
    assert looked == ["my-proj"] and version == "25.3.0"
    assert env["SETUPTOOLS_SCM_PRETEND_VERSION_FOR_MY_PROJ"] == "25.3.0"
    tags = subprocess.run(["git", "tag"], cwd=repo, capture_output=True, text=True).stdout
    assert tags.split() == ["25.3.0"]
    # Offline: the index is not asked; a hint that is no version tags nothing.
    version, _ = tag_release(repo, "my-proj", "v", cutoff, hint="25.3.0", lookup=False)
    assert version == "25.3.0" and looked == ["my-proj"]
    assert tag_release(repo, "my-proj", "x", cutoff, hint="main") == (None, {})
    # Not versioned from tags: nothing to do.
    assert tag_release(repo, "my-proj", None, cutoff, hint="1.0") == (None, {})


def test_unreachable_index_falls_back_to_uvs_cache_once(tmp_path: Path) -> None:
    # A uv that answers only from its cache: every online call fails like a closed network.
    script = tmp_path / "uv"
    script.write_text(
        '#!/bin/sh\necho "$@" >> ' + str(tmp_path / "calls") + "\n"
        'case " $* " in *" --offline "*) echo pytest==7.4.4; exit 0;; esac\n'
        "echo 'error: Failed to fetch: Could not connect to the index' >&2\nexit 2\n"
    )
    script.chmod(0o755)
    uv = Uv(script, tmp_path / "build.log")
    assert uv.run("resolve", ["pip", "compile", "in.txt"]).strip() == "pytest==7.4.4"
    assert uv.offline, "later steps of the build must not wait for the network again"
    uv.run("install", ["pip", "install", "x"])
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == [
        "pip compile in.txt",
        "pip compile in.txt --offline",
        "pip install x --offline",
    ]


def test_other_failures_are_not_retried_offline(tmp_path: Path) -> None:
    script = tmp_path / "uv"
    script.write_text(
        f"#!/bin/sh\necho x >> {tmp_path / 'calls'}\necho '{UV_CONFLICT.splitlines()[0]}' >&2\nexit 1\n"
    )
    script.chmod(0o755)
    with pytest.raises(StepFailed):
        Uv(script, tmp_path / "log").run("resolve", ["pip", "compile", "in.txt"])
    assert (tmp_path / "calls").read_text().count("x") == 1


def test_an_index_uv_cannot_reach_is_a_network_failure_even_when_the_cache_lacks_a_package(
    tmp_path: Path,
) -> None:
    # What a user behind a TLS-intercepting proxy saw: uv distrusts the certificate, the
    # offline retry finds pytest missing from the cache and calls it unsatisfiable. That was
    # reported (and remembered for 12 hours) as a requirements conflict.
    fake = tmp_path / "uv"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--offline*)\n'
        "  echo 'error: No solution found when resolving dependencies' >&2\n"
        "  echo '  cause: Because pytest was not found in the cache and you require pytest,"
        " we can conclude that your requirements are unsatisfiable.' >&2\n"
        "  echo 'hint: Packages were unavailable because the network was disabled.' >&2\n"
        "  exit 1;;\n"
        "esac\n"
        "echo 'error: Failed to fetch: https://pypi.org/simple/pytest/' >&2\n"
        "echo '  cause: error sending request for url (https://pypi.org/simple/pytest/)' >&2\n"
        "echo '  cause: invalid peer certificate: UnknownIssuer' >&2\n"
        "exit 2\n"
    )
    fake.chmod(0o755)
    uv = Uv(fake, tmp_path / "build.log")
    with pytest.raises(StepFailed) as caught:
        uv.run("resolve dependencies", ["pip", "compile", "requirements.in"])
    assert caught.value.kind == "network"
    assert "SSL_CERT_FILE" in caught.value.describe()
    assert uv.offline  # the rest of the build stays offline

    # A real failure of the offline retry (not a cache miss) is still its own.
    fake.write_text(fake.read_text().replace("pytest was not found in the cache", "x<1 and x>2"))
    fake.write_text(fake.read_text().replace("because the network was disabled", "for x"))
    with pytest.raises(StepFailed) as caught:
        Uv(fake, tmp_path / "build2.log").run("resolve dependencies", ["pip", "compile", "r.in"])
    assert caught.value.kind == "resolve"


def test_a_refused_certificate_is_tried_again_with_the_system_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # README command 1 as an ordinary user behind this machine's TLS-intercepting proxy: uv's
    # bundled roots refuse the index, the system store (curl's) trusts it. Without the retry
    # every task of the demo failed on the network.
    monkeypatch.delenv("UV_SYSTEM_CERTS", raising=False)
    fake = tls_refusing_uv(tmp_path / "uv", tmp_path / "calls")
    uv = Uv(fake, tmp_path / "build.log")
    assert uv.run("resolve dependencies", ["pip", "compile", "r.in"]).strip() == "ok"
    assert uv.run("install dependencies", ["pip", "install", "six"]).strip() == "ok"
    calls = (tmp_path / "calls").read_text().splitlines()
    # Refused once, then the system store for this call and every later one; never offline.
    assert calls == [" pip compile r.in", "1 pip compile r.in", "1 pip install six"]
    assert uv.system_certs and not uv.offline


def test_the_user_s_choice_of_certificate_store_reaches_uv(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the TLS advice tells a user to set must not be dropped as ambient configuration.
    monkeypatch.setenv("UV_SYSTEM_CERTS", "1")
    monkeypatch.setenv("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
    env = isolated_env()
    assert env["UV_SYSTEM_CERTS"] == "1"
    assert env["SSL_CERT_FILE"] == "/etc/ssl/certs/ca-certificates.crt"
