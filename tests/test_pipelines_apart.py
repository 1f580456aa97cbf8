"""Two ``configure()`` pipelines in one process keep their webhook deliveries and metrics apart.

Each pipeline's notification webhooks go through its own deliverer (its queue, its outbox, its
metrics), whichever pipeline was configured last. Real loopback HTTP servers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelhooks
from otelhooks import semconv as sc
from tests._webhook_server import WebhookServer, webhook_server


def pipeline(name: str, server: WebhookServer, tmp_path: Path) -> tuple[Any, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    oh = otelhooks.configure(
        service_name=name,
        hooks=[
            {"id": f"{name}-hook", "type": "afterToolCall", "webhook": {"url": server.url + "/n"}}
        ],
        span_exporters=[InMemorySpanExporter()],
        metric_readers=[reader],
        outbox_path=tmp_path / f"{name}.sqlite3",
        set_global=False,
        structured_logging=False,
        otlp=False,
    )
    return oh, reader


def hook_ids(reader: InMemoryMetricReader) -> set[str]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        str((point.attributes or {})[sc.ATTR_HOOK_ID])
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == sc.METRIC_HOOK_INVOCATIONS
        for point in metric.data.data_points
    }


def test_each_pipeline_delivers_through_its_own_deliverer(tmp_path: Path) -> None:
    with webhook_server() as first_server, webhook_server() as second_server:
        first, first_reader = pipeline("first", first_server, tmp_path)
        second, second_reader = pipeline("second", second_server, tmp_path)  # configured last
        try:
            for oh in (first, second):
                with oh.tracer.operation("agent") as op, op.step() as step:
                    step.run_tool("fs", "read", {"p": "a"}, lambda p: "text")
            first_server.wait_for("/n")
            second_server.wait_for("/n")
            first.shutdown(timeout_s=5.0)
            assert hook_ids(first_reader) == {"first-hook"}
            # the first pipeline is shut down; the second still delivers
            with second.tracer.operation("agent") as op, op.step() as step:
                step.run_tool("fs", "read", {"p": "b"}, lambda p: "text")
            second_server.wait_for("/n", count=2)
            assert second.webhooks is not None
            assert second.webhooks.flush(5.0)
            assert second.metrics.flush(5.0)
            assert hook_ids(second_reader) == {"second-hook"}
            assert len(first_server.requests("/n")) == 1
        finally:
            first.shutdown(timeout_s=5.0)
            second.shutdown(timeout_s=5.0)
