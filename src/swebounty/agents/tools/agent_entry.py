"""The first process of a `command` agent's sandbox: serves the model endpoint on loopback, then
runs the agent's command with the public task on its standard input.

Standard library only (started as `python -I -S agent_entry.py COMMAND`). The sandbox has no
network but its own loopback; when $SWEBOUNTY_MODEL_SOCKET names the unix socket of the harness's
model proxy, this listens on 127.0.0.1 inside the sandbox and pipes every connection to that
socket, so an agent written for any OpenAI-compatible server only needs $OPENAI_BASE_URL.
It also asks the proxy, twice a second, whether the attempt's budget is spent: then it stops
the agent (its whole process group: TERM, then KILL) and exits with BUDGET_EXIT. The proxy
refuses the model past the budget whatever happens here; this only ends the attempt promptly.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading

BUDGET_EXIT = 43
STATUS_PATH = "/swebounty/budget"  # proxy.STATUS_PATH
POLL_S = 0.5
GRACE_S = 3.0


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _forward(listener: socket.socket, target: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(target)
        except OSError:
            client.close()
            upstream.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _exhausted(target: str) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(5)
            conn.connect(target)
            conn.sendall(f"GET {STATUS_PATH} HTTP/1.0\r\n\r\n".encode())
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        return bool(json.loads(answer.partition(b"\r\n\r\n")[2])["exhausted"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: agent_entry.py COMMAND", file=sys.stderr)
        return 2
    env = dict(os.environ)
    target = env.get("SWEBOUNTY_MODEL_SOCKET")
    if target:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        port = listener.getsockname()[1]
        threading.Thread(target=_forward, args=(listener, target), daemon=True).start()
        url = f"http://127.0.0.1:{port}/v1"
        env.update(OPENAI_BASE_URL=url, OPENAI_API_BASE=url, SWEBOUNTY_MODEL_URL=url)
    task_file = env["SWEBOUNTY_TASK_FILE"]
    with open(task_file, "rb") as stdin:
        # Its own process group, so that stopping it for its budget stops all it started.
        proc = subprocess.Popen(
            ["/bin/sh", "-c", argv[0]], stdin=stdin, env=env, start_new_session=True
        )
    while target:
        try:
            proc.wait(POLL_S)
            break
        except subprocess.TimeoutExpired:
            if _exhausted(target):
                print("swebounty: the attempt's model budget is spent; stopping", file=sys.stderr)
                _stop(proc)
                return BUDGET_EXIT
    code = proc.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
