"""What an OTLP/gRPC collector answers, and what otelhooks' exporters make of it: a request
too large for a tonic-based collector, the timeout variables, a metrics ``partial_success``.

Each test exports to a real server on 127.0.0.1: a real rotel collector (tonic), or a
``grpc.server`` with the generated servicers.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.trace.export import SpanExportResult

from otelhooks._export._report import DeliveryTracker
from otelhooks.integrations.coding_agents._environment import otlp_exporter
from tests._realparts import OtlpHttpSink, require, rotel_binary, rotel_collector
from tests.reliability.test_grpc_export_losses import (
    GrpcCollector,
    _agent_run,
    _dropped,
    _export,
    _spans,
    grpc_env,
)

__all__ = ["grpc_env"]  # the fixture, shared


def test_a_span_too_large_for_a_tonic_collector_is_lost_alone_and_counted(
    grpc_env: Callable[[str], None],
) -> None:
    # rotel (tonic) answers a request over its 4 MiB decoding limit OUT_OF_RANGE ("decoded
    # message length too large"), which the specification retries: before, the batch was sent
    # whole again for 5 minutes, then every span of it was lost.
    require("rotel", rotel_binary() is not None)  # under CI a failure, not a skip
    sink = OtlpHttpSink()
    with (
        tempfile.TemporaryDirectory() as folder,
        rotel_collector(sink.endpoint, Path(folder)) as (grpc_port, _),
    ):
        grpc_env(f"http://127.0.0.1:{grpc_port}")
        oh, reader = _agent_run(lambda name: "x" * (5 << 20) if name == "read" else "small")
        assert oh.force_flush(10.0)  # the halves are sent at once, not the batch again
        assert oh.metrics.flush(5.0)
        assert _dropped(reader) == {("span_export", "export_failed"): 1}
        report = oh.shutdown(timeout_s=5.0, log=False)
        assert sink.wait_for_span_count(6, timeout=10.0)
    assert sorted(sink.span_names) == [
        "execute_tool diff", "execute_tool grep", "execute_tool list", "execute_tool stat",
        "invoke_agent agent", "step 0",
    ]  # fmt: skip
    [line] = report.lines()
    assert line.startswith(f"6 of 7 spans exported to http://127.0.0.1:{grpc_port}: OUT_OF_RANGE: ")
    assert "decoded message length too large" in line


def test_an_out_of_range_not_about_size_is_retried_whole(grpc_env: Callable[[str], None]) -> None:
    # Only tonic's "too large" is a request too large: any other OUT_OF_RANGE stays what the
    # specification says, retried as it is.
    def answer(context: Any, names: list[str]) -> Any:
        context.abort(grpc.StatusCode.OUT_OF_RANGE, "offset past the end")

    collector = GrpcCollector(answer)
    try:
        grpc_env(collector.endpoint)
        result, tracker = _export(_spans(2))
    finally:
        collector.stop()
    assert result is SpanExportResult.FAILURE
    assert tracker.reason == "OUT_OF_RANGE: offset past the end"
    assert (tracker.too_large, tracker.retryable) == (False, True)


# -- OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]TIMEOUT: one rule for every exporter ----------------


@pytest.mark.parametrize("timeout", ["0", "-1", "ten", "1e12"])
def test_an_odd_otlp_timeout_leaves_export_to_a_healthy_grpc_collector_working(
    grpc_env: Callable[[str], None], monkeypatch: pytest.MonkeyPatch, timeout: str
) -> None:
    # 0 is the specification's "no limit"; a negative value or a word is ignored (logged), as
    # it says; a longer wait than 2^31-1 ms is that. Before, 0 failed every metric export at
    # once (the SDK's exporter), -1 and 1e12 (gRPC's deadline overflowed) every span and metric
    # export, and a word made configure() raise.
    collector = GrpcCollector()
    try:
        grpc_env(collector.endpoint)
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", timeout)
        oh, _ = _agent_run(lambda name: "small")
        assert oh.force_flush(5.0)
        assert oh.metrics.flush(5.0)
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        collector.stop()
    assert len(collector.spans) == 7
    assert collector.metric_requests > 0
    assert report.ok, report.lines()


@pytest.mark.parametrize(
    ("timeout", "cap"), [("0", 0.5), ("", 0.0)], ids=["no-limit", "zero-shutdown-timeout"]
)
def test_a_stalled_grpc_collector_holds_a_fail_fast_export_no_longer_than_its_cap(
    timeout: str, cap: float
) -> None:
    # A hook process's exporter (fail-fast, capped by OTELHOOKS_SHUTDOWN_TIMEOUT) against a
    # collector that takes the request and never answers. "No limit" never lifts the cap; a cap
    # of 0 is the shortest wait. Before, a cap of 0 was taken for none: the export waited the
    # exporter's whole 10 s, past the 1.5 s Claude Code gives a SessionEnd hook.
    collector: GrpcCollector

    def stalled(context: Any, names: list[str]) -> Any:
        collector.release.wait(30)
        return None

    collector = GrpcCollector(stalled)
    tracker = DeliveryTracker("spans", "", fail_fast=True, request_timeout_s=cap)
    settings = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_TIMEOUT": timeout,
    }
    try:
        exporter = otlp_exporter(settings, tracker)
        assert exporter is not None
        started = time.monotonic()
        result = exporter.export(_spans(1))
        waited = time.monotonic() - started
        exporter.shutdown()
    finally:
        collector.stop()
    assert result is SpanExportResult.FAILURE
    assert waited < cap + 2.0, waited
    assert (tracker.reason or "").startswith("DEADLINE_EXCEEDED")
    assert tracker.dead  # not tried again


# -- metrics over gRPC: the answer is read, as for spans ------------------------------------------


def test_a_grpc_collectors_metrics_partial_success_is_counted_and_reported(
    grpc_env: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, the SDK's gRPC metric exporter kept the answer to itself: data points a collector
    # said it did not keep (a cardinality limit) were reported accepted. Over OTLP/HTTP they
    # were already counted.
    partial = metrics_service_pb2.ExportMetricsPartialSuccess(
        rejected_data_points=1, error_message="cardinality\nlimit"
    )
    answer = metrics_service_pb2.ExportMetricsServiceResponse(partial_success=partial)
    collector = GrpcCollector(metrics_answer=answer)
    try:
        grpc_env(collector.endpoint)
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
        oh, _ = _agent_run(lambda name: "small")
        assert oh.metrics.flush(5.0)
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        collector.stop()
    spans, metric_exports = report
    assert spans.ok
    assert metric_exports.sent == collector.metric_requests > 0
    assert (metric_exports.delivered, metric_exports.failed) == (0, metric_exports.sent)
    assert metric_exports.reason == "1 data points rejected: cardinality limit"


def test_a_grpc_metrics_failure_says_the_collectors_status(
    grpc_env: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: "the exporter reported a failure", whatever the collector said.
    collector = GrpcCollector()
    collector.stop()  # nothing listens on its port any more
    grpc_env(collector.endpoint)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    oh, _ = _agent_run(lambda name: "small")
    report = oh.shutdown(timeout_s=2.0, log=False)
    metric_exports = report.destinations[-1]
    assert metric_exports.delivered == 0
    assert (metric_exports.reason or "").startswith("UNAVAILABLE"), metric_exports.reason


@pytest.mark.parametrize(
    ("gzip", "said"),
    [
        (True, "Decompressed message larger than max"),
        (False, "CLIENT: Received message larger than max"),
    ],
    ids=["gzip-bomb", "plain"],
)
def test_a_grpc_answer_too_large_to_read_is_not_taken_for_a_request_too_large(
    grpc_env: Callable[[str], None], gzip: bool, said: str
) -> None:
    # A collector's answer past the 4 MiB our client reads (a gzip bomb: 6 KB on the wire, 6
    # MiB once decompressed) is RESOURCE_EXHAUSTED from our own client. Before, it was taken
    # for "the request was too large": the batch the collector had kept was sent again in
    # halves, down to each span (each span received up to 4 times), all reported failed.
    collector: GrpcCollector

    def bomb(context: Any, names: list[str]) -> Any:
        collector.spans.extend(names)
        if gzip:
            context.set_compression(grpc.Compression.Gzip)
        partial = trace_service_pb2.ExportTracePartialSuccess(error_message="x" * (6 << 20))
        return trace_service_pb2.ExportTraceServiceResponse(partial_success=partial)

    collector = GrpcCollector(bomb)
    try:
        grpc_env(collector.endpoint)
        oh, _ = _agent_run(lambda name: "small")
        assert oh.force_flush(5.0)
        report = oh.shutdown(timeout_s=5.0, log=False)
    finally:
        collector.stop()
    assert len(collector.spans) == 7  # each once
    [destination] = report.destinations
    assert destination.failed == 7  # the answer could not be read: not known to be kept
    assert said in (destination.reason or "")
