"""Real ``otelhooks serve --store postgresql://...`` processes sharing one database."""

from __future__ import annotations

import select
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.reliability._serve_proc import ADMIN, ServeProc

EVENTS_YAML = "kind: agent_events\nname: fleet\non: [after_tool_result]\ncapacity: 1000000\n"


def events_file(tmp: Path) -> Path:
    path = tmp / "events.yaml"
    path.write_text(EVENTS_YAML)
    return path


def start_instance(tmp: Path, store: str, *extra: str) -> ServeProc:
    return ServeProc(tmp, "--store", store, "--hooks", str(events_file(tmp)), "--no-web", *extra)


def events(url: str, **params: Any) -> httpx.Response:
    return httpx.get(
        f"{url}/v1/events",
        params={"log": "fleet", **params},
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=30,
    )


def all_records(url: str) -> list[dict[str, Any]]:
    """Every record, read by cursor in pages."""
    found: list[dict[str, Any]] = []
    since = 0
    for _ in range(10_000):
        body = events(url, mode="drain", since=since, limit=1000).json()
        found += body["events"]
        since = body["next_since"]
        if not body["has_more"]:
            return found
    raise AssertionError("the log did not end")


class StallingProxy:
    """A TCP proxy on 127.0.0.1 to ``port`` whose :meth:`stall` stops forwarding either way
    without closing anything: a server that never answers (a hung host, a dead network path).
    While :attr:`delay_s` is set, what a client sends waits that long first: a server that
    far away (every request's round trip takes it longer)."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.delay_s = 0.0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stalled = threading.Event()
        self.closed = threading.Event()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, pg_url: str) -> str:
        """``pg_url`` through the proxy."""
        return pg_url.replace(f":{self.target}/", f":{self.port}/")

    def stall(self) -> None:
        self.stalled.set()

    def close(self) -> None:
        self.closed.set()
        for sock in [self.listener, *self.sockets]:
            sock.close()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                return
            self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        peer = {client: server, server: client}
        # poll, not select: in a process with a thousand sockets (a benchmark's clients) the
        # proxy's descriptors pass select's 1,024
        poller = select.poll()
        by_fd = {sock.fileno(): sock for sock in peer}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        try:
            while not self.closed.is_set():
                events = poller.poll(50)
                if self.stalled.is_set():
                    continue
                for fd, _ in events:
                    sock = by_fd[fd]
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client and self.delay_s:
                        time.sleep(self.delay_s)
                    peer[sock].sendall(data)
        except OSError:
            return
        finally:
            client.close()
            server.close()
