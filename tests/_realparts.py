"""Real OTLP receivers for integration tests: oteltap in-process, rotel as a process.

Both listen on 127.0.0.1 on a free port and are stopped by the fixture that started them. Under
CI (``CI=true``) a missing component is a failure, not a skip.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def require(component: str, available: bool) -> None:
    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{component} is required under CI but is not installed")
    pytest.skip(f"{component} is not installed")


def wait_for_port(port: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port}")


def rotel_binary() -> Path | None:
    try:
        import rotel
    except ImportError:
        return None
    path = Path(rotel.__file__).parent / "rotel-agent"
    return path if path.exists() else None


@contextmanager
def rotel_collector(forward_to_http: str, workdir: Path) -> Iterator[tuple[int, int]]:
    """A real rotel collector receiving OTLP gRPC and HTTP, forwarding over OTLP/HTTP."""
    binary = rotel_binary()
    require("rotel", binary is not None)
    assert binary is not None
    grpc_port, http_port = free_port(), free_port()
    proc = subprocess.Popen(
        [
            str(binary), "start",
            "--otlp-grpc-endpoint", f"127.0.0.1:{grpc_port}",
            "--otlp-http-endpoint", f"127.0.0.1:{http_port}",
            "--exporter", "otlp",
            "--otlp-exporter-protocol", "http",
            "--otlp-exporter-endpoint", forward_to_http,
            "--pid-file", str(workdir / "rotel.pid"),
            "--log-file", str(workdir / "rotel.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(grpc_port)
        wait_for_port(http_port)
        yield grpc_port, http_port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class OtlpReceiver:
    """oteltap's async OTLP/HTTP receiver, driven from sync tests on a private event loop."""

    def __init__(self) -> None:
        import asyncio
        import threading

        try:
            from oteltap import OtelTapHttpProtobufReceiver, OtelTapHttpProtobufReceiverSettings
        except ImportError:
            require("oteltap", False)
            raise
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._tap = OtelTapHttpProtobufReceiver(
            OtelTapHttpProtobufReceiverSettings(http_port=self.port)
        )
        self._run(self._tap.start(), 10)
        wait_for_port(self.port)

    def _run(self, coro: object, timeout: float) -> object:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)  # type: ignore[arg-type]

    def expect_span(self, name: str, timeout: float = 30.0) -> Future[object]:
        """Start waiting for a span named ``name`` (oteltap does not buffer: call this first)."""
        return self._expect(self._tap.await_trace(lambda s: s.name == name, timeout))

    def expect_metric(self, name: str, timeout: float = 30.0) -> Future[object]:
        return self._expect(self._tap.await_metric(lambda m: m.name == name, timeout))

    def _expect(self, coro: Any) -> Future[object]:
        import asyncio

        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        # The loop runs callbacks in order: once this no-op has run, the awaiter is registered.
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), self._loop).result(5)
        return future

    def stop(self) -> None:
        try:
            self._run(self._tap.stop(), 10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)


class OtlpHttpSink:
    """A minimal OTLP/HTTP protobuf receiver on 127.0.0.1 that understands gzip bodies.

    rotel always gzips what it forwards and oteltap cannot decode gzip, so this is the
    downstream of rotel in the gRPC test: a real HTTP server decoding real protobuf requests.
    """

    def __init__(self) -> None:
        import gzip
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        sink = self
        self.span_names: list[str] = []
        self._changed = threading.Condition()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    names = [
                        span.name
                        for rs in request.resource_spans
                        for ss in rs.scope_spans
                        for span in ss.spans
                    ]
                    with sink._changed:
                        sink.span_names.extend(names)
                        sink._changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def wait_for_span(self, name: str, timeout: float = 30.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: name in self.span_names, timeout)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
