"""``reserved_port``: the port a test hands to a process that binds it later is its own.

Before, ``free_port()`` bound port 0, closed the socket and returned the number: under
``pytest -n 2`` any other test could bind it before the process meant for it (EADDRINUSE), or a
client could talk to another test's server there.
"""

from __future__ import annotations

import errno
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests._realparts import reserved_port, wait_for_port


def test_a_held_port_refuses_connections_and_no_one_else_can_bind_it() -> None:
    with reserved_port() as port:
        with socket.socket() as client:
            assert client.connect_ex(("127.0.0.1", port)) == errno.ECONNREFUSED
        with socket.socket() as other, socket.socket() as reusing:
            with pytest.raises(OSError, match="already in use") as taken:
                other.bind(("127.0.0.1", port))
            assert taken.value.errno == errno.EADDRINUSE
            # a second SO_REUSEADDR socket may bind beside the hold, but only one listens
            reusing.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            reusing.bind(("127.0.0.1", port))
            reusing.listen()
            with socket.socket() as third:
                third.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                with pytest.raises(OSError, match="already in use") as listened:
                    third.bind(("127.0.0.1", port))
                assert listened.value.errno == errno.EADDRINUSE


def test_a_server_process_started_on_a_held_port_serves_there(tmp_path: Path) -> None:
    with reserved_port() as port:
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
            cwd=str(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port, 30)
            assert server.poll() is None
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
                assert answer.status == 200
        finally:
            server.terminate()
            server.wait(10)
