"""Stand-in hosts of test services: the catalog's hosts and ports and their checks, the hosts a
repository's overrides route to a service, the relay driver that `wrap` adds and what the
sandbox and the verdict are told, and relay.py forwarding as a plain process (the sandboxed
whole, TLS included: tests/test_services_sandbox.py)."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest

from swebounty.envs.overrides import load_overrides
from swebounty.services.catalog import Service, ServiceError, declared, load_catalog
from swebounty.services.runtime import (
    DRIVER,
    RELAY,
    TRUST_VARIABLES,
    UNSERVED,
    Built,
    StandIns,
    shipped_catalog,
)
from test_services import SERVICE, catalog_of, fake_env, free_port

STANDS_IN = (
    SERVICE.replace(
        'packages = ["echo-server==1.2.3", "waitress==3.0.2"]',
        'packages = ["echo-server==1.2.3", "waitress==3.0.2", "cryptography==44.0.3"]',
    )
    + 'hosts = ["Echo.example.org"]\nhttp_ports = [80]\ntls_ports = [443]\n'
    + 'hosts_env = { ECHO_URL = "http://echo.example.org/" }\n'
)
WHEN = datetime(2020, 1, 1, tzinfo=timezone.utc)


def echo(tmp_path: Path) -> Service:
    return load_catalog(catalog_of(tmp_path, STANDS_IN)).get("echo")


def test_a_service_declares_the_hosts_it_stands_in_for_and_where(tmp_path: Path) -> None:
    service = echo(tmp_path)
    assert service.hosts == ["echo.example.org"]  # names compare lower case
    assert service.stand_ins == ["80 http", "443 https"]
    httpbin = shipped_catalog().get("httpbin")
    assert {"httpbin.org", "www.httpbin.org"} <= set(httpbin.hosts)
    assert httpbin.stand_ins == ["80 http", "443 https"] and httpbin.pinned("cryptography")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (('"cryptography==44.0.3"', '"other==1"'), "tls_ports need cryptography"),
        (("http_ports = [80]\ntls_ports = [443]\n", ""), "hosts need http_ports or tls_ports"),
        (("tls_ports = [443]", "tls_ports = [80]"), "distinct ports"),
        (("tls_ports = [443]", "tls_ports = [41000]"), "distinct ports"),
        (('hosts = ["Echo.example.org"]', 'hosts = ["localhost"]'), "not host names"),
        (('hosts = ["Echo.example.org"]', 'hosts = ["a.org\\n1.2.3.4 b.org"]'), "not host names"),
    ],
)
def test_stand_in_fields_are_checked(tmp_path: Path, change: tuple[str, str], says: str) -> None:
    assert change[0] in STANDS_IN
    with pytest.raises(ServiceError, match="is invalid") as info:
        load_catalog(catalog_of(tmp_path, STANDS_IN.replace(*change)))
    assert says in str(info.value)


def overrides_of(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "overrides.toml"
    path.write_text(body)
    return path


def test_overrides_route_more_hosts_to_a_declared_service(tmp_path: Path) -> None:
    catalog = load_catalog(catalog_of(tmp_path, STANDS_IN))
    path = overrides_of(tmp_path, '[[override]]\nrepo = "org/proj"\nwhy = "tests follow a '
                        'redirect off host"\nservices = ["echo"]\n'
                        'hosts = { "WWW.Example.co.uk" = "echo" }\n')  # fmt: skip
    (got,) = declared(load_overrides(path), catalog, "org/proj", "1.0", WHEN)
    assert got.hosts == ["echo.example.org", "www.example.co.uk"]
    assert catalog.get("echo").hosts == ["echo.example.org"]  # the catalog is not changed
    # requests' shipped entry: google.co.uk, the off-host redirect target of its tests
    requests = declared(load_overrides(), shipped_catalog(), "psf/requests", "2.3", WHEN)
    assert "www.google.co.uk" in requests[0].hosts


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ('hosts = { "x.org" = "ftp" }\n', "a service its overrides do not declare"),
        ('hosts = { "x.org\\n1.2.3.4 pypi.org" = "echo" }\n', "not host names"),
    ],
)
def test_a_misrouted_host_is_an_error(tmp_path: Path, extra: str, says: str) -> None:
    catalog = load_catalog(catalog_of(tmp_path, STANDS_IN))
    path = overrides_of(tmp_path, '[[override]]\nrepo = "org/proj"\nwhy = "tests call '
                        f'another host too"\nservices = ["echo"]\n{extra}')  # fmt: skip
    with pytest.raises(ValueError, match=says):
        declared(load_overrides(path), catalog, "org/proj", "1.0", WHEN)


def test_two_services_cannot_stand_in_on_the_same_port(tmp_path: Path) -> None:
    text = STANDS_IN + "\n" + STANDS_IN.replace('"echo"', '"echo2"').replace(
        "Echo.example.org", "other.example.org"
    ).replace("41000", "41001")  # fmt: skip
    catalog = load_catalog(catalog_of(tmp_path, text))
    path = overrides_of(tmp_path, '[[override]]\nrepo = "org/proj"\nwhy = "tests call two '
                        'services"\nservices = ["echo", "echo2"]\n')  # fmt: skip
    with pytest.raises(ServiceError, match="same port"):
        declared(load_overrides(path), catalog, "org/proj", "1.0", WHEN)


def test_a_broken_overrides_file_names_itself(tmp_path: Path) -> None:
    path = overrides_of(tmp_path, "[[override]]\nrepo = \n")
    with pytest.raises(ValueError, match=f"{path} is invalid") as info:
        load_overrides(path)
    assert not isinstance(info.value, ServiceError)  # each file keeps its own error


def built(tmp_path: Path, service: Service) -> StandIns:
    b = Built(service=service, env=fake_env(tmp_path, "env-echo"), tls=tmp_path / "tls")
    return StandIns(built=[b], logs=tmp_path / "logs")


def test_wrap_adds_the_relay_inside_the_services_driver(tmp_path: Path) -> None:
    ins = built(tmp_path, echo(tmp_path))
    argv = ins.wrap(["/task/python", "run_pytest.py"], isolated=True)
    assert argv[argv.index("--port") + 1] == "41000"  # the service first
    inner = argv[argv.index("--pytest") + 1 :]
    assert inner[2] == str(DRIVER) and inner[inner.index("--port") + 1] == "443"
    relay = inner[inner.index("--") + 1 : inner.index("--pytest")]
    assert relay[:2] == ["/usr/bin/env", "-i"]
    at = relay.index(str(RELAY))
    assert relay[at + 1 :] == ["--to", "41000", "--http", "80", "--https", "443",
                               "--cert", str(tmp_path / "tls" / "cert.pem"),
                               "--key", str(tmp_path / "tls" / "key.pem")]  # fmt: skip
    assert inner[-2:] == ["/task/python", "run_pytest.py"]
    assert ins.network() == {"hosts": ["echo.example.org"], "low_ports": True}
    ca = str(tmp_path / "tls" / "ca.pem")
    assert ins.variables() == {"ECHO_URL": "http://echo.example.org/",
                               **dict.fromkeys(TRUST_VARIABLES, ca)}  # fmt: skip
    assert tmp_path / "tls" in {m.path for m in ins.mounts() if not m.writable}
    (use,) = ins.uses()
    assert use.hosts == ["echo.example.org"] and use.host_ports == ["80 http", "443 https"]
    assert use.env["SSL_CERT_FILE"] == ca and not use.missing


def test_without_a_sandbox_of_its_own_stand_ins_are_not_served_and_the_verdict_says_so(
    tmp_path: Path,
) -> None:
    ins = built(tmp_path, echo(tmp_path))
    argv = ins.wrap(["true"], isolated=False)
    assert str(RELAY) not in argv and ins.network() == {}
    assert not set(TRUST_VARIABLES) & set(ins.variables())
    assert ins.variables() == {"ECHO_URL": f"http://127.0.0.1:{argv[argv.index('--port') + 1]}/"}
    (use,) = ins.uses()
    assert use.hosts == [] and use.missing == UNSERVED


def test_the_stand_in_ca_joins_the_environments_certifi_bundles(tmp_path: Path) -> None:
    ins = built(tmp_path, echo(tmp_path))
    (tmp_path / "tls").mkdir()
    (tmp_path / "tls" / "ca.pem").write_bytes(b"-----BEGIN CERTIFICATE-----\nCA\n")
    env = tmp_path / "env"
    bundle = env / "lib" / "python3.6" / "site-packages" / "certifi" / "cacert.pem"
    bundle.parent.mkdir(parents=True)
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\nPUBLIC\n")
    ins.logs.mkdir()
    ins.wrap(["true"], isolated=True)
    (overlay,) = ins.trust(env)
    assert overlay.path == bundle and overlay.source and not overlay.writable
    assert overlay.source.read_bytes().endswith(b"PUBLIC\n-----BEGIN CERTIFICATE-----\nCA\n")
    assert bundle.read_bytes() == b"-----BEGIN CERTIFICATE-----\nPUBLIC\n"  # env untouched
    assert ins.uses()[0].trusted == [str(bundle)]
    assert ins.trust(None) == []  # no tests' environment named: nothing to trust
    unsafe = built(tmp_path, echo(tmp_path))
    unsafe.wrap(["true"], isolated=False)
    assert unsafe.trust(env) == []  # no stand-ins served: nothing to trust


def test_only_the_tests_environment_s_own_bundles_are_trusted(tmp_path: Path) -> None:
    # A package's build may leave `certifi` (or a folder above it) a link to a host folder:
    # its file must not be copied into the sandbox nor the link's target mounted over.
    ins = built(tmp_path, echo(tmp_path))
    (tmp_path / "tls").mkdir()
    (tmp_path / "tls" / "ca.pem").write_bytes(b"CA\n")
    outside = tmp_path / "host" / "certifi"
    outside.mkdir(parents=True)
    (outside / "cacert.pem").write_bytes(b"HOST SECRET\n")
    env = tmp_path / "env"
    (env / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (env / "lib" / "python3.11" / "site-packages" / "certifi").symlink_to(outside)
    (env / "lib" / "python3.12").symlink_to(tmp_path / "host")  # .../site-packages under it
    (tmp_path / "host" / "site-packages").symlink_to(tmp_path / "host")
    real = env / "lib" / "python3.9" / "site-packages" / "certifi" / "cacert.pem"
    real.parent.mkdir(parents=True)
    real.write_bytes(b"PUBLIC\n")
    ins.logs.mkdir()
    ins.wrap(["true"], isolated=True)
    assert (env / "lib/python3.11/site-packages/certifi/cacert.pem").read_bytes()  # a glob's
    (overlay,) = ins.trust(env)
    assert overlay.path == real and overlay.source
    assert overlay.source.read_bytes() == b"PUBLIC\nCA\n"
    assert not any(b"SECRET" in p.read_bytes() for p in (ins.logs.parent / "trust").iterdir())
    # Another environment with a linked lib/ has nothing to trust, even its certifi's.
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "lib").symlink_to(env / "lib")
    assert ins.trust(linked) == [] and ins.uses()[0].trusted == []


def _serve_http() -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    code = ("import http.server as s; s.test(HandlerClass=s.SimpleHTTPRequestHandler, "
            f"port={port}, bind='127.0.0.1')")  # fmt: skip
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    return server, port


def _wait(port: int) -> None:
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing answered on {port}")


@pytest.mark.parametrize("tls", [False, True])
def test_the_relay_forwards_plain_and_tls_ports_to_the_service(tmp_path: Path, tls: bool) -> None:
    args: list[str] = []
    if tls:
        if not shutil.which("openssl"):
            pytest.skip("no openssl command to make a certificate with")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost", "-keyout",
                        str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")],
                       check=True, capture_output=True)  # fmt: skip
        args = ["--cert", str(tmp_path / "cert.pem"), "--key", str(tmp_path / "key.pem")]
    server, port = _serve_http()
    front = free_port()
    relay = subprocess.Popen([sys.executable, "-I", str(RELAY), "--to", str(port),
                              "--https" if tls else "--http", str(front), *args])  # fmt: skip
    try:
        _wait(port)
        _wait(front)
        scheme = "https" if tls else "http"
        context = ssl.create_default_context(cafile=str(tmp_path / "cert.pem")) if tls else None
        url = f"{scheme}://localhost:{front}/"
        with urllib.request.urlopen(url, timeout=10, context=context) as answer:
            assert answer.status == 200 and b"Directory listing" in answer.read()
        if tls:  # a client that does not trust the certificate is refused
            with pytest.raises(OSError):
                urllib.request.urlopen(url, timeout=10)
    finally:
        for proc in (relay, server):
            proc.kill()
            proc.wait()
