"""One span, tracer, meter or resource the OTLP encoder cannot take costs only itself.

Before, a tracer named with a lone surrogate (``get_tracer("caf\\udce9")``), a start time in
seconds (``start_time=time.time()``), a kind given as text and the like failed the encoding of
every batch they were in: no span of the batch arrived, at every retry. Each test drives
``configure()``'s real exporters against a real OTLP receiver on 127.0.0.1 (an HTTP server, a
``grpc.server``) and reads what arrived: the batch, the bad field repaired, the rest intact.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import SpanContext, TraceFlags

import otelhooks
from otelhooks._export._otlp_grpc import GrpcSpanExporter
from otelhooks._export._report import DeliveryTracker
from tests.reliability.test_grpc_export_losses import GrpcCollector, grpc_env
from tests.reliability.test_telemetry_losses import dropped

__all__ = ["grpc_env"]  # the fixture, used by name


class HttpCollector:
    """An OTLP/HTTP receiver on 127.0.0.1 keeping each request whole, answering ``answer``
    (``application/json``) or an empty protobuf success."""

    def __init__(self, answer: bytes = b"") -> None:
        self.requests: list[Any] = []
        self.posts = 0
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                collector.posts += 1
                kind = ExportTraceServiceRequest
                if self.path == "/v1/metrics":
                    kind = ExportMetricsServiceRequest  # type: ignore[assignment]
                collector.requests.append(kind.FromString(body))
                self.send_response(200)
                content_type = "application/json" if answer else "application/x-protobuf"
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def http_collector(answer: bytes = b"") -> Iterator[HttpCollector]:
    running = HttpCollector(answer)
    try:
        yield running
    finally:
        running.stop()


def received_spans(requests: list[Any]) -> dict[str, tuple[Any, Any, Any]]:
    """Each span that arrived by name: (its resource, its ScopeSpans, the span)."""
    return {
        span.name: (rs.resource, ss, span)
        for request in requests
        if isinstance(request, ExportTraceServiceRequest)
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    }


def received_metrics(requests: list[Any]) -> dict[str, tuple[Any, Any]]:
    """Each metric that arrived by name (the last export's): (its ScopeMetrics, the metric)."""
    return {
        metric.name: (sm, metric)
        for request in requests
        if isinstance(request, ExportMetricsServiceRequest)
        for rm in request.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    }


def attributes(key_values: Any) -> dict[str, Any]:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in key_values}


# -- spans --------------------------------------------------------------------------------------

# What a user's code does to a span of its own (through the pipeline's tracer provider), and
# what the collector must receive for it: (the span's name as sent, a check of scope and span).
Make = Callable[[Any], None]
Check = Callable[[Any, Any], None]


def _scope_name(tp: Any) -> None:
    tp.get_tracer("caf\udce9").start_span("bad").end()


def _scope_version(tp: Any) -> None:
    tp.get_tracer("t", "1.0\udce9").start_span("bad").end()


def _scope_schema_url(tp: Any) -> None:
    tp.get_tracer("t", "1", "https://example.invalid/caf\udce9").start_span("bad").end()


def _scope_attribute(tp: Any) -> None:
    tp.get_tracer("t", attributes={"dir": "caf\udce9"}).start_span("bad").end()


def _start_in_seconds(tp: Any) -> None:
    tp.get_tracer("t").start_span("bad", start_time=time.time()).end()


def _negative_event_time(tp: Any) -> None:
    span = tp.get_tracer("t").start_span("bad")
    span.add_event("retry", {"n": 1}, timestamp=-1)
    span.end()


def _kind_as_text(tp: Any) -> None:
    tp.get_tracer("t").start_span("bad", kind="server").end()


def _name_not_text(tp: Any) -> None:
    tp.get_tracer("t").start_span(404).end()


def _integer_past_64_bits(tp: Any) -> None:
    span = tp.get_tracer("t").start_span("bad")
    span.set_attribute("bytes", 2**64)
    span.end()


SPAN_CASES: dict[str, tuple[Make, str, Check]] = {
    "scope name": (_scope_name, "bad", lambda ss, s: _eq(ss.scope.name, "caf\ufffd")),
    "scope version": (_scope_version, "bad", lambda ss, s: _eq(ss.scope.version, "1.0\ufffd")),
    "scope schema url": (
        _scope_schema_url, "bad",
        lambda ss, s: _eq(ss.schema_url, "https://example.invalid/caf\ufffd"),
    ),
    "scope attribute": (
        _scope_attribute, "bad",
        lambda ss, s: _eq(attributes(ss.scope.attributes), {"dir": "caf\ufffd"}),
    ),
    # a time in seconds stays what it says (about 1.8 s after 1970): the span is not lost
    "start time in seconds": (
        _start_in_seconds, "bad", lambda ss, s: _eq(0 < s.start_time_unix_nano < 2**32, True)
    ),
    "negative event time": (
        _negative_event_time, "bad",
        lambda ss, s: _eq([(e.name, e.time_unix_nano) for e in s.events], [("retry", 0)]),
    ),
    "kind as text": (_kind_as_text, "bad", lambda ss, s: _eq(s.kind, s.SPAN_KIND_INTERNAL)),
    "name not text": (_name_not_text, "404", lambda ss, s: _eq(ss.scope.name, "t")),
    "integer past 64 bits": (
        _integer_past_64_bits, "bad",
        lambda ss, s: _eq(attributes(s.attributes), {"bytes": str(2**64)}),
    ),
}  # fmt: skip


def _eq(got: Any, expected: Any) -> None:
    assert got == expected


def _run_spans(make: Make, reader: InMemoryMetricReader, **options: Any) -> otelhooks.OtelHooks:
    oh = otelhooks.configure(
        otlp=True, metric_readers=[reader], set_global=False, structured_logging=False,
        **options,
    )  # fmt: skip
    good = oh.tracer_provider.get_tracer("tools")
    good.start_span("innocent", attributes={"path": "caf\u00e9", "n": 3}).end()
    make(oh.tracer_provider)
    return oh


def _assert_batch_whole(
    requests: list[Any], name: str, check: Check, caplog: pytest.LogCaptureFixture
) -> None:
    spans = received_spans(requests)
    assert set(spans) == {"innocent", name}
    _, scope, innocent = spans["innocent"]
    assert scope.scope.name == "tools"
    assert attributes(innocent.attributes) == {"path": "caf\u00e9", "n": 3}
    _, scope, bad = spans[name]
    check(scope, bad)
    # nothing dropped by the encoder with a traceback, nothing failed to encode
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert said == []


@pytest.mark.parametrize("case", list(SPAN_CASES))
def test_one_bad_span_or_tracer_costs_no_other_span_over_otlp_http(
    case: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    make, name, check = SPAN_CASES[case]
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    with http_collector() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        reader = InMemoryMetricReader()
        traces = tmp_path / "traces.jsonl"
        oh = _run_spans(make, reader, traces_out=traces)
        assert oh.force_flush(5.0)  # no batch waits on retries of an encoding that cannot work
        assert oh.metrics.flush(5.0)
        assert dropped(reader) == {}
        report = oh.shutdown(timeout_s=5.0, log=False)
    assert report.ok, report.lines()
    assert receiver.posts == 1  # the batch, once
    _assert_batch_whole(receiver.requests, name, check, caplog)
    assert {s["name"] for s in otelhooks.read_otlp_json_lines(traces)} == {"innocent", name}


@pytest.mark.parametrize("case", list(SPAN_CASES))
def test_one_bad_span_or_tracer_costs_no_other_span_over_otlp_grpc(
    case: str, grpc_env: Callable[[str], None], caplog: pytest.LogCaptureFixture
) -> None:
    # Before, the encoder's raise left the gRPC exporter: the batch was lost as an error of the
    # exporter loop ("handler_error").
    make, name, check = SPAN_CASES[case]
    collector = GrpcCollector()
    try:
        grpc_env(collector.endpoint)
        reader = InMemoryMetricReader()
        oh = _run_spans(make, reader)
        assert oh.force_flush(5.0)
        assert oh.metrics.flush(5.0)
        assert dropped(reader) == {}
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        collector.stop()
    assert report.ok, report.lines()
    _assert_batch_whole(collector.requests, name, check, caplog)


def test_a_span_the_encoder_refuses_fails_the_grpc_export_with_its_reason(
    grpc_env: Callable[[str], None],
) -> None:
    # A span made by hand with a trace id past 128 bits (nothing repairs an id). Before, the
    # encoder's raise left export(): the batch was lost as an error of the exporter loop.
    collector = GrpcCollector()
    try:
        tracker = DeliveryTracker("spans", collector.endpoint)
        exporter = GrpcSpanExporter(tracker, {}, endpoint=collector.endpoint)
        span = ReadableSpan("odd", context=SpanContext(2**130, 1, is_remote=False))
        assert exporter.export([span]).name == "FAILURE"
        exporter.shutdown()
    finally:
        collector.stop()
    assert collector.requests == []
    assert (tracker.reason or "").startswith("the spans could not be encoded: OverflowError: ")
    assert not tracker.retryable  # sending it again cannot work


# -- metrics ------------------------------------------------------------------------------------


def _meter_name(mp: Any) -> None:
    mp.get_meter("caf\udce9").create_counter("user.calls").add(1)


def _description(mp: Any) -> None:
    mp.get_meter("m").create_counter("user.calls", description="caf\udce9").add(1)


def _sum_past_64_bits(mp: Any) -> None:
    mp.get_meter("m").create_counter("user.calls").add(2**64)


def _point_attribute(mp: Any) -> None:
    mp.get_meter("m").create_counter("user.calls").add(1, {"dir": "caf\udce9"})


METRIC_CASES: dict[str, tuple[Make, Check]] = {
    "meter name": (_meter_name, lambda sm, m: _eq(sm.scope.name, "caf\ufffd")),
    "description": (_description, lambda sm, m: _eq(m.description, "caf\ufffd")),
    "sum past 64 bits": (
        _sum_past_64_bits, lambda sm, m: _eq(m.sum.data_points[0].as_double, float(2**64))
    ),
    "data point attribute": (
        _point_attribute,
        lambda sm, m: _eq(attributes(m.sum.data_points[0].attributes), {"dir": "caf\ufffd"}),
    ),
}  # fmt: skip


def _run_metrics(make: Make) -> tuple[otelhooks.OtelHooks, Any]:
    oh = otelhooks.configure(otlp=True, set_global=False, structured_logging=False)
    with oh.operation("agent", input="go") as op, op.step() as step:
        step.run_tool("fs", "list", {}, lambda: "ok")  # otelhooks' own metrics, in each export
    make(oh.meter_provider)
    assert oh.metrics.flush(5.0)
    assert oh.meter_provider.force_flush(5_000)
    report = oh.shutdown(timeout_s=5.0, log=False)
    return oh, report


def _assert_metrics_whole(requests: list[Any], check: Check, report: Any) -> None:
    metrics = received_metrics(requests)
    assert "otelhooks.tool.calls" in metrics  # the export, whole
    check(*metrics["user.calls"])
    [_, metric_exports] = report
    assert metric_exports.sent > 0
    assert metric_exports.delivered == metric_exports.sent, report.lines()


@pytest.mark.parametrize("case", list(METRIC_CASES))
def test_one_bad_meter_or_metric_costs_no_other_metric_over_otlp_http(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, every export of the run failed whole: otelhooks' own metrics were lost with it.
    make, check = METRIC_CASES[case]
    monkeypatch.delenv("OTEL_METRICS_EXPORTER", raising=False)
    with http_collector() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        _, report = _run_metrics(make)
    _assert_metrics_whole(receiver.requests, check, report)


@pytest.mark.parametrize("case", list(METRIC_CASES))
def test_one_bad_meter_or_metric_costs_no_other_metric_over_otlp_grpc(
    case: str, grpc_env: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    make, check = METRIC_CASES[case]
    collector = GrpcCollector()
    try:
        grpc_env(collector.endpoint)
        monkeypatch.delenv("OTEL_METRICS_EXPORTER")
        _, report = _run_metrics(make)
    finally:
        collector.stop()
    _assert_metrics_whole(collector.requests, check, report)


# -- the resource, from the environment ---------------------------------------------------------

_CHILD = """
import otelhooks
oh = otelhooks.configure(otlp=True, set_global=False, structured_logging=False)
with oh.operation("agent", input="go"):
    pass
print(oh.shutdown(timeout_s=5.0, log=False))
"""


def test_a_resource_variable_of_bytes_utf8_cannot_hold_is_repaired_not_dropped() -> None:
    # OTEL_RESOURCE_ATTRIBUTES written in Latin-1 ("team=café"): Python reads the byte as a
    # lone surrogate. Before, the encoder dropped the attribute from every span and metrics
    # export, with a traceback on stderr each time.
    with http_collector() as receiver:
        env = {k.encode(): v.encode() for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env[b"OTEL_RESOURCE_ATTRIBUTES"] = b"team=caf\xe9,region=eu"
        env[b"OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint.encode()
        env[b"PYTHONPATH"] = os.getcwd().encode()
        child = subprocess.run(
            [sys.executable, "-c", _CHILD], env=env, capture_output=True, timeout=60
        )
    assert child.returncode == 0, child.stderr.decode(errors="replace")
    assert b"Traceback" not in child.stderr, child.stderr.decode(errors="replace")
    assert child.stdout.decode().startswith("1 spans exported to ")
    assert "metric exports accepted by" in child.stdout.decode()
    [(resource, _, _)] = received_spans(receiver.requests).values()
    resources = [resource] + [
        rm.resource
        for request in receiver.requests
        if isinstance(request, ExportMetricsServiceRequest)
        for rm in request.resource_metrics
    ]
    assert len(resources) > 1
    for each in resources:
        assert {"team": "caf\ufffd", "region": "eu"}.items() <= attributes(each.attributes).items()


# -- what a collector answers -------------------------------------------------------------------

ANSWERS = {
    # more than were sent: all of them were not kept, said and counted
    "rejected Infinity": (b'{"partialSuccess":{"rejectedSpans":Infinity,"errorMessage":"full"}}',
                          "all spans rejected: full"),
    "rejected 1e400": (b'{"partialSuccess":{"rejectedSpans":1e400,"errorMessage":"full"}}',
                       "all spans rejected: full"),
    # not an OTLP answer: the 200 stands, whole
    "nested past the decoder's depth": (b"[" * 100_000, ""),
}  # fmt: skip


@pytest.mark.parametrize("answer", list(ANSWERS))
def test_an_odd_json_partial_success_is_counted_once_never_taken_for_a_failure(
    answer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, each of these raised out of the answer's reading: the SDK's exporter took an
    # accepted export for a failed one and sent the batch again for five minutes (a copy of
    # every span at the collector each time), then reported all of them failed.
    body, reason = ANSWERS[answer]
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    with http_collector(body) as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        reader = InMemoryMetricReader()
        oh = otelhooks.configure(
            otlp=True, metric_readers=[reader], set_global=False, structured_logging=False
        )
        for name in ("a", "b", "c"):
            oh.tracer_provider.get_tracer("t").start_span(name).end()
        assert oh.force_flush(5.0)
        assert oh.metrics.flush(5.0)
        counted = dropped(reader)
        report = oh.shutdown(timeout_s=5.0, log=False)
    assert receiver.posts == 1
    [spans] = report
    if reason:
        assert counted == {("span_export", "rejected"): 3}
        assert spans.line() == f"0 of 3 spans exported to {receiver.endpoint}/v1/traces: {reason}"
    else:
        assert counted == {}
        assert report.ok, report.lines()


# -- spans made by hand (a processor of yours, spans received and sent on) ---------------------


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "rm -rf"}
    for _ in range(levels - 1):
        value = {"in": value}
    return value


def _depth(value: Any) -> tuple[int, Any]:
    """How many maps deep ``value`` (a protobuf AnyValue) goes, and what is at the bottom."""
    levels = 0
    while value.WhichOneof("value") == "kvlist_value":
        levels += 1
        value = value.kvlist_value.values[0].value
    return levels, getattr(value, value.WhichOneof("value"))


def _cut_to_text(span: Any) -> None:
    levels, bottom = _depth(span.attributes[0].value)
    assert levels == 19  # the 20th level and what is under it: its JSON text, content kept
    assert bottom.startswith('{"in":{"in":')
    assert "rm -rf" in bottom


HAND_MADE: dict[str, tuple[dict[Any, Any], Callable[[Any], None]]] = {
    # before, the check itself raised on it: every span of the batch lost as a loop error
    "a key that is not text": (
        {7: "seven"}, lambda s: _eq(attributes(s.attributes), {"7": "seven"})
    ),
    # before, sent as it was: the receiver's decoder refused the request, sent again for minutes
    "a map 200 levels deep": ({"args": _nested(200)}, _cut_to_text),
}  # fmt: skip


@pytest.mark.parametrize("case", list(HAND_MADE))
def test_a_span_made_by_hand_costs_no_other_span_of_its_batch(case: str) -> None:
    given, check = HAND_MADE[case]
    with http_collector() as receiver:
        processor = otelhooks.CountingBatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces", timeout=5),
            retry_failed_s=3.0,
        )
        tp = TracerProvider()
        tp.add_span_processor(processor)
        tp.get_tracer("tools").start_span("innocent").end()
        context = SpanContext(
            0x1F, 0x2F, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)
        )
        processor.on_end(ReadableSpan("hand made", context=context, attributes=given))
        assert processor.force_flush(10_000)
        tp.shutdown()
        assert processor.dropped == 0
    spans = received_spans(receiver.requests)
    assert set(spans) == {"innocent", "hand made"}
    check(spans["hand made"][2])
