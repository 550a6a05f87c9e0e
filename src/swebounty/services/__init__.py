"""Test services: a public service a repository's tests call, stood in for on the sandbox's
own loopback.

Grading is offline, and some test suites call a public service (requests' tests call
httpbin.org, unless $HTTPBIN_URL names another). A *service* is a known program, built from
the package index once into its own cached environment, that the harness starts inside the
tests' sandbox, on its loopback, before the tests, and stops with them. Per repository, an
entry of `envs/overrides.toml` declares the services its tests use (`services = ["httpbin"]`);
the tests are told where it is through the variables the catalog names (`HTTPBIN_URL`).

    models    ServiceUse: the record on the verdict that a service stood in (name, version)
    catalog   the known services (catalog.toml): packages pinned and dated, command, port,
              variables; and which of them a task's repository declares
    runtime   building a service's environment and wrapping the test command so the service
              runs beside it (driver.py, also the e2e tasks' app driver)
    driver    the process inside the sandbox that starts a service, waits on its port, runs
              the tests and stops it (standard library only)
    relay     inside the sandbox: the stand-in hosts' ports (80, 443) forwarded to the
              service, TLS ended with tlsgen.py's certificate (standard library only)
    tlsgen    on the host, with the service's environment: the stand-in hosts' certificate,
              signed by a CA whose key is never written
    replay    a backend answering from recorded mitmproxy flows (SWE-Lancer's flow.mitm),
              standard library only: the catalog's `mitmproxy-replay`, which an e2e task
              names in `requires.services` with its flows in `requires.service_data`

A task may also require services itself (`Task.requires.services`, catalog.for_task), and
give them files (`requires.service_data`, the catalog's `{data}`): a recorded backend.

Stand-in hosts: a service may answer for internet host names the tests use literally
(catalog `hosts`, plus names a repository's overrides route to it); inside the sandbox they
resolve to its loopback (Policy.hosts), where the relay listens (Policy.low_ports).

What a submission can and cannot do to a service: its code is the environment's, mounted
read-only and outside the workspace, so a patch cannot change it. The tests and the patched
code run in the same sandbox as the same user, so they could stop it or answer in its place,
which gives them nothing they lack: the code under test is theirs already. Services never
reach the outside either (the sandbox has no network), and the empty patch still fails. The
stand-in hosts' server key is theirs to read too: it lets them impersonate those hosts in their
own sandbox only; the CA's key, which could sign for any name, exists nowhere.

This package's `__init__` imports nothing (tasks.py imports `models` from it).
"""
