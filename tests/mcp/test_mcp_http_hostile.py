"""Hostile input against the gateway's Streamable HTTP side: unreadable bodies are refused, not
forwarded; bodies, sessions and SSE buffers are bounded; a token is asked for off loopback.

The SDK's server over Streamable HTTP is a real process; the gateway is ``otelhooks mcp --listen``
(a real process), or its ASGI application under uvicorn in this process where a test reads the
session table."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.trace import NoOpTracer

from otelhooks import AgentMetrics, HooksEngine
from otelhooks.mcp import McpGateway, McpHttpProxy
from otelhooks.mcp._sse import EventTooLarge, events
from otelhooks.testing import metric_total
from tests._realparts import reserved_port
from tests.mcp._harness import (
    DENY_NOTES,
    DENY_SCRIPT,
    RAW_INIT,
    ROOT,
    SERVER_APP,
    SSE,
    calls,
    gateway_args,
    http_gateway,
    open_session,
    process,
    write_hooks,
)

pytestmark = pytest.mark.timeout(120)

ACCEPT = SSE


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("mcp-http-hostile")
    hooks = write_hooks(tmp, DENY_NOTES, DENY_SCRIPT)
    with http_gateway(tmp, [hooks]) as url:
        yield url, tmp


def _note_call(request_id: int, arguments: bytes) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_note",'
    return head % request_id + b'"arguments":' + arguments + b"}}"


@pytest.mark.parametrize(
    "arguments",
    [b'{"text": "\xff rm -rf /"}', b'{"text": "hi", "n": ' + b"7" * 5000 + b"}"],
    ids=["invalid UTF-8", "a 5,000-digit integer"],
)
def test_an_unreadable_body_gets_400_and_a_parse_error_and_is_never_forwarded(
    gateway: tuple[str, Path], arguments: bytes
) -> None:
    url, tmp = gateway
    with httpx.Client(timeout=30) as client:
        headers = open_session(client, url)
        answer = client.post(url, content=_note_call(5, arguments), headers=headers)
    assert answer.status_code == 400
    assert answer.json()["id"] == 5
    assert answer.json()["error"]["code"] == -32700
    assert "write_note" not in [c["tool"] for c in calls(tmp)]


def test_arguments_1500_deep_reach_the_guard_over_http(gateway: tuple[str, Path]) -> None:
    url, tmp = gateway
    deep = b'{"text": "x", "more": ' + b'{"a": ' * 1500 + b'"rm -rf /"' + b"}" * 1500 + b"}"
    with httpx.Client(timeout=30) as client:
        headers = open_session(client, url)
        answer = client.post(url, content=_note_call(6, deep), headers=headers)
    assert answer.status_code == 200
    assert answer.json()["result"]["content"][0]["text"] == "notes are read-only here"
    assert "write_note" not in [c["tool"] for c in calls(tmp)]


def test_a_declared_body_past_the_limit_is_refused_before_it_is_read(
    gateway: tuple[str, Path],
) -> None:
    url, _ = gateway
    port = int(url.split(":")[2].split("/")[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest("POST", "/mcp")
    conn.putheader("content-type", "application/json")
    conn.putheader("content-length", str(1536 * 1024 * 1024))  # 1.5 GB announced, none sent
    conn.endheaders()
    answer = conn.getresponse()
    assert answer.status == 413
    conn.close()


def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_streamed_body_past_the_limit_gets_413_and_memory_stays_bounded(
    tmp_path: Path,
) -> None:
    from otelhooks.mcp._http import MAX_BODY_BYTES

    with reserved_port() as server_port, reserved_port() as gateway_port:
        log = tmp_path / "calls.jsonl"
        args = ["-m", "otelhooks", "mcp", "--listen", f"127.0.0.1:{gateway_port}"]
        args += ["--upstream", f"http://127.0.0.1:{server_port}/mcp"]
        with process(args, log, gateway_port) as proc:
            before = _vm_hwm_kib(proc.pid)
            sent = 0
            conn = http.client.HTTPConnection("127.0.0.1", gateway_port, timeout=30)
            conn.putrequest("POST", "/mcp")
            conn.putheader("content-type", "application/json")
            conn.putheader("transfer-encoding", "chunked")
            conn.endheaders()
            chunk = b"x" * (1 << 20)
            try:
                while sent < 3 * MAX_BODY_BYTES:  # 192 MiB offered, chunked (no length announced)
                    conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    sent += len(chunk)
            except OSError:
                pass  # the gateway stopped reading and closed: what a bound looks like
            answer = conn.getresponse()
            assert answer.status == 413
            conn.close()
            grown_mib = (_vm_hwm_kib(proc.pid) - before) / 1024
        # at most the limit held once, plus its joining copy: never the whole offer
        assert grown_mib < 2.5 * MAX_BODY_BYTES / (1 << 20), grown_mib


def test_the_cli_refuses_a_non_loopback_address_without_a_token(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "OTELHOOKS_MCP_TOKEN"}
    environ["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", "mcp", "--listen", "0.0.0.0:1", "--upstream",
         "http://127.0.0.1:1/mcp"],
        capture_output=True, text=True, env=environ, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "OTELHOOKS_MCP_TOKEN" in done.stderr


# -- in this process: the session table and the token ----------------------------------------


@contextmanager
def in_process_proxy(
    tmp_path: Path,
    *,
    metrics: AgentMetrics | None = None,
    hooks: HooksEngine | None = None,
    **options: Any,
) -> Iterator[tuple[str, McpHttpProxy]]:
    with (
        reserved_port() as server_port,
        process([str(SERVER_APP), "http", str(server_port)], tmp_path / "calls.jsonl", server_port),
        socket.create_server(("127.0.0.1", 0)) as listening,  # ours: bound here, port read back
    ):
        port = listening.getsockname()[1]
        engine = hooks or HooksEngine(metrics=metrics)
        gateway = McpGateway(engine, NoOpTracer(), transport="tcp")
        proxy = McpHttpProxy(gateway, f"http://127.0.0.1:{server_port}/mcp", **options)
        config = uvicorn.Config(proxy, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}/mcp", proxy
        finally:
            server.should_exit = True
            thread.join(10)


def test_client_chosen_session_ids_are_not_kept(tmp_path: Path) -> None:
    with in_process_proxy(tmp_path) as (url, proxy), httpx.Client(timeout=30) as client:
        for n in range(200):
            headers = {**ACCEPT, "mcp-session-id": uuid.uuid4().hex * 8}
            ping = {"jsonrpc": "2.0", "id": n, "method": "ping"}
            assert client.post(url, json=ping, headers=headers).status_code == 404
        assert len(proxy.sessions) == 0


def test_sessions_are_bounded_in_count_and_expire_when_idle(tmp_path: Path) -> None:
    options: dict[str, Any] = {"max_sessions": 3, "session_idle_s": 1.0}
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader], shutdown_on_exit=False))
    with (
        in_process_proxy(tmp_path, metrics=metrics, **options) as (url, proxy),
        httpx.Client(timeout=30) as client,
    ):
        for _ in range(5):
            open_session(client, url)
        assert len(proxy.sessions) == 3
        assert proxy.sessions_dropped == 2
        time.sleep(1.2)
        open_session(client, url)  # any request sweeps the idle ones
        assert len(proxy.sessions) == 1
        assert proxy.sessions_dropped == 5
    assert metrics.flush(10.0)
    source = {"otelhooks.drop.source": "mcp_sessions"}
    assert metric_total(reader, "otelhooks.dropped", source) == 5


def test_a_session_dropped_when_idle_is_still_guarded_under_the_servers_name(
    tmp_path: Path,
) -> None:
    """The gateway forgets a session idle for ``session_idle_s`` (an hour by default); the
    server does not, and the client goes on with it. The session the gateway starts for its next
    request had not seen the handshake, so its server name was ``mcp``: a
    ``testsrv/write_note`` guard no longer matched and the call ran."""
    engine = HooksEngine.from_files([write_hooks(tmp_path, DENY_NOTES, DENY_SCRIPT)])
    call = _note_call(1, b'{"text": "after a coffee"}')
    with (
        in_process_proxy(tmp_path, hooks=engine, session_idle_s=1.0) as (url, proxy),
        httpx.Client(timeout=30) as client,
    ):
        headers = {**open_session(client, url), "content-type": "application/json"}
        time.sleep(1.2)
        answer = client.post(url, content=call, headers=headers)
        dropped = proxy.sessions_dropped
    assert dropped == 1  # the gateway did forget the session
    assert "notes are read-only here" in answer.text
    assert calls(tmp_path) == []


def test_with_a_token_the_sdk_client_needs_it(tmp_path: Path) -> None:
    async def call(url: str, headers: dict[str, str]) -> str:
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("add", {"a": 2, "b": 3})
            return str(getattr(result.content[0], "text", ""))

    with in_process_proxy(tmp_path, token="t0ken-for-tests") as (url, _), httpx.Client() as client:
        assert client.post(url, json={}, headers=ACCEPT).status_code == 401
        wrong = {**ACCEPT, "authorization": "Bearer nope"}
        assert client.post(url, json={}, headers=wrong).status_code == 403
        text = anyio.run(call, url, {"authorization": "Bearer t0ken-for-tests"})
    assert text == "5"


# -- server-sent events ----------------------------------------------------------------------


async def _chunks(count: int, size: int) -> AsyncIterator[bytes]:
    for _ in range(count):
        yield b"data: " + b"x" * size


def test_an_event_that_never_ends_is_scanned_once_and_cut_at_the_limit() -> None:
    async def read() -> float:
        started = time.perf_counter()
        with pytest.raises(EventTooLarge):
            async for _ in events(_chunks(4096, 4096), limit=8 * 1024 * 1024):
                pass
        return time.perf_counter() - started

    # 16 MiB offered in 4 KiB chunks: rescanning the buffer on each chunk reads ~8 GB
    assert asyncio.run(read()) < 2.0


# -- secrets in what the gateway records -------------------------------------------------------


@contextmanager
def echoing_upstream() -> Iterator[str]:
    """An MCP endpoint that answers every request with an error quoting the Authorization
    header it received (what a careless server's error message does)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            if "id" not in body:
                self.send_response(202)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            echo = f"unauthorized: {self.headers.get('authorization')}"
            answer = {
                "jsonrpc": "2.0",
                "id": body["id"],
                "error": {"code": -32001, "message": echo},
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def test_an_echoed_header_token_never_reaches_the_traces_file_which_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "upstream-s3cret-" + uuid.uuid4().hex
    monkeypatch.setenv("UP_TOKEN", secret)
    with reserved_port() as port:
        traces = tmp_path / "traces.jsonl"
        with echoing_upstream() as upstream:
            args = ["-m", "otelhooks", "mcp", "--traces-out", str(traces)]
            args += ["--listen", f"127.0.0.1:{port}", "--upstream", upstream]
            args += ["--header", "Authorization: Bearer ${UP_TOKEN}"]
            args += ["--allowed-env-var", "UP_TOKEN"]
            with process(args, tmp_path / "calls.jsonl", port), httpx.Client(timeout=30) as client:
                call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
                answer = client.post(f"http://127.0.0.1:{port}/mcp", json=call, headers=ACCEPT)
                assert secret in answer.text  # the client gets the server's answer as it was
        text = traces.read_text()
        assert "tools/call x" in text
        assert secret not in text
        assert "[REDACTED]" in text
        assert traces.stat().st_mode & 0o777 == 0o600


def test_a_restarted_gateway_refuses_a_call_it_cannot_judge_until_the_session_starts_again(
    tmp_path: Path,
) -> None:
    """The gateway restarts (an upgrade, a crash) while the client goes on with a session the
    server still knows: no handshake answer has passed the new gateway, so it does not know the
    server's name, and a ``testsrv/write_note`` guard would not match (the call ran). The call is
    refused instead, and once the client starts a session again the guard decides."""
    hooks = write_hooks(tmp_path, DENY_NOTES, DENY_SCRIPT)
    with reserved_port() as server_port, reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        args = [
            *gateway_args([hooks], tmp_path / "traces.jsonl"),
            "--listen",
            f"127.0.0.1:{port}",
            "--upstream",
            f"http://127.0.0.1:{server_port}/mcp",
        ]
        call = _note_call(5, b'{"text": "after the restart"}')
        log = tmp_path / "calls.jsonl"
        with (
            process([str(SERVER_APP), "http", str(server_port)], log, server_port),
            httpx.Client(timeout=30) as client,
        ):
            with process(args, log, port):
                headers = {**open_session(client, url), "content-type": "application/json"}
            with process(args, log, port):  # the same gateway, started again
                refused = client.post(url, content=call, headers=headers).json()
                again = {**open_session(client, url), "content-type": "application/json"}
                denied = client.post(url, content=call, headers=again)
        assert refused["error"]["code"] == -32600
        assert "the server's name is not known yet" in refused["error"]["message"]
        assert "notes are read-only here" in denied.text
        assert calls(tmp_path) == []


def test_a_page_using_dns_rebinding_calls_no_tool(gateway: tuple[str, Path]) -> None:
    """The MCP transport: servers must validate ``Origin`` against DNS rebinding. A page whose
    own name resolves to 127.0.0.1 sends its host and origin; the loopback gateway (no token)
    answers neither, and nothing reaches the server (before: the call ran)."""
    url, tmp = gateway
    port = httpx.URL(url).port
    add = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
           "params": {"name": "add", "arguments": {"a": 40, "b": 2}}}  # fmt: skip
    with httpx.Client(timeout=30) as client:
        headers = open_session(client, url)
        rebound = client.post(url, json=add, headers={**headers, "host": f"rebind.test:{port}"})
        foreign = client.post(url, json=add, headers={**headers, "origin": "http://rebind.test"})
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": RAW_INIT}
        fresh = client.post(url, json=init, headers={**ACCEPT, "host": f"rebind.test:{port}"})
    assert (rebound.status_code, foreign.status_code, fresh.status_code) == (403, 403, 403)
    assert [c["args"] for c in calls(tmp) if c["tool"] == "add" and c["args"]["a"] == 40] == []


def test_an_allowed_host_is_answered(tmp_path: Path) -> None:
    with http_gateway(tmp_path, extra=["--allowed-host", "mcp.internal"]) as url:
        port = httpx.URL(url).port
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": RAW_INIT}
        with httpx.Client(timeout=30) as client:
            named = client.post(url, json=init, headers={**ACCEPT, "host": f"mcp.internal:{port}"})
            other = client.post(url, json=init, headers={**ACCEPT, "host": f"other.test:{port}"})
    assert (named.status_code, other.status_code) == (200, 403)
