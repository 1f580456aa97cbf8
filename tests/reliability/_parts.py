"""Real parts the reliability tests share: an OTLP/HTTP receiver that keeps whole requests, and a
look at ``/proc`` for zombie children.

Everything listens on 127.0.0.1 on a free port and is stopped by whoever started it.
"""

from __future__ import annotations

import gzip
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RawRequest:
    """One request as it arrived: path, headers (lower-case names), body (inflated)."""

    path: str
    headers: dict[str, str]
    body: bytes


class RawOtlpSink:
    """An OTLP/HTTP receiver on 127.0.0.1 that answers 200 to every POST and keeps the whole
    request (traces, metrics and logs alike), gzip bodies inflated.

    ``fail_first`` requests are answered 503 first (an unhealthy collector).
    """

    def __init__(self, *, fail_first: int = 0) -> None:
        self.requests: list[RawRequest] = []
        self._changed = threading.Condition()
        self._failures_left = fail_first
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                got = RawRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with sink._changed:
                    failing = sink._failures_left > 0
                    if failing:
                        sink._failures_left -= 1
                    else:
                        sink.requests.append(got)
                        sink._changed.notify_all()
                self.send_response(503 if failing else 200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def of(self, path: str) -> list[RawRequest]:
        with self._changed:
            return [r for r in self.requests if r.path == path]

    def span_names(self) -> list[str]:
        """The name of every span received on ``/v1/traces``, in arrival order."""
        return [span.name for span in self.spans()]

    def spans(self) -> list[Any]:
        """Every received ``Span`` protobuf message."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        found: list[Any] = []
        for raw in self.of("/v1/traces"):
            request = ExportTraceServiceRequest.FromString(raw.body)
            for rs in request.resource_spans:
                for ss in rs.scope_spans:
                    found.extend(ss.spans)
        return found

    def metric_names(self) -> set[str]:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest,
        )

        names: set[str] = set()
        for raw in self.of("/v1/metrics"):
            request = ExportMetricsServiceRequest.FromString(raw.body)
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    names.update(m.name for m in sm.metrics)
        return names

    def wait_for_spans(self, count: int, timeout_s: float = 10.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: len(self.span_names()) >= count, timeout_s)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def raw_otlp_sink(*, fail_first: int = 0) -> Iterator[RawOtlpSink]:
    sink = RawOtlpSink(fail_first=fail_first)
    try:
        yield sink
    finally:
        sink.stop()


def zombie_children(pid: int | None = None) -> list[int]:
    """Children of ``pid`` (default: this process) that are zombies, read from ``/proc``."""
    parent = os.getpid() if pid is None else pid
    zombies = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue  # it ended while we looked
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("PPid", "").strip() == str(parent) and fields.get("State", "").startswith(
            "Z"
        ):
            zombies.append(int(entry.name))
    return zombies


def is_running(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status
