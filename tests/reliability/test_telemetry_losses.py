"""What an agent did is exported, or its loss is counted and reported: never silently gone.

A tool call that ran must reach the user as its ``execute_tool`` span, or the delivery report
and ``otelhooks.dropped`` must say how many spans were lost and why. Each test drives the real
pipeline of ``configure()`` against a real OTLP/HTTP receiver of its own on 127.0.0.1 (or a real
traces file), with nothing of otelhooks replaced.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsPartialSuccess,
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import otelhooks

TOOL_CALLS = 4
SPANS = 2 + TOOL_CALLS  # invoke_agent, step, one execute_tool per call


def _serve(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """``handler`` serving on a free port of 127.0.0.1, in a thread of its own."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    ).start()
    return server


class Collector:
    """An OTLP/HTTP receiver on 127.0.0.1 that keeps every span it is sent, but answers
    ``partialSuccess`` saying it did not keep ``reject`` of each request's spans (what
    ``otelhooks serve`` answers when its queue is full), and, then, one data point of each
    metrics request."""

    def __init__(self, *, reject: int = 0, redirect_to: str = "") -> None:
        self.spans: list[Any] = []
        self.posts = 0
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                collector.posts += 1
                if redirect_to:
                    self.send_response(308)
                    self.send_header("Location", redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                answer: Any = ExportTraceServiceResponse()
                if self.path == "/v1/metrics" and reject:
                    answer = ExportMetricsServiceResponse()
                    answer.partial_success.CopyFrom(
                        ExportMetricsPartialSuccess(
                            rejected_data_points=1, error_message="cardinality limit"
                        )
                    )
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    spans = [s for rs in request.resource_spans for ss in rs.scope_spans
                             for s in ss.spans]  # fmt: skip
                    collector.spans.extend(spans)
                    if reject:
                        answer.partial_success.CopyFrom(
                            ExportTracePartialSuccess(
                                rejected_spans=min(reject, len(spans)),
                                error_message="observer queue full",
                            )
                        )
                data = answer.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = _serve(Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def collector(*, reject: int = 0, redirect_to: str = "") -> Iterator[Collector]:
    running = Collector(reject=reject, redirect_to=redirect_to)
    try:
        yield running
    finally:
        running.stop()


def run_agent(oh: otelhooks.OtelHooks) -> None:
    with oh.operation("agent", input="go") as op, op.step() as step:
        for i in range(TOOL_CALLS):
            step.run_tool("calc", "add", {"i": i}, lambda i: i)


def dropped(reader: InMemoryMetricReader) -> dict[tuple[str, str], int]:
    """``otelhooks.dropped`` by (source, reason), as a reader sees it."""
    counts: dict[tuple[str, str], int] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name != "otelhooks.dropped":
                    continue
                for point in metric.data.data_points:
                    key = (
                        str(point.attributes["otelhooks.drop.source"]),
                        str(point.attributes["otelhooks.drop.reason"]),
                    )
                    counts[key] = counts.get(key, 0) + int(point.value)
    return counts


def test_spans_a_collector_says_it_rejected_are_reported_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 200 with partialSuccess.rejectedSpans: the SDK's exporter takes it for a whole success.
    # Before, the report said "6 spans exported" and otelhooks.dropped counted nothing.
    with collector(reject=2) as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        reader = InMemoryMetricReader()
        oh = otelhooks.configure(
            service_name="rejected", otlp=True, metric_readers=[reader], set_global=False,
            structured_logging=False,
        )  # fmt: skip
        run_agent(oh)
        assert oh.force_flush(5.0)
        assert len(receiver.spans) == SPANS  # all sent in one request, two of them not kept
        assert oh.metrics.flush(5.0)
        assert dropped(reader) == {("span_export", "rejected"): 2}
        report = oh.shutdown(timeout_s=5.0, log=False)

    spans, metric_exports = report
    assert (spans.sent, spans.delivered, spans.failed) == (SPANS, SPANS - 2, 2)
    assert metric_exports.sent > 0
    assert metric_exports.failed == metric_exports.sent
    assert metric_exports.reason == "1 data points rejected: cardinality limit"
    assert not report.ok
    assert spans.line() == (
        f"{SPANS - 2} of {SPANS} spans exported to {receiver.endpoint}/v1/traces: "
        "2 spans rejected: observer queue full"
    )


def test_a_collector_that_keeps_everything_is_a_whole_success(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with collector() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        oh = otelhooks.configure(
            service_name="kept", otlp=True, set_global=False, structured_logging=False
        )
        run_agent(oh)
        report = oh.shutdown(timeout_s=5.0, log=False)

    assert report.ok, report.lines()
    assert report.lines()[0] == f"{SPANS} spans exported to {receiver.endpoint}/v1/traces"


def test_a_call_whose_text_utf8_cannot_hold_loses_no_span_of_its_batch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A tool failing on a file whose name is not UTF-8 (os.fsdecode gives "caf\udce9") and a
    # tool name with a lone surrogate (a "\ud800" escape in the JSON a model wrote). Before,
    # the OTLP encoder failed the whole batch on such a span name or status message, and the
    # batch was retried for five minutes: no span of the run arrived, the innocent call's
    # neither, and the file exporter lost them all the same.
    name = os.fsdecode(b"/nonexistent/caf\xe9")

    def read(path: str) -> str:
        raise RuntimeError(f"cannot read {name}")

    with collector() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        traces = tmp_path / "traces.jsonl"
        oh = otelhooks.configure(
            service_name="surrogates", otlp=True, traces_out=traces, capture_content=True,
            set_global=False, structured_logging=False,
        )  # fmt: skip
        with oh.operation("agent", input="go") as op, op.step() as step:
            step.run_tool("fs", "list", {"path": "."}, lambda path: "ok")
            step.run_tool("fs", "read", {"path": name}, read)
            step.run_tool("fs", "odd\ud800name", {"path": name}, lambda path: name)
        assert oh.force_flush(5.0)  # no batch waits on retries of an encoding that cannot work
        report = oh.shutdown(timeout_s=5.0, log=False)
        received = {span.name: span for span in receiver.spans}

    assert report.ok, report.lines()
    expected = {
        "invoke_agent agent", "step 0", "execute_tool list", "execute_tool read",
        "execute_tool odd\ufffdname",
    }  # fmt: skip
    assert set(received) == expected
    assert received["execute_tool read"].status.message == "cannot read /nonexistent/caf\ufffd"
    written = {span["name"]: span for span in otelhooks.read_otlp_json_lines(traces)}
    assert set(written) == expected
    attributes = written["execute_tool odd\ufffdname"]["attributes"]
    assert attributes["gen_ai.tool.name"] == "odd\ufffdname"
    assert attributes["gen_ai.tool.call.arguments"] == '{"path":"/nonexistent/caf\ufffd"}'


def test_an_endpoint_that_redirects_is_reported_and_counted_not_taken_for_a_success(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An http:// endpoint whose ingress redirects to https:// (308). The SDK's exporter never
    # follows a redirect and took it for an accepted export: before, the report said "6 spans
    # exported", nothing was counted, and no span reached any collector.
    with collector(redirect_to="https://collector.example") as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint + "/v1/traces")
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
        reader = InMemoryMetricReader()
        oh = otelhooks.configure(
            service_name="redirected", otlp=True, metric_readers=[reader], set_global=False,
            structured_logging=False,
        )  # fmt: skip
        run_agent(oh)
        oh.force_flush(5.0)
        assert oh.metrics.flush(5.0)
        assert dropped(reader) == {("span_export", "export_failed"): SPANS}
        report = oh.shutdown(timeout_s=5.0, log=False)

    assert receiver.posts == 1  # a redirect is not retried
    assert report.lines() == [
        f"0 of {SPANS} spans exported to {receiver.endpoint}/v1/traces: 308 Permanent Redirect "
        "to https://collector.example/v1/traces (the endpoint redirects (a proxy; http:// to "
        "https://?): set OTEL_EXPORTER_OTLP_ENDPOINT to the collector's own URL)"
    ]


def test_a_proxys_login_page_is_a_failure_not_an_accepted_export(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # HTTP_PROXY set for the web (no NO_PROXY for the collector, on another host: one on a
    # loopback address is reached directly): the proxy, or a captive portal, answers every
    # request, the collector's included, with 200 and its login page. Before,
    # the SDK's exporter took that 200 for an accepted export: the report said "6 spans
    # exported", nothing was counted, and no span reached the collector.
    class Portal(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            page = b"<html><body>Please sign in</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    portal = _serve(Portal)
    endpoint = "http://collector.example"  # never resolved: the proxy is asked for it
    try:
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{portal.server_address[1]}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint + "/v1/traces")
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
        reader = InMemoryMetricReader()
        oh = otelhooks.configure(
            service_name="portal", otlp=True, metric_readers=[reader], set_global=False,
            structured_logging=False, fail_fast=True,
        )  # fmt: skip
        run_agent(oh)
        oh.force_flush(5.0)
        assert oh.metrics.flush(5.0)
        assert dropped(reader) == {("span_export", "export_failed"): SPANS}
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        portal.shutdown()
        portal.server_close()
    assert report.lines() == [
        f"0 of {SPANS} spans exported to {endpoint}/v1/traces: 200 OK with an HTML page, not OTLP"
    ]


def test_a_traces_file_rotated_away_gets_the_spans_that_follow_at_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # logrotate (without copytruncate) renames the file and makes a new one; a rotation later
    # the old one is compressed and removed. Before, the exporter kept writing to the file it
    # had open: the new file stayed empty, the spans went with the old one, and the report
    # said they were exported to the path.
    traces = tmp_path / "traces.jsonl"
    monkeypatch.chdir(tmp_path)
    oh = otelhooks.configure(
        service_name="rotated", traces_out="traces.jsonl", set_global=False,
        structured_logging=False,
    )  # fmt: skip
    run_agent(oh)
    assert oh.force_flush(5.0)
    traces.rename(tmp_path / "traces.jsonl.1")
    traces.touch(mode=0o600)  # logrotate's "create"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the agent moves: the file stays where it was
    run_agent(oh)
    assert oh.force_flush(5.0)
    assert len(otelhooks.read_otlp_json_lines(traces)) == SPANS  # the new file has them
    (tmp_path / "traces.jsonl.1").unlink()  # rotated again: the old file compressed, removed
    traces.unlink()  # and a user's rm: the next spans make the file again
    run_agent(oh)
    report = oh.shutdown(timeout_s=5.0, log=False)

    assert report.ok, report.lines()
    assert report.lines() == [f"{3 * SPANS} spans exported to {traces}"]
    names = [span["name"] for span in otelhooks.read_otlp_json_lines(traces)]
    assert len(names) == SPANS
    assert names.count("execute_tool add") == TOOL_CALLS


class MetricsReceiver:
    """An OTLP/HTTP metrics receiver on 127.0.0.1 that keeps the last ``otelhooks.dropped``
    counts (cumulative) of what it is sent."""

    def __init__(self) -> None:
        self.dropped: dict[tuple[str, str], int] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportMetricsServiceRequest.FromString(body)
                for rm in request.resource_metrics:
                    for sm in rm.scope_metrics:
                        for metric in sm.metrics:
                            if metric.name != "otelhooks.dropped":
                                continue
                            for point in metric.sum.data_points:
                                a = {kv.key: kv.value.string_value for kv in point.attributes}
                                key = (a["otelhooks.drop.source"], a["otelhooks.drop.reason"])
                                receiver.dropped[key] = point.as_int
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = _serve(Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_spans_a_silent_collector_lost_are_counted_in_the_metrics_exported_at_shutdown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Traces to a collector that accepts connections and never answers, metrics to a healthy
    # backend (where alerts on otelhooks.dropped live). Before, the span export took the whole
    # shutdown deadline, the metrics' last export (the one counting those spans) never left,
    # and the healthy metrics backend was reported as not answering.
    metrics = MetricsReceiver()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel accepts; nobody ever reads or answers
    try:
        monkeypatch.setenv(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            f"http://127.0.0.1:{silent.getsockname()[1]}/v1/traces",
        )
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", metrics.endpoint + "/v1/metrics")
        monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "600000")
        oh = otelhooks.configure(
            service_name="silent", otlp=True, set_global=False, structured_logging=False
        )
        run_agent(oh)
        started = time.monotonic()
        report = oh.shutdown(timeout_s=2.0, log=False)
        took = time.monotonic() - started
    finally:
        silent.close()
        metrics.stop()

    assert took < 2.5
    spans, metric_exports = report
    assert (spans.sent, spans.delivered, spans.failed) == (SPANS, 0, SPANS)
    assert metric_exports.ok, metric_exports.line()
    assert metrics.dropped == {("span_export", "export_failed"): SPANS}


PROMETHEUS_AGENT = """
import sys
import otelhooks
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from prometheus_client import start_http_server

server, _ = start_http_server(0, addr="127.0.0.1")  # its own port, said with "ready"
oh = otelhooks.configure(
    service_name="prometheus", metric_readers=[PrometheusMetricReader()], set_global=False,
    structured_logging=False,
)
for name in ("add", "odd\\ud800name", "add"):
    with oh.operation("agent") as op, op.step() as step:
        step.run_tool("calc", name, {"a": 1}, lambda a: a)
oh.metrics.flush()
print("ready", server.server_port, flush=True)
sys.stdin.read()  # until the test has scraped
"""


def test_a_tool_name_utf8_cannot_hold_leaves_the_prometheus_endpoint_whole() -> None:
    # Before, one tool call whose name held a lone surrogate (a "\ud800" escape in the JSON a
    # model wrote) made every later scrape of the process a 500: every metric, the
    # application's own on the same registry, lost for the life of the process.
    agent = subprocess.Popen(
        [sys.executable, "-c", PROMETHEUS_AGENT],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert agent.stdout is not None
        ready, port = agent.stdout.readline().split()
        assert ready == "ready"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            status, body = answer.status, answer.read().decode()
    finally:
        agent.communicate("", timeout=10)

    assert status == 200
    calls = {
        line.split("gen_ai_tool_name=")[1].split('"')[1]: float(line.rsplit(" ", 1)[1])
        for line in body.splitlines()
        if line.startswith("otelhooks_tool_calls_total{")
    }
    assert calls == {"add": 2.0, "odd\ufffdname": 1.0}


FULL_DISK_AGENT = """
import resource, signal, sys
import otelhooks

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
_, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, hard))  # the disk is full at 20,000 bytes
oh = otelhooks.configure(
    service_name="full-disk", traces_out=sys.argv[1], set_global=False, structured_logging=False,
    fail_fast=True,  # as a command: a failed write is not retried
)
for i in range(20):
    if i == 15:
        print("full", oh.delivery_report().destinations[0].delivered, flush=True)
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # room again
    with oh.operation("agent") as op, op.step() as step:
        step.run_tool("calc", "add", {"a": i}, lambda a: a)
    oh.force_flush(5.0)
(spans,) = oh.shutdown(timeout_s=5.0, log=False)
print("counts", spans.sent, spans.delivered, flush=True)
"""


def test_a_full_disk_leaves_the_traces_file_readable_and_what_it_reported_in_it(
    tmp_path: Path,
) -> None:
    # A disk that fills mid-line (a file size limit here: the same EFBIG/ENOSPC partial write).
    # Before, the torn line stayed: read_otlp_json_lines (and replay) refused the whole file,
    # and the first line written once there was room again was glued to it.
    traces = tmp_path / "traces.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK_AGENT, str(traces)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    (counts,) = (line for line in done.stdout.splitlines() if line.startswith("counts "))
    sent, delivered = map(int, counts.split()[1:])
    (full,) = (
        int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("full ")
    )

    assert sent == 20 * 3
    assert 0 < full < delivered < sent  # some did not fit (and are reported so), later ones did
    spans = otelhooks.read_otlp_json_lines(traces)
    assert len(spans) == delivered
    runs_written = {span["attributes"]["gen_ai.tool.call.id"] for span in spans
                    if span["name"] == "execute_tool add"}  # fmt: skip
    assert len(runs_written) == delivered // 3  # whole runs: every line written is whole
