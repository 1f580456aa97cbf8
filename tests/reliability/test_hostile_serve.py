"""``otelhooks serve`` under abuse (issue 13, deliverable 5), against a real serve process and real
sockets on 127.0.0.1: idle and half-sent connections, deep JSON, a burst larger than the observer
queue, ``kill -9`` right after an acknowledgement, a second writer on a durable file, and the
tokens in a hook's output."""

from __future__ import annotations

import contextlib
import re
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.reliability._procs import run_cli
from tests.reliability._serve_proc import (
    ADMIN,
    INGEST,
    ServeProc,
    post_traces,
    tool_spans_json,
)


@contextlib.contextmanager
def serving(tmp_path: Path, *args: str, nofile: int | None = None) -> Iterator[ServeProc]:
    server = ServeProc(tmp_path, *args, nofile=nofile)
    try:
        yield server
    finally:
        server.stop()


def events_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "events.yaml"
    path.write_text(text)
    return str(path)


def idle_sockets(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that never send a byte (non-blocking connects: a full backlog must
    not hang the test)."""
    opened = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        opened.append(sock)
    return opened


def test_thousands_of_idle_sockets_do_not_lock_out_a_real_client(tmp_path: Path) -> None:
    # The server may hold 1,024 descriptors: 3,000 idle sockets would take them all.
    with serving(tmp_path, nofile=1024) as server:
        attackers = idle_sockets(server.port, 3000)
        try:
            time.sleep(1.0)  # let the server accept what it can
            started = time.monotonic()
            response = httpx.get(
                f"{server.url}/v1/events",
                params={"mode": "version"},
                headers={"Authorization": f"Bearer {ADMIN}"},
                timeout=10,
            )
            assert response.status_code == 200
            assert time.monotonic() - started < 5
        finally:
            for sock in attackers:
                sock.close()
        assert "Traceback" not in server.output()


def test_a_connection_that_never_finishes_its_headers_is_closed(tmp_path: Path) -> None:
    with serving(tmp_path, "--header-timeout", "1") as server:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        try:
            sock.sendall(b"GET /v1/events HTTP/1.1\r\nHost: localhost\r\n")
            # a byte at a time does not extend the deadline
            assert seconds_until_closed(sock) < 4
        finally:
            sock.close()


def test_a_keep_alive_request_that_never_finishes_its_headers_is_closed(tmp_path: Path) -> None:
    # The first request comes whole (no deadline timer is armed for it); the next one's head
    # is half sent, then trickles: its deadline starts at its first bytes.
    with serving(tmp_path, "--header-timeout", "1") as server:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        try:
            auth = f"Authorization: Bearer {ADMIN}\r\n".encode()
            sock.sendall(
                b"GET /v1/events?mode=version HTTP/1.1\r\nHost: localhost\r\n" + auth + b"\r\n"
            )
            answer = sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
            sock.sendall(b"GET /v1/events HTTP/1.1\r\nHost: localhost\r\n")
            # before uvicorn's own keep-alive timeout (5 s), which a head's first bytes cancel
            assert seconds_until_closed(sock) < 4
        finally:
            sock.close()


def test_accept_errors_are_logged_at_a_bounded_rate(tmp_path: Path) -> None:
    # More connections allowed than descriptors: accept() fails with EMFILE for seconds.
    with serving(tmp_path, "--max-connections", "100000", nofile=256) as server:
        attackers = idle_sockets(server.port, 1500)
        try:
            time.sleep(3.0)
        finally:
            for sock in attackers:
                sock.close()
        time.sleep(0.5)
        output = server.output()
    lines = [line for line in output.splitlines() if "event loop error" in line]
    assert lines, output[-3000:]  # the failures happened and were reported ...
    assert len(lines) <= 6, len(lines)  # ... about once a second, not once per failure
    assert len(output) < 50_000
    assert "suppressed_since_last" in output


def test_deeply_nested_json_is_a_400(tmp_path: Path) -> None:
    body = b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with serving(tmp_path) as server:
        response = post_traces(server.url, body)
        assert response.status_code == 400
        assert "nested too deeply" in response.json()["message"]
        assert "RecursionError" not in server.output()
        assert "Traceback" not in server.output()


def test_one_request_of_8192_tool_spans_is_kept_whole(tmp_path: Path) -> None:
    config = events_file(tmp_path, "kind: agent_events\ncapacity: 20000\n")
    with serving(tmp_path, "--hooks", config) as server:
        response = post_traces(server.url, tool_spans_json(8192))
        assert response.status_code == 200
        assert "partialSuccess" not in response.json()
        deadline = time.monotonic() + 60
        while server.version()["head"] < 8192 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert server.version()["head"] == 8192


def test_acknowledged_spans_survive_kill_9_in_durable_mode(tmp_path: Path) -> None:
    db = tmp_path / "log" / "events.sqlite3"
    config = events_file(tmp_path, f"kind: agent_events\ndurable: true\npath: {db}\n")
    server = ServeProc(tmp_path, "--hooks", config)
    acknowledged = 0
    try:
        for batch in range(4):
            response = post_traces(server.url, tool_spans_json(1000, start=batch * 1000))
            assert response.status_code == 200
            assert "partialSuccess" not in response.json()
            acknowledged += 1000
    finally:
        server.kill9()  # right after the last acknowledgement
    with contextlib.closing(sqlite3.connect(db)) as conn:
        (stored,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()
    assert stored == acknowledged


def test_a_second_serve_on_the_same_durable_file_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "events.sqlite3"
    config = events_file(tmp_path, f"kind: agent_events\ndurable: true\npath: {db}\n")
    with serving(tmp_path, "--hooks", config) as first:
        second = ServeProc(tmp_path, "--hooks", config, wait=False)
        try:
            assert second.proc.wait(30) == 2
        finally:
            second.stop()
        message = second.output()
        assert f"{db} is already written by another event log (pid {first.proc.pid})" in message
        assert "Traceback" not in message
        assert first.version()["durable"] is True  # the first one still serves


def test_tokens_are_scrubbed_from_a_hook_that_prints_its_environment(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        # only our variables: the log keeps an excerpt, and a machine's whole environment (CI's
        # is long) would push them out of it
        "hooks:\n  - id: leaky\n    type: afterToolCall\n"
        "    command: 'env | grep ^OTELHOOKS_ >&2; exit 3'\n"
    )
    with serving(tmp_path, "--hooks", str(hooks)) as server:
        response = post_traces(server.url, tool_spans_json(1))
        assert response.status_code == 200
        deadline = time.monotonic() + 30
        while "observer hook failed" not in server.output() and time.monotonic() < deadline:
            time.sleep(0.1)
        output = server.output()
    assert "observer hook failed" in output
    assert "OTELHOOKS_INGEST_TOKEN=[REDACTED]" in output  # the hook printed it, scrubbed
    assert "OTELHOOKS_ADMIN_TOKEN" not in output  # a command hook never inherits it
    assert ADMIN not in output
    assert INGEST not in output


def test_the_guard_options_refuse_nonsense_naming_the_flag() -> None:
    done = run_cli("serve", "--max-connections", "0", "--port", "0")
    assert done.code == 2
    assert "argument --max-connections: must be positive, not 0" in done.stderr
    done = run_cli("serve", "--header-timeout", "-1", "--port", "0")
    assert done.code == 2
    assert "argument --header-timeout: must be positive, not -1" in done.stderr


def test_garbage_requests_do_not_flood_the_log(tmp_path: Path) -> None:
    def garbage(port: int) -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"\x16\x03\x01 not http\r\n\r\n")
            with contextlib.suppress(OSError):
                sock.recv(100)

    with serving(tmp_path) as server:
        for _ in range(300):
            garbage(server.port)
        time.sleep(1.2)
        garbage(server.port)  # the next line after the interval says how many were held back
        time.sleep(0.3)
        output = server.output()
    lines = [line for line in output.splitlines() if "Invalid HTTP request" in line]
    assert lines  # reported ...
    assert len(lines) <= 10, len(lines)  # ... about once a second, with the count held back
    assert "more held back" in output


def seconds_until_closed(sock: socket.socket) -> float:
    """Trickle a byte at a time into ``sock`` until the server closes it; how long that took
    (fails after 6 s)."""
    started = time.monotonic()
    while time.monotonic() - started < 6:
        try:
            sock.sendall(b"X")
            sock.settimeout(0.3)
            if sock.recv(1024) == b"":
                return time.monotonic() - started
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - started
    raise AssertionError("the half-sent request was still open after 6 s")


def test_a_page_using_dns_rebinding_is_refused_and_allowed_hosts_are_answered(
    tmp_path: Path,
) -> None:
    """A web page whose own name resolves to 127.0.0.1 (DNS rebinding) reaches a loopback
    serve as its own origin: its requests name its host, which serve does not answer (before:
    answered, and the login form took its guesses). Names given by --allowed-host are."""
    admin = {"authorization": f"Bearer {ADMIN}"}
    with serving(tmp_path, "--allowed-host", "otelhooks.internal") as server:
        port = server.url.rsplit(":", 1)[1]
        with httpx.Client(base_url=server.url, timeout=10) as client:
            rebound = client.get("/v1/events", headers={**admin, "host": f"rebind.test:{port}"})
            login = client.post(
                "/login", headers={"host": f"rebind.test:{port}"}, data={"token": "guess"}
            )
            foreign = client.get("/v1/events", headers={**admin, "origin": "http://rebind.test"})
            named = client.get(
                "/v1/events", headers={**admin, "host": f"otelhooks.internal:{port}"}
            )
            local = client.get("/v1/events", headers={**admin, "host": f"localhost:{port}"})
    assert (rebound.status_code, login.status_code, foreign.status_code) == (403, 403, 403)
    assert "rebind.test" in rebound.json()["message"]
    assert (named.status_code, local.status_code) == (200, 200)


DENY_RM = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    on_error: block
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
"""


def dripping_posts(port: int, paths: list[str], head: str = "") -> list[socket.socket]:
    """One connection per path: a POST's head with the ingest token and then one byte of its
    100,000-byte body (more bytes come only from the test)."""
    opened = []
    for path in paths:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        framing = head or "Content-Length: 100000"
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {INGEST}\r\n{framing}\r\n\r\n{{".encode()
        )
        opened.append(sock)
    return opened


def test_bodies_dripping_on_every_route_do_not_lock_the_hook_route_out(tmp_path: Path) -> None:
    # Every connection allowed is a POST whose body trickles in (on main: each counted as
    # serving, so the guard's rm -rf post got "Server disconnected" and Claude Code ran it).
    with serving(
        tmp_path, "--hooks", events_file(tmp_path, DENY_RM), "--max-connections", "8"
    ) as server:
        routes = ["/v1/logs", "/v1/metrics", "/v1/traces", "/v1/hooks/claude-code"]
        drippers = dripping_posts(server.port, routes * 2)
        try:
            time.sleep(0.3)  # all eight admitted and their heads read
            event = {
                "session_id": "drip",
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "rm -rf /"},
                "tool_use_id": "toolu_drip",
                "cwd": str(tmp_path),
                "transcript_path": str(tmp_path / "t.jsonl"),
            }
            for _ in range(3):
                for sock in drippers:
                    with contextlib.suppress(OSError):
                        sock.send(b" ")
                response = httpx.post(
                    f"{server.url}/v1/hooks/claude-code",
                    json=event,
                    headers={"Authorization": f"Bearer {INGEST}"},
                    timeout=10,
                )
                assert response.status_code == 200, response.text
                decision = response.json()["hookSpecificOutput"]["permissionDecision"]
                assert decision == "deny"
        finally:
            for sock in drippers:
                sock.close()
        assert "Traceback" not in server.output()


def test_a_body_that_never_ends_is_closed_at_the_body_deadline(tmp_path: Path) -> None:
    # A Content-Length body trickling on the hook route and on the web login form, and a
    # chunked body whose chunk never ends on /v1/logs: each closed at --body-timeout, with or
    # without Expect: 100-continue.
    with serving(tmp_path, "--body-timeout", "1") as server:
        cases = [
            dripping_posts(server.port, ["/v1/hooks/claude-code"]),
            dripping_posts(server.port, ["/login"]),
            dripping_posts(
                server.port, ["/v1/traces"], "Content-Length: 100000\r\nExpect: 100-continue"
            ),
            dripping_posts(server.port, ["/v1/logs"], "Transfer-Encoding: chunked"),
        ]
        cases[-1][0].sendall(b"1000\r\n")  # the size of a chunk whose bytes then trickle
        try:
            for (sock,) in cases:
                assert seconds_until_closed(sock) < 4
        finally:
            for (sock,) in cases:
                sock.close()


def test_clients_pipelining_thousands_of_requests_do_not_delay_the_hook_route(
    tmp_path: Path,
) -> None:
    # Eight connections, no token, each sends 20,000 pipelined GETs at once and reads nothing.
    # On main uvicorn read on after every answer, so each read's thousands of requests were
    # parsed between two steps of every other connection: a hook's answer took 6 to 11 s,
    # past Claude Code's 10 s, and the tool ran.
    with serving(
        tmp_path, "--hooks", events_file(tmp_path, DENY_RM), "--max-connections", "16"
    ) as server:
        flood = []
        for _ in range(8):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                sock.send(b"GET /nothing-here HTTP/1.1\r\nHost: localhost\r\n\r\n" * 20_000)
            flood.append(sock)
        try:
            time.sleep(0.5)
            event = {
                "session_id": "pipelined",
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "rm -rf /"},
                "tool_use_id": "toolu_pipelined",
                "cwd": str(tmp_path),
                "transcript_path": str(tmp_path / "t.jsonl"),
            }
            started = time.monotonic()
            response = httpx.post(
                f"{server.url}/v1/hooks/claude-code",
                json=event,
                headers={"Authorization": f"Bearer {INGEST}"},
                timeout=30,
            )
            took = time.monotonic() - started
            assert response.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
            assert took < 3, took
        finally:
            for sock in flood:
                sock.close()


def _head_sent_until_closed(port: int, header_bytes: int) -> bool:
    """Send a head with ``header_bytes`` of headers, as fast as the socket takes it; whether the
    server refused it before the head was whole (closed, or answered 431 and closed)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        sock.sendall(b"GET /v1/events?mode=version HTTP/1.1\r\nHost: localhost\r\n")
        line = b"X-Pad: " + b"a" * 1000 + b"\r\n"
        for _ in range(header_bytes // len(line)):
            sock.sendall(line)
        sock.sendall(f"Authorization: Bearer {ADMIN}\r\n\r\n".encode())
        answer = sock.recv(65536)
    except OSError:
        return True
    finally:
        sock.close()
    return answer == b"" or answer.startswith(b"HTTP/1.1 431 ")


def test_a_head_past_its_limit_closes_its_connection_and_a_big_one_is_served(
    tmp_path: Path,
) -> None:
    # Before: the HTTP parser buffered a head of any size until the header deadline, about 55 MB
    # a connection (+95 MB of memory) in 8 s; a few of them, and every connection, the hook route's
    # included, shared one swollen process.
    with serving(tmp_path) as server:
        started = time.monotonic()
        assert _head_sent_until_closed(server.port, 4 * 1024 * 1024)
        assert time.monotonic() - started < 5  # at the limit, not at the 10 s header deadline
        assert not _head_sent_until_closed(server.port, 32 * 1024)  # a big, honest head
        assert "Traceback" not in server.output()


def test_a_body_refused_as_too_large_is_read_to_its_end_and_the_connection_serves_on(
    tmp_path: Path,
) -> None:
    """A client keeping its connection past a 413 (a body over ``--max-body``) sends the rest of
    that body, then its next request. Before, the rest was counted as the next request's head:
    a second answer, 431 "cookies", was written after the 413 and the connection dropped, and
    serve logged a head too large that nobody sent."""
    with serving(tmp_path) as server:
        body = 17 * 1024 * 1024  # past serve's 16 MiB
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        try:
            sock.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json"
                + f"\r\nAuthorization: Bearer {INGEST}\r\nContent-Length: {body}\r\n\r\n".encode()
            )
            chunk = b" " * (1024 * 1024)
            for _ in range(body // len(chunk)):
                sock.sendall(chunk)
            sock.sendall(
                b"GET /v1/events?mode=version HTTP/1.1\r\nHost: localhost\r\n"
                + f"Authorization: Bearer {ADMIN}\r\n\r\n".encode()
            )
            received = b""
            while len(re.findall(rb"HTTP/1\.1 \d{3} ", received)) < 2:
                data = sock.recv(65536)
                if not data:
                    break
                received += data
        finally:
            sock.close()
        statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", received)
        assert statuses == [b"413", b"200"], received[-2000:]
        assert "431" not in server.output()
