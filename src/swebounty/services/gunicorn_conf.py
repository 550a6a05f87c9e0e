"""gunicorn's configuration for test services (`-c {tools}/gunicorn_conf.py` in catalog.toml).

Runs in the service's environment, never in swebounty's. One setting: a read timeout on every
client connection. gunicorn's threaded worker reads a request with no timeout, so a client
that never sends a whole request line held a thread for ever: requests' tests try `https://`
on httpbin's port (test_mixed_case_scheme_acceptable), and a TLS handshake sent to a plain
HTTP port waited there until the run's timeout (30 minutes). With the timeout the connection
is closed after READ_TIMEOUT_S of silence and the test fails at once, as it must offline.
"""

from __future__ import annotations

from typing import Any

READ_TIMEOUT_S = 5.0


def post_fork(server: Any, worker: Any) -> None:
    """In each worker, after the fork: its connections time out when the client is silent."""
    from gunicorn.workers import gthread

    init = gthread.TConn.init

    def init_with_timeout(self: Any) -> None:
        init(self)  # makes the socket blocking, without a timeout, for each request
        self.sock.settimeout(READ_TIMEOUT_S)

    gthread.TConn.init = init_with_timeout
