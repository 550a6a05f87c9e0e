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

What a submission can and cannot do to a service: its code is the environment's, mounted
read-only and outside the workspace, so a patch cannot change it. The tests and the patched
code run in the same sandbox as the same user, so they could stop it or answer in its place,
which gives them nothing they lack: the code under test is theirs already. Services never
reach the outside either (the sandbox has no network), and the empty patch still fails.

This package's `__init__` imports nothing (tasks.py imports `models` from it).
"""
