"""A reverse proxy on 127.0.0.1 that does what nginx's bare ``proxy_pass http://127.0.0.1:PORT``
does to a request: it sends serve ``Host: 127.0.0.1:PORT`` whatever the browser named, and
passes every other header and byte as they came (no ``X-Forwarded-*``). One request a
connection (``Connection: close`` both ways), so every request's head is rewritten."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_MAX_HEAD = 256 * 1024


class HostRewritingProxy:
    """Listening once constructed; :attr:`port` is its port, :attr:`upstream` the port of the
    server it forwards to (set it before the first request)."""

    def __init__(self) -> None:
        self.upstream = 0
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0)
        )
        self.port: int = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        self.requests += 1
        lines = head[:-4].split(b"\r\n")
        kept = [
            line
            for line in lines[1:]
            if line.split(b":", 1)[0].strip().lower() not in (b"host", b"connection")
        ]
        host = f"127.0.0.1:{self.upstream}".encode()
        rewritten = b"\r\n".join(
            [lines[0], b"Host: " + host, *kept, b"Connection: close", b"", b""]
        )
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.close()
            return
        up_writer.write(rewritten)
        tasks = [
            asyncio.ensure_future(_pipe(reader, up_writer)),
            asyncio.ensure_future(_pipe(up_reader, writer)),
        ]
        # the answer's end (serve closes: Connection: close) or the browser going away ends both
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for w in (writer, up_writer):
            w.close()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, asyncio.CancelledError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()


@contextmanager
def host_rewriting_proxy() -> Iterator[HostRewritingProxy]:
    """A :class:`HostRewritingProxy`, closed on leaving."""
    proxy = HostRewritingProxy()
    try:
        yield proxy
    finally:
        proxy.close()
