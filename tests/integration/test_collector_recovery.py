"""The collector is down when the agent starts, then comes up (a real rotel collector)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otelhooks import configure
from tests._realparts import OtlpHttpSink, reserved_port, rotel_collector_on


def total(reader: InMemoryMetricReader, name: str) -> int:
    data = reader.get_metrics_data()
    if data is None:
        return 0
    return int(
        sum(
            point.value  # type: ignore[union-attr]
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            for metric in sm.metrics
            if metric.name == name
            for point in metric.data.data_points
        )
    )


def run_agent(oh: object, operations: int) -> float:
    started = time.perf_counter()
    for i in range(operations):
        with oh.operation("agent", input=str(i)) as op, op.step() as step:  # type: ignore[attr-defined]
            step.run_tool("calc", "add", {"i": i}, lambda i: str(i))
    return time.perf_counter() - started


@pytest.mark.parametrize("queue", [10_000])
def test_spans_queued_while_the_collector_is_down_arrive_after_it_comes_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, queue: int
) -> None:
    with reserved_port() as http_port:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{http_port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        reader = InMemoryMetricReader()
        oh = configure(
            otlp=True,
            max_queue_size=queue,
            metric_readers=[reader],
            set_global=False,
            structured_logging=False,
        )
        elapsed = run_agent(oh, 50)  # 3 spans each: 150 spans, nobody listening
        assert elapsed < 2.0, "the agent waited on export"
        sink = OtlpHttpSink()
        try:
            with rotel_collector_on(sink.endpoint, tmp_path, http_port=http_port):
                assert oh.force_flush(30)
                assert sink.wait_for_count(150, timeout=30)
                oh.shutdown(5)  # while the collector is up: metrics flush at once
        finally:
            oh.shutdown(1)
            sink.stop()
        assert total(reader, "otelhooks.dropped") == 0


def test_spans_beyond_the_queue_are_counted_as_dropped_while_the_collector_is_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with reserved_port() as http_port:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{http_port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        reader = InMemoryMetricReader()
        oh = configure(
            otlp=True, max_queue_size=100, max_export_batch_size=50, metric_readers=[reader],
            set_global=False, structured_logging=False,
        )  # fmt: skip
        elapsed = run_agent(oh, 250)  # 750 spans into a 100-span queue, nobody listening
        assert elapsed < 5.0, "the agent waited on export"
        sink = OtlpHttpSink()
        try:
            with rotel_collector_on(sink.endpoint, tmp_path, http_port=http_port):
                oh.force_flush(30)
                time.sleep(1.0)  # rotel batches for 200 ms before forwarding
                dropped = total(reader, "otelhooks.dropped")
                arrived = len(sink.span_names)
                oh.shutdown(5)
        finally:
            oh.shutdown(1)
            sink.stop()
        assert dropped > 0
        assert arrived > 0
        assert arrived + dropped == 750
        assert (
            arrived >= 100 - 50
        )  # what fitted the queue (minus a batch lost to the outage) arrived
