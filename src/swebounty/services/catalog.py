"""The catalog of test services (catalog.toml), and which of them a task's repository declares
(or the task itself: `for_task`).

A service is data: the packages that are it (exact pins, resolved with the index as of a fixed
date, on an interpreter of its own; none for a program of swebounty's own that needs only the
standard library, such as the replaying backend), the command that serves it on a loopback
port, the files of the task it reads (`{data}`: a replay's recorded flows), and the variables
that tell the tests where it is. Which repositories use which service is per
repository data too, in `envs/overrides.toml` (`services = [...]`, narrowed by versions or
dates like any override). A broken catalog, or a declaration naming a service the catalog does
not hold, is an error: silently running without the service would turn every test that needs
it into a failure that looks like the submission's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from swebounty.envs.interpreters import Interpreter, find
from swebounty.envs.overrides import Override, load_toml, matching
from swebounty.sandbox.base import HOST_NAME
from swebounty.tasks import Task

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
EXACT_PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$")


class ServiceError(ValueError):
    """A service is unknown, or the catalog is not valid."""


class Service(BaseModel):
    """One known service: how to build it, start it, and tell the tests where it is."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,39}$")
    why: str = Field(min_length=10, description="which tests call the public service")
    python: str = Field(
        description="the service's own interpreter: a minor version ('3.12') or a range "
        "('>=3.9,<3.13': the newest the machine has in it)"
    )
    packages: list[str] = Field(
        default_factory=list,
        description="exact pins: name==version; none: standard library only, a program of "
        "swebounty's own under {tools} (then version_of is 'swebounty')",
    )
    cutoff: datetime = Field(description="the index as of this date, for what the pins pull in")
    version_of: str = Field(description="the package whose version names the service")
    argv: list[str] = Field(
        min_length=2,
        description="{python}, {port}, {tools} filled in; an item that is {data} becomes the "
        "task's files for the service (Requirements.service_data), one item each",
    )
    port: int = Field(ge=1024, le=65535)
    env: dict[str, str] = Field(default_factory=dict, description="for the tests; {port}")
    ready_s: float = Field(60.0, gt=0, le=600)
    hosts: list[str] = Field(
        default_factory=list, description="internet host names it stands in for (loopback)"
    )
    http_ports: list[int] = Field(default_factory=list, description="where hosts answer plainly")
    hosts_env: dict[str, str] = Field(
        default_factory=dict,
        description="variables for the tests when the stand-in hosts are served: these win "
        "over `env` (HTTPBIN_URL names httpbin.org itself, as the tests' own default does)",
    )
    tls_ports: list[int] = Field(
        default_factory=list, description="where hosts answer with TLS (a certificate of a CA "
        "made for the run's environment); needs cryptography among the packages",
    )  # fmt: skip
    unanswered_marker: str = Field(
        "", max_length=80, description="a line of its log starting with this names a request "
        "it had no answer for (a replay's miss): the verdict lists them",
    )  # fmt: skip

    @field_validator("hosts")
    @classmethod
    def _host_names(cls, value: list[str]) -> list[str]:
        bad = [h for h in value if not HOST_NAME.match(h) or h.lower() == "localhost"]
        if bad:
            raise ValueError(f"not host names a service may stand in for: {bad}")
        return [h.lower() for h in value]

    @field_validator("python")
    @classmethod
    def _python(cls, value: str) -> str:
        if re.fullmatch(r"3\.\d+", value):
            return value
        try:
            SpecifierSet(value)
        except InvalidSpecifier as exc:
            raise ValueError(f"python {value!r} is neither 3.N nor a version range") from exc
        return value

    def interpreter(self, interpreters: Sequence[Interpreter]) -> Interpreter | None:
        """The interpreter it runs on here: the newest of its minor version, or the newest
        in its range."""
        if re.fullmatch(r"3\.\d+", self.python):
            return find(interpreters, self.python)
        wanted = SpecifierSet(self.python)
        fits = [i for i in interpreters if wanted.contains(i.version, prereleases=True)]
        return max(fits, key=lambda i: Version(i.version), default=None)

    @field_validator("packages")
    @classmethod
    def _pinned(cls, value: list[str]) -> list[str]:
        loose = [p for p in value if not EXACT_PIN.match(p)]
        if loose:
            raise ValueError(f"packages must be exact pins (name==version): {loose}")
        return value

    @field_validator("env", "hosts_env")
    @classmethod
    def _variable_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [
            k for k in value if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", k) or k[:10] == "SWEBOUNTY_"
        ]
        if bad:
            raise ValueError(f"not a variable a service may set: {bad}")
        return value

    @model_validator(mode="after")
    def _placeholders(self) -> Service:
        if self.argv[0] != "{python}":
            raise ValueError("argv must start with {python}: the service environment's own")
        for where, texts, allowed in (("argv", self.argv, {"python", "port", "tools", "data"}),
                                      ("env", [*self.env.values(), *self.hosts_env.values()], {"port"})):  # fmt: skip
            unknown = {m for t in texts for m in PLACEHOLDER.findall(t)} - allowed
            if unknown:
                raise ValueError(f"{where} has unknown placeholders {sorted(unknown)}")
        if any("{data}" in a and a != "{data}" for a in self.argv):
            raise ValueError("{data} must be an argv item of its own (it becomes the files)")
        if not self.packages and self.version_of != "swebounty":
            raise ValueError("a service without packages is swebounty's own: version_of "
                             "'swebounty'")  # fmt: skip
        if self.packages and not any(
            p.split("==")[0].lower() == self.version_of.lower() for p in self.packages
        ):
            raise ValueError(f"version_of {self.version_of!r} is not one of the packages")
        ports = [*self.http_ports, *self.tls_ports]
        if (
            len(set(ports)) != len(ports)
            or self.port in ports
            or not all(0 < p < 65536 for p in ports)
        ):
            raise ValueError(f"http_ports and tls_ports must be distinct ports, not {self.port}")
        if self.hosts and not ports:
            raise ValueError("hosts need http_ports or tls_ports: where they answer")
        if self.tls_ports and not self.pinned("cryptography"):
            raise ValueError("tls_ports need cryptography among the packages (tlsgen.py)")
        return self

    def pinned(self, package: str) -> str | None:
        """The pinned version of `package`, or None."""
        for pin in self.packages:
            name, _, version = pin.partition("==")
            if name.lower() == package.lower():
                return version
        return None

    @property
    def version(self) -> str:
        """The pinned version of `version_of` (swebounty's own for a service of no package):
        what a verdict names the service by."""
        if not self.packages:
            from swebounty import __version__

            return __version__
        found = self.pinned(self.version_of)
        assert found is not None, "checked by the validator"
        return found

    @property
    def takes_data(self) -> bool:
        """It reads files the task gives it (`{data}`): a replay's recorded flows."""
        return "{data}" in self.argv

    @property
    def stand_ins(self) -> list[str]:
        """Where it answers for its hosts, as a verdict records it: "80 http", "443 https"."""
        return [f"{p} http" for p in self.http_ports] + [f"{p} https" for p in self.tls_ports]

    def command(
        self, python: str, port: int, tools: str = "", data: Sequence[str] = ()
    ) -> list[str]:
        """`tools`: swebounty/services/ (its helpers, such as gunicorn_conf.py); `data`: the
        task's files for it, in place of a `{data}` item."""
        found: list[str] = []
        for a in self.argv:
            if a == "{data}":
                found += data
            else:
                found.append(_fill(a, python=python, port=str(port), tools=tools))
        return found

    def variables(self, port: int, hosts_served: bool = False) -> dict[str, str]:
        found = {**self.env, **(self.hosts_env if hosts_served else {})}
        return {k: _fill(v, port=str(port)) for k, v in found.items()}


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    service: list[Service] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> Catalog:
        names = [s.name for s in self.service]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"services named twice: {twice}")
        return self

    def get(self, name: str) -> Service:
        for s in self.service:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.service) or "none"
        raise ServiceError(f"no test service named {name!r} (the catalog has: {known})")


def _fill(text: str, **values: str) -> str:
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def load_catalog(path: Path | None = None) -> Catalog:
    """The shipped catalog, or the one at `path`."""
    return load_toml(Catalog, "swebounty.services", "catalog.toml", path, ServiceError)


def declared(
    overrides: list[Override],
    catalog: Catalog,
    repo: str,
    version: str | None,
    when: datetime | None,
) -> list[Service]:
    """The services the overrides declare for this repository (version, base commit date), in
    the order declared, each once, with the host names the overrides route to them added.
    Raises ServiceError for a name the catalog does not hold, a host routed to a service not
    declared, a host claimed twice, or two services standing in on the same port."""
    found = matching(overrides, repo, version, when)
    names = [n for o in found for n in o.services]
    services = {n: catalog.get(n) for n in dict.fromkeys(names)}
    extra: dict[str, list[str]] = {}
    for o in found:
        for host, name in o.hosts.items():
            if name not in services:
                raise ServiceError(f"{repo}: host {host!r} is routed to {name!r}, a service "
                                   "its overrides do not declare")  # fmt: skip
            extra.setdefault(name, []).append(host.lower())
    result = [s.model_copy(update={"hosts": list(dict.fromkeys(s.hosts + extra.get(s.name, [])))})
              for s in services.values()]  # fmt: skip
    for s in result:
        if s.hosts and not s.stand_ins:
            raise ServiceError(f"{repo}: hosts are routed to {s.name!r}, which answers on no "
                               "port of theirs (http_ports, tls_ports)")  # fmt: skip
    hosts = [h for s in result for h in s.hosts]
    ports = [p for s in result if s.hosts for p in [*s.http_ports, *s.tls_ports]]
    if len(set(hosts)) != len(hosts) or len(set(ports)) != len(ports):
        raise ServiceError(f"{repo}: two test services stand in for the same host or on the "
                           f"same port (hosts {hosts}, ports {ports})")  # fmt: skip
    return result


def for_task(
    task: Task, overrides: list[Override], catalog: Catalog, when: datetime | None
) -> tuple[list[Service], dict[str, list[str]]]:
    """The services a task's tests run beside: its repository's (`declared`), then those the
    task requires itself (`requires.services`: a replaying backend), each once; and the task's
    files for them (`requires.service_data`). Raises ServiceError as `declared` does, and for a
    required service the catalog does not hold."""
    found = declared(overrides, catalog, task.repo, task.version, when)
    need = task.requires
    if need is None:
        return found, {}
    names = {s.name for s in found}
    found += [catalog.get(n) for n in dict.fromkeys(need.services) if n not in names]
    return found, dict(need.service_data)
