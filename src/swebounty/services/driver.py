"""Inside the sandbox: start an app, wait until it answers, run the tests, stop the app.

    python driver.py --port N --app-log FILE [--app-cwd DIR] --ready-s S \
        -- APP ARGV... --pytest TEST ARGV...

One sandboxed process tree, so the app and the tests share the sandbox's network namespace
(its own loopback and nothing else). Used for e2e tasks (the app under test, then the browser
tests) and for a repository's test services (httpbin, then the guarded pytest runner; drivers
nest, one per service). Exit code: the tests', or 90 when the app never answered.

What the test command gets from this process: the harness's result channel (the fd named by
$SWEBOUNTY_RESULT_FD, passed on and closed here, so only the test command holds it), and
$SWEBOUNTY_SERVICE_SESSIONS extended with the app's session id: the guarded runner kills what
an install step left running but spares those sessions. The app gets neither, and no stdin.
This file is copied into the sandbox as is: it imports nothing from swebounty.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

APP_DID_NOT_ANSWER = 90
CHANNEL_ENV = "SWEBOUNTY_RESULT_FD"
SESSIONS_ENV = "SWEBOUNTY_SERVICE_SESSIONS"


def main(argv: list[str]) -> int:
    port, log_path, ready_s, cwd = 0, "app.log", 60.0, None
    i = 0
    while argv[i] != "--":
        if argv[i] == "--port":
            port = int(argv[i + 1])
        elif argv[i] == "--app-log":
            log_path = argv[i + 1]
        elif argv[i] == "--ready-s":
            ready_s = float(argv[i + 1])
        elif argv[i] == "--app-cwd":  # a service runs outside the workspace (e2e: in it)
            cwd = argv[i + 1]
        i += 2
    rest = argv[i + 1 :]
    split = rest.index("--pytest")
    app_argv, test_argv = rest[:split], rest[split + 1 :]
    channel = os.environ.get(CHANNEL_ENV)
    app_env = {k: v for k, v in os.environ.items() if k not in (CHANNEL_ENV, SESSIONS_ENV)}
    with open(log_path, "wb") as log:
        app = subprocess.Popen(app_argv, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env=app_env, cwd=cwd,
                               start_new_session=True)  # fmt: skip
        try:
            if not _wait_for(port, ready_s, app):
                print(f"the app did not answer on 127.0.0.1:{port} within {ready_s:.0f} s "
                      f"(exit code {app.poll()}); see the app log", file=sys.stderr)  # fmt: skip
                return APP_DID_NOT_ANSWER
            sessions = [s for s in os.environ.get(SESSIONS_ENV, "").split(",") if s]
            env = {
                **os.environ,
                "SWEBOUNTY_APP_URL": f"http://127.0.0.1:{port}",
                SESSIONS_ENV: ",".join([*sessions, str(app.pid)]),
            }
            fds = [int(channel)] if channel else []
            tests = subprocess.Popen(test_argv, env=env, pass_fds=fds)
            for fd in fds:  # the test command alone holds the channel: EOF when it ends
                os.close(fd)
            return tests.wait()
        finally:
            _stop(app)


def _wait_for(port: int, seconds: float, app: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if app.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def _stop(app: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(app.pid, signal.SIGTERM)
        app.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(app.pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
