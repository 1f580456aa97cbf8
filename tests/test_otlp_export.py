"""``configure()`` exports over OTLP/HTTP through the SDK's exporters, each answer counted."""

from __future__ import annotations

from typing import Any

import pytest

import otelhooks
from tests.reliability._parts import raw_otlp_sink


def test_spans_and_metrics_reach_an_otlp_http_endpoint_and_the_report_counts_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with raw_otlp_sink() as sink:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint)
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
        oh = otelhooks.configure(
            service_name="export-test", set_global=False, structured_logging=False
        )
        with oh.operation("agent") as op, op.step() as step:
            step.run_tool("fs", "readFile", {"path": "a"}, lambda path: "text")
        report = oh.shutdown(10.0)
        names = sink.span_names()
        metrics = sink.metric_names()
    assert sorted(names) == ["execute_tool readFile", "invoke_agent agent", "step 0"]
    assert "otelhooks.tool.calls" in metrics
    spans = next(d for d in report.destinations if d.kind == "spans")
    assert (spans.destination, spans.sent, spans.delivered, spans.ok) == (
        f"{sink.endpoint}/v1/traces",
        3,
        3,
        True,
    )


@pytest.mark.parametrize(("preference", "temporality"), [("delta", 1), ("cumulative", 2)])
def test_metric_exports_are_counted_and_keep_the_exporters_temporality(
    monkeypatch: pytest.MonkeyPatch, preference: str, temporality: int
) -> None:
    # The OTLP exporter reads the preference from the environment in its constructor; the
    # reader must use it although otelhooks counts every export (otelhooks.tool.calls is a
    # counter: AGGREGATION_TEMPORALITY_DELTA is 1, _CUMULATIVE 2 in the OTLP protobuf).
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    with raw_otlp_sink() as sink:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint)
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", preference)
        oh = otelhooks.configure(
            service_name="export-test", set_global=False, structured_logging=False
        )
        with oh.operation("agent") as op, op.step() as step:
            step.run_tool("fs", "readFile", {"path": "a"}, lambda path: "text")
        report = oh.shutdown(10.0)
        requests = [ExportMetricsServiceRequest.FromString(r.body) for r in sink.of("/v1/metrics")]
    calls = [
        metric
        for request in requests
        for rm in request.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == "otelhooks.tool.calls"
    ]
    assert calls
    assert {metric.sum.aggregation_temporality for metric in calls} == {temporality}
    exports = next(d for d in report.destinations if d.kind == "metric exports")
    assert (exports.destination, exports.sent, exports.delivered, exports.ok) == (
        f"{sink.endpoint}/v1/metrics",
        len(requests),
        len(requests),
        True,
    )


def test_grpc_metric_exports_are_counted_and_keep_the_exporters_temporality(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same over OTLP/gRPC: a real gRPC server on 127.0.0.1 keeping every metrics request.
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.metrics.v1 import (
        metrics_service_pb2,
        metrics_service_pb2_grpc,
    )

    received: list[Any] = []

    class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            received.append(request)
            return metrics_service_pb2.ExportMetricsServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
        oh = otelhooks.configure(
            service_name="export-test", set_global=False, structured_logging=False
        )
        with oh.operation("agent") as op, op.step() as step:
            step.run_tool("fs", "readFile", {"path": "a"}, lambda path: "text")
        report = oh.shutdown(10.0)
    finally:
        server.stop(1)
    temporalities = {
        metric.sum.aggregation_temporality
        for request in received
        for rm in request.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == "otelhooks.tool.calls"
    }
    assert temporalities == {1}  # AGGREGATION_TEMPORALITY_DELTA
    exports = next(d for d in report.destinations if d.kind == "metric exports")
    assert (exports.sent, exports.delivered, exports.ok) == (len(received), len(received), True)
    assert exports.sent >= 1
