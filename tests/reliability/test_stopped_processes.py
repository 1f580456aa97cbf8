"""Records of what an agent did are kept when our own processes are stopped: a real bridge
daemon (real hook client processes) and a real ``otelhooks mcp --listen`` gateway (a real MCP
server and client) sent ``SIGTERM``, exporting to a real receiver on 127.0.0.1 or a traces file.

uvicorn handles SIGTERM while it serves and raises it again once it has stopped; a process left
with the default handler then died before it closed what it owned, so the spans its batch
processor still held (a denied call's) were lost, counted nowhere, and its socket file stayed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otelhooks import read_otlp_json_lines
from tests.integrations._daemon_procs import (
    NO_RM,
    bash,
    client_env,
    daemon_pid,
    gone,
    hook,
    until_gone,
)
from tests.mcp._harness import http_gateway, http_session

pytestmark = pytest.mark.timeout(120)


class _HeldSink:
    """An OTLP/HTTP receiver that records each request's tool call ids as it reads it, and holds
    the answer to the first until :attr:`release` is set: meanwhile the sender's batch
    processor is busy, so what ends then waits in its queue."""

    def __init__(self) -> None:
        self.call_ids: list[str] = []
        self.release = threading.Event()
        self.changed = threading.Condition()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportTraceServiceRequest.FromString(body)
                with sink.changed:
                    first = not sink.call_ids
                    sink.call_ids.extend(
                        a.value.string_value
                        for rs in request.resource_spans
                        for ss in rs.scope_spans
                        for span in ss.spans
                        for a in span.attributes
                        if a.key == "gen_ai.tool.call.id"
                    )
                    sink.changed.notify_all()
                if first:
                    sink.release.wait(30)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, call_id: str, timeout_s: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: call_id in self.call_ids, timeout_s)

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def held_sink() -> Iterator[_HeldSink]:
    sink = _HeldSink()
    try:
        yield sink
    finally:
        sink.stop()


def test_a_daemon_sent_sigterm_exports_the_spans_it_holds_and_removes_its_socket(
    tmp_path: Path, runtime_dir: Path, held_sink: _HeldSink
) -> None:
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    env = client_env(tmp_path, runtime_dir, OTEL_EXPORTER_OTLP_ENDPOINT=held_sink.endpoint)
    assert hook(env, bash("toolu_1", "ls")).returncode == 0  # starts the daemon
    pid = daemon_pid(runtime_dir)
    socket_file = next(runtime_dir.glob("cc-*.sock"))
    assert hook(env, bash("toolu_2", "rm -rf /")).deny_reason() == "rm -rf is not allowed here"
    assert held_sink.wait_for("toolu_2", 30)  # its answer is held: the exporter is busy
    assert hook(env, bash("toolu_3", "rm -rf ~")).deny_reason() == "rm -rf is not allowed here"
    os.kill(pid, signal.SIGTERM)
    # Stopped serving: the socket file goes, then the daemon waits on its exporter (before,
    # it died at once with the socket file left)
    deadline_s = 20.0
    while socket_file.exists() and not gone(pid) and deadline_s > 0:
        deadline_s -= 0.05
        threading.Event().wait(0.05)
    held_sink.release.set()
    assert until_gone(pid, 20)
    assert "toolu_3" in held_sink.call_ids
    assert not socket_file.exists()


def test_an_mcp_http_gateway_sent_sigterm_mid_session_writes_the_sessions_span(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tests.mcp._harness as harness

    started: list[subprocess.Popen[bytes]] = []
    process = harness.process

    @contextlib.contextmanager
    def recorded(*args: Any) -> Iterator[subprocess.Popen[bytes]]:
        with process(*args) as proc:
            started.append(proc)
            yield proc

    monkeypatch.setattr(harness, "process", recorded)

    async def call_then_stop(url: str) -> int | None:
        async with http_session(url) as session:
            result = await session.call_tool("add", {"a": 1, "b": 2})
            assert result.is_error is False
            gateway = started[-1]  # the session is still open
            gateway.send_signal(signal.SIGTERM)
            return await anyio.to_thread.run_sync(gateway.wait, 20)

    with http_gateway(tmp_path) as url:
        # before, killed by the signal (-15) before the session's span ended
        assert anyio.run(call_then_stop, url) == 0
    names = [span["name"] for span in read_otlp_json_lines(tmp_path / "traces.jsonl")]
    assert "tools/call add" in names
    assert "mcp.session" in names
