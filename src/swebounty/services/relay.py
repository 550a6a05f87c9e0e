"""Inside the sandbox: a test service's stand-in ports, forwarded to the port it serves on.

    python relay.py --to PORT [--http P]... [--https P --cert FILE --key FILE]...

The tests call `http://httpbin.org/` and `https://httpbin.org/`; the sandbox's hosts file sends
those names to 127.0.0.1, and this process listens there on the service's stand-in ports (80,
443: the launcher lets the sandbox's own network namespace bind them) and copies bytes both
ways to 127.0.0.1:PORT, where the service itself serves plain HTTP. On the TLS ports it ends
TLS first, with a certificate for every stand-in host (tlsgen.py) whose CA the tests trust.
So the service runs unchanged and any service gets stand-in hosts the same way.

The certificate's key is readable here, so the tests (same sandbox, same user) can read it too:
with it they can only impersonate the stand-in hosts inside their own sandbox, which they can
already do by answering on those ports. The CA's own key exists nowhere (tlsgen.py). Run by
driver.py as its app, with the service environment's interpreter: standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
from collections.abc import Awaitable, Callable

CHUNK = 65536


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            data = await reader.read(CHUNK)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
        pass
    finally:
        # One side done is the connection done: HTTP clients do not half-close, and a TLS
        # stream cannot send EOF alone.
        writer.close()


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _handler(port: int) -> Handler:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    return handle


async def serve(to: int, http: list[int], https: list[int], cert: str, key: str) -> None:
    handle = _handler(to)
    servers = [await asyncio.start_server(handle, "127.0.0.1", p) for p in http]
    if https:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        for p in https:
            servers.append(await asyncio.start_server(handle, "127.0.0.1", p, ssl=context))
    print(f"relay: {http} plain, {https} TLS -> 127.0.0.1:{to}", flush=True)
    async with contextlib.AsyncExitStack() as stack:
        for server in servers:
            await stack.enter_async_context(server)
        await asyncio.Event().wait()  # until driver.py stops it with the tests


def main(argv: list[str]) -> int:
    to, cert, key = 0, "", ""
    http: list[int] = []
    https: list[int] = []
    for i in range(0, len(argv) - 1, 2):  # zip(strict=) is 3.10's: this runs on 3.9 too
        flag, value = argv[i], argv[i + 1]
        if flag == "--to":
            to = int(value)
        elif flag == "--http":
            http.append(int(value))
        elif flag == "--https":
            https.append(int(value))
        elif flag == "--cert":
            cert = value
        elif flag == "--key":
            key = value
        else:
            print(f"relay: unknown option {flag}", file=sys.stderr)
            return 2
    asyncio.run(serve(to, http, https, cert, key))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
