"""Test services at run time: their environments, and the test command that runs them beside
the tests, in the tests' sandbox.

`build` gives each declared service its environment: an ordinary cached swebounty environment
of the service's exact pins on its own interpreter, resolved with the index as of the catalog's
date, built once and shared (nothing of the task's environment, which may be Python 2012's).
`StandIns.wrap` puts the driver (driver.py, the same one the e2e tasks' app runs under) in
front of the test command, once per service: inside the sandbox the driver starts the service
on the loopback, waits for its port, runs the tests and stops it. The service's environment
and the driver are mounted read-only; the service runs from its environment's folder with `-I`
and a clean environment, so nothing of the workspace (the submission's files) is on its path.
Its log is the one thing it writes outside the sandbox's private /tmp.

Task data: a service whose command takes `{data}` (the replaying backend) gets the files the
task gives it (`Requirements.service_data`), copied (regular files, no links, bounded) into a
read-only folder of the run; the lines of its log that start with its `unanswered_marker` (a
replay's misses) are what the verdict's record lists as unanswered. The log is written inside
the sandbox, where the submission's code runs too: what it says is reported, never scored.

Stand-in hosts: a service that stands in for internet hosts (catalog `hosts`, and the names a
repository's overrides route to it) gets a second driver whose app is relay.py: it answers on
the hosts' ports (80, 443) and forwards to the service. The sandbox resolves those names to
its loopback and lets it bind ports below 1024 (Policy.hosts, Policy.low_ports); the TLS files
(tlsgen.py: a CA whose key was never kept) are made once per environment and set of hosts, and
the tests are told to trust that CA through the variables of TRUST_VARIABLES. The --unsafe
backend has neither a hosts file nor a network of its own: there the stand-ins are not served
and the verdict's record says so (ServiceUse.missing).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from swebounty import safefs
from swebounty.envs import EnvBuildError, Environment, EnvManager
from swebounty.envs.interpreters import Interpreter
from swebounty.sandbox.base import Mount, RunResult, Sandbox
from swebounty.services.catalog import Catalog, Service, load_catalog
from swebounty.services.models import ServiceUse
from swebounty.tasks import EnvSpec

DRIVER = Path(__file__).resolve().with_name("driver.py")
RELAY = DRIVER.with_name("relay.py")
TLSGEN = DRIVER.with_name("tlsgen.py")
# What tests read to trust a CA: requests (when it reads the environment), Python's ssl and
# most OpenSSL clients, curl, Node.
TRUST_VARIABLES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")
TLS_FORMAT = 1  # bump when tlsgen.py's files change: names the cached TLS folders
CERTIFI_BUNDLE = "site-packages/certifi/cacert.pem"  # in an environment's lib/python*/
UNSERVED = "stand-in hosts need an isolated sandbox (its own hosts file and network)"
APP_DID_NOT_ANSWER = 90  # driver.py's exit code when a service never answered
LOG_LIMIT = 16 << 20
DATA_LIMIT = 512 << 20  # each file a service reads (SWE-Lancer's flows: a few MB)
BUNDLE_LIMIT = 8 << 20  # certifi's is ~0.3 MB


@functools.lru_cache(maxsize=1)
def shipped_catalog() -> Catalog:
    return load_catalog()


def service_spec(service: Service, interpreters: Sequence[Interpreter]) -> EnvSpec:
    """The service's environment: its pins on its interpreter, as of its date; no project.
    The interpreter's minor version is in the spec, so in the environment's key. Raises
    EnvBuildError when the machine has none in the service's range."""
    found = service.interpreter(interpreters)
    if found is None:
        raise EnvBuildError(f"the {service.name} test service runs on Python {service.python}, "
                            "and none is installed here: install one (pyenv install, uv python "
                            "install) or pass its folder with --python-dir", kind="interpreter")  # fmt: skip
    return EnvSpec(python=found.minor_str, install=list(service.packages),
                   install_project=False, cutoff=service.cutoff)  # fmt: skip


@dataclass
class Built:
    service: Service
    env: Environment
    tls: Path | None = None  # tlsgen.py's files, when the service has tls_ports
    port: int = 0  # chosen by wrap()
    hosts_served: bool = False  # set by wrap(): only in an isolated sandbox
    data: list[Path] = field(default_factory=list)  # the task's files, copied (build)
    names: list[str] = field(default_factory=list)  # their names in the task
    unanswered: list[str] = field(default_factory=list)  # read from its log (keep_logs)


@dataclass
class StandIns:
    """The services of one test run, built; `wrap` says how they run beside the tests."""

    built: list[Built]
    logs: Path  # the folder their logs go to (the sandbox's to write)
    tests_env: Path | None = None  # the environment the tests run in (see `trust`)
    trusted: list[str] = field(default_factory=list)  # CA bundles the stand-in CA was added to

    def __bool__(self) -> bool:
        return bool(self.built)

    def wrap(self, argv: list[str], *, isolated: bool) -> list[str]:
        """`argv` run under one driver per service (the first declared outermost). In a
        sandbox of its own the network namespace is new, so the catalog's port is free; with
        --unsafe, services of runs side by side share the host's loopback: a free one."""
        for b in self.built:
            b.port = b.service.port if isolated else _free_port()
            b.hosts_served = isolated and bool(b.service.hosts)
        for b in reversed(self.built):
            python = str(b.env.python)
            if b.hosts_served:
                s = b.service
                relay = [python, "-I", str(RELAY), "--to", str(b.port)]
                relay += [a for p in s.http_ports for a in ("--http", str(p))]
                relay += [a for p in s.tls_ports for a in ("--https", str(p))]
                if b.tls:
                    relay += ["--cert", str(b.tls / "cert.pem"), "--key", str(b.tls / "key.pem")]
                argv = self._driver(b, f"{s.name}-relay", [*s.http_ports, *s.tls_ports][-1],
                                    relay, argv)  # fmt: skip
            cmd = b.service.command(python, b.port, str(DRIVER.parent), list(map(str, b.data)))
            argv = self._driver(b, b.service.name, b.port, [cmd[0], "-I", *cmd[1:]], argv)
        return argv

    def _driver(self, b: Built, log: str, port: int, app: list[str], tests: list[str]) -> list[str]:
        """driver.py starting `app` (from the service's folder, in a clean environment), then,
        once `port` answers, `tests`."""
        clean = ["/usr/bin/env", "-i", f"PATH={b.env.path / 'bin'}:/usr/bin:/bin",
                 "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "LC_ALL=C.UTF-8"]  # fmt: skip
        return [str(b.env.python), "-I", str(DRIVER), "--port", str(port),
                "--app-log", str(self.logs / f"{log}.log"),
                "--app-cwd", str(b.env.path), "--ready-s", str(b.service.ready_s),
                "--", *clean, *app, "--pytest", *tests]  # fmt: skip

    def attach(
        self, sandbox: Sandbox, argv: list[str], env: dict[str, str], mounts: list[Mount]
    ) -> tuple[list[str], dict[str, str]]:
        """The test command and its variables with the services beside it (`mounts` gets
        theirs); unchanged without services."""
        if not self.built:
            return argv, env
        sandbox.prepare_workdir(self.logs)
        argv = self.wrap(argv, isolated=sandbox.isolated)
        trusted = self.trust(self.tests_env)
        mounts += self.mounts() + trusted
        return argv, {**env, **self.variables()}

    def trust(self, env: Path | None) -> list[Mount]:
        """Mounts that put the stand-ins' CA in the certifi bundles of `env`, the environment
        the tests run in: a client that verifies against certifi's file rather than
        $SSL_CERT_FILE (requests' Session.send) trusts the stand-in hosts as it would trust
        the real ones. The bundle, with the CA appended, is shown over the environment's file
        inside the sandbox only; the environment itself is not changed. Only `env`'s own
        bundles: not those of the other read-only mounts (the interpreter, the guard's or the
        services' folders), nor one reached through a link (`certifi_bundles`)."""
        cas = [b.tls / "ca.pem" for b in self.built if b.hosts_served and b.tls]
        if not cas or env is None:
            return []
        extra = b"".join(ca.read_bytes() for ca in cas)
        found: list[Mount] = []
        for bundle, data in certifi_bundles(env):
            copy = self.logs.parent / "trust" / f"{len(found)}.pem"
            copy.parent.mkdir(mode=0o755, exist_ok=True)
            copy.write_bytes(data.rstrip(b"\n") + b"\n" + extra)
            copy.chmod(0o644)
            found.append(Mount(path=bundle, source=copy))
        self.trusted = [str(m.path) for m in found]
        return found

    def network(self) -> dict[str, object]:
        """The Policy fields the stand-in hosts need (call after `attach`): their names resolve
        to the loopback, whose ports below 1024 bind."""
        hosts = [h for b in self.built if b.hosts_served for h in b.service.hosts]
        return {"hosts": hosts, "low_ports": True} if hosts else {}

    def explain(self, crash: str | None, run: RunResult) -> str | None:
        """A run without results whose driver said a service never answered. Still a crash
        for baseline.py to attribute: the tests could exit with that code too."""
        if crash and self.built and run.returncode == APP_DID_NOT_ANSWER and not run.channel:
            names = ", ".join(f"service-{b.service.name}.log" for b in self.built)
            crash += f"; a test service may not have answered on its port (see {names})"
        return crash

    def variables(self) -> dict[str, str]:
        """What the tests are told (call after `wrap`: the ports are chosen there)."""
        return {k: v for b in self.built for k, v in _variables(b).items()}

    def mounts(self) -> list[Mount]:
        paths = {DRIVER.parent} | {p for b in self.built for p in (b.env.path,
                                                                     b.env.interpreter_prefix)}  # fmt: skip
        paths |= {b.tls for b in self.built if b.tls and b.hosts_served}
        paths |= {b.data[0].parent for b in self.built if b.data}
        return [Mount(path=p) for p in sorted(paths)] + [Mount(path=self.logs, writable=True)]

    def uses(self) -> list[ServiceUse]:
        """What the verdict records: which services stood in, and which versions."""
        return [
            ServiceUse(
                name=b.service.name,
                version=b.service.version,
                packages=list(b.service.packages),
                python=b.env.interpreter,
                env_key=b.env.key,
                url=f"http://127.0.0.1:{b.port}/" if b.port else "",
                env=_variables(b) if b.port else {},
                hosts=list(b.service.hosts) if b.hosts_served else [],
                host_ports=b.service.stand_ins if b.hosts_served else [],
                trusted=list(self.trusted) if b.hosts_served and b.tls else [],
                missing="" if b.hosts_served or not b.service.hosts or not b.port else UNSERVED,
                data=list(b.names),
                unanswered=list(b.unanswered),
            )
            for b in self.built
        ]

    def keep_logs(self, log_dir: Path) -> None:
        """Copy the services' logs (written in the sandbox: read link-free, bounded)."""
        for b in self.built:
            for name in (f"{b.service.name}.log", f"{b.service.name}-relay.log"):
                data = safefs.read_beneath(self.logs, name, LOG_LIMIT)
                if data is not None:
                    (log_dir / f"service-{name}").write_bytes(data)
                    if name == f"{b.service.name}.log":
                        b.unanswered = _unanswered(data, b.service.unanswered_marker)


def build(
    services: list[Service],
    envs: EnvManager,
    scratch: Path,
    tests_env: Path | None = None,
    data: Mapping[str, Sequence[str]] | None = None,
) -> StandIns:
    """Each service's environment (built once per cache, then shared), and a folder for their
    logs under `scratch`; `tests_env` is the environment the tests will run in, whose certifi
    bundles get the stand-in CA (None: the caller only builds, nothing runs); `data`: the
    task's files per service (`Requirements.service_data`). Raises EnvBuildError when one
    cannot be built, or a service's data cannot be read: the tests would fail for want of it,
    which is the harness's failure, not the submission's."""
    logs = scratch / "services"
    if not services:
        return StandIns(built=[], logs=logs, tests_env=tests_env)
    empty = scratch / "service-project"  # the build installs no project: nothing to read
    empty.mkdir(exist_ok=True)
    built = [
        Built(service=s, env=envs.ensure(service_spec(s, envs.interpreters), empty))
        for s in services
    ]
    for b in built:
        b.names = list((data or {}).get(b.service.name, []))
        b.data = _copy_data(b.service, b.names, scratch / "service-data" / b.service.name)
    for b in built:
        if b.service.hosts and b.service.tls_ports:
            b.tls = tls_files(b.env, b.service.hosts, envs.cache.root / "tls")
    logs.mkdir(mode=0o755)
    return StandIns(built=built, logs=logs, tests_env=tests_env)


def _copy_data(service: Service, names: Sequence[str], dest: Path) -> list[Path]:
    """The task's files for `service`, copied into `dest` (readable by the sandbox): each a
    regular file reached through no link, at most DATA_LIMIT bytes, that any user may read: the
    dataset names them, and what they hold is shown to the sandbox, whose user is another, so
    a file kept from other users (a key, a credential) is refused, never copied."""
    if service.takes_data and not names:
        raise EnvBuildError(f"the {service.name} test service reads the task's files, and the "
                            "task gives it none (requires.service_data)")  # fmt: skip
    if not service.takes_data and names:
        raise EnvBuildError(f"the {service.name} test service reads no files of the task")
    copies = []
    for i, name in enumerate(names):
        path = Path(name)
        raw = _public_file(path) if path.is_absolute() else None
        if raw is None:
            raise EnvBuildError(f"the {service.name} test service's file {name} is not a "
                                f"regular file of at most {DATA_LIMIT >> 20} MiB that any user "
                                "may read, reached through no link, by an absolute path")  # fmt: skip
        dest.mkdir(mode=0o755, parents=True, exist_ok=True)
        copy = dest / f"{i}-{path.name}"
        copy.write_bytes(raw)
        copy.chmod(0o644)
        copies.append(copy)
    return copies


def _public_file(path: Path) -> bytes | None:
    """The bytes of `path`: a regular file (not a link: O_NOFOLLOW; a FIFO does not block
    the open) readable by other users, of at most DATA_LIMIT bytes; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not info.st_mode & stat.S_IROTH:
            return None
        raw = handle.read(DATA_LIMIT + 1)
    return raw if len(raw) <= DATA_LIMIT else None


def _unanswered(log: bytes, marker: str, limit: int = 100) -> list[str]:
    """The requests named by the log's lines that start with `marker`, each once, in order."""
    if not marker:
        return []
    found: dict[str, None] = {}
    for line in log.decode("utf-8", "replace").splitlines():
        if line.startswith(marker) and len(found) < limit:
            found[line[len(marker) :].strip()[:500]] = None
    return list(found)


def certifi_bundles(env: Path) -> list[tuple[Path, bytes]]:
    """(path, contents) of each certifi bundle of the environment `env`
    (lib/python*/site-packages/certifi/cacert.pem), each reached without following a link:
    a package's build may have made `certifi` or a folder above it a link to a host folder,
    whose file would be copied into the sandbox and the link's target mounted over."""
    try:
        with safefs.open_dir(env, ["lib"]) as lib, os.scandir(lib) as entries:
            minors = sorted(e.name for e in entries if e.name.startswith("python")
                            and e.is_dir(follow_symlinks=False))  # fmt: skip
    except OSError:  # no lib/, or a link
        return []
    found = []
    for minor in minors:
        rel = f"lib/{minor}/{CERTIFI_BUNDLE}"
        data = safefs.read_beneath(env, rel, BUNDLE_LIMIT)  # None through a link
        if data is not None:
            found.append((env / rel, data))
    return found


def tls_files(env: Environment, hosts: list[str], root: Path) -> Path:
    """The folder of tlsgen.py's files for these hosts, made with `env`'s interpreter the
    first time (into a new folder, renamed into place: runs side by side may race)."""
    key = json.dumps([TLS_FORMAT, env.key, sorted(hosts)]).encode()
    final = root / hashlib.sha256(key).hexdigest()[:20]
    if (final / "key.pem").is_file():
        return final
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".new-", dir=root))
    try:
        made = subprocess.run([str(env.python), "-I", str(TLSGEN), str(work), *sorted(hosts)],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        if made.returncode != 0:
            raise EnvBuildError(f"could not make the TLS files of the stand-in hosts {hosts} "
                                f"with {env.python}: {made.stderr[-2000:]}")  # fmt: skip
        os.chmod(work, 0o755)
        try:
            os.rename(work, final)
        except OSError:  # another run made it first
            if not (final / "key.pem").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _variables(b: Built) -> dict[str, str]:
    found = b.service.variables(b.port, b.hosts_served)
    if b.hosts_served and b.tls:
        found.update(dict.fromkeys(TRUST_VARIABLES, str(b.tls / "ca.pem")))
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
