"""``configure()`` exports over OTLP/HTTP through the SDK's exporters, each answer counted."""

from __future__ import annotations

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
