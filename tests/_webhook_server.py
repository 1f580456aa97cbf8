"""A real HTTP server on 127.0.0.1 whose answers each test scripts per path.

Every request is recorded (path, headers, body, the client's port, so connection reuse shows).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    delay_s: float = 0.0
    drip_s: float = 0.0  # pause between bytes of the body
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: Any, status: int = 200, **kwargs: Any) -> Reply:
        return cls(
            status,
            json.dumps(data).encode(),
            headers={"Content-Type": "application/json"},
            **kwargs,
        )


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int

    def json(self) -> Any:
        return json.loads(self.body)


class WebhookServer:
    """Routes map a path to a Reply, a list of Replies (one per request, the last repeats) or a
    callable ``(Received) -> Reply``."""

    def __init__(self) -> None:
        self.routes: dict[str, Reply | list[Reply] | Callable[[Received], Reply]] = {}
        self.received: list[Received] = []
        self._cond = threading.Condition()
        self._counts: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, so pooling is observable

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                got = Received(
                    self.path, {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length), self.client_address[1],
                )  # fmt: skip
                with server._cond:
                    server.received.append(got)
                    server._cond.notify_all()
                reply = server._reply(got)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    if reply.drip_s:
                        for i in range(len(reply.body)):
                            self.wfile.write(reply.body[i : i + 1])
                            self.wfile.flush()
                            time.sleep(reply.drip_s)
                    else:
                        self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def _reply(self, got: Received) -> Reply:
        route = self.routes.get(got.path, Reply(204))
        if callable(route):
            return route(got)
        if isinstance(route, list):
            n = self._counts.get(got.path, 0)
            self._counts[got.path] = n + 1
            return route[min(n, len(route) - 1)]
        return route

    def requests(self, path: str) -> list[Received]:
        with self._cond:
            return [r for r in self.received if r.path == path]

    def wait_for(self, path: str, count: int = 1, timeout_s: float = 30.0) -> list[Received]:
        with self._cond:
            self._cond.wait_for(
                lambda: len([r for r in self.received if r.path == path]) >= count, timeout_s
            )
            return [r for r in self.received if r.path == path]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def webhook_server() -> Iterator[WebhookServer]:
    server = WebhookServer()
    try:
        yield server
    finally:
        server.stop()
