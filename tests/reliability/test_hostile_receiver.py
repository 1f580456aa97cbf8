"""The OTLP receiver never acknowledges what it will not keep (issue 13, deliverable 5), in process
with a real HTTP server, a real observer queue held full by a slow hook, and the
``otelhooks.dropped`` counter read from the SDK's own metric reader."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otelhooks import AgentMetrics, EventLogServer, HookSpanProcessor, RingEventLog
from otelhooks import semconv as sc
from tests.reliability._serve_proc import INGEST, post_traces, tool_spans_json

TOKEN = "receiver-admin-token"


class Held:
    """A receiver whose only observer hook waits for ``gate``: its queue (256) fills up."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        metrics = self.metrics = AgentMetrics(MeterProvider(metric_readers=[self.reader]))
        self.processor = HookSpanProcessor(metrics=metrics, max_queue_size=256)
        self.gate = threading.Event()
        self.seen: list[str] = []

        def slow(event: Any) -> None:
            self.gate.wait(60)
            self.seen.append(event.spanId)

        self.processor.register(
            [{"id": "slow", "type": "afterToolCall", "handler": slow, "timeout": 120}]
        )
        self.server = EventLogServer(
            [RingEventLog()],
            span_processors=[self.processor],
            token=TOKEN,
            ingest_token=INGEST,
            owned=[self.processor],
        )
        self.server.app.ingest.admission_timeout_s = 0.3

    def dropped(self, reason: str) -> int:
        assert self.metrics.flush(10.0)
        data = self.reader.get_metrics_data()
        total = 0
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name != sc.METRIC_DROPPED:
                        continue
                    for point in metric.data.data_points:
                        attrs = dict(point.attributes or {})
                        if (
                            attrs.get(sc.ATTR_DROP_SOURCE) == "otlp_receiver"
                            and attrs.get(sc.ATTR_DROP_REASON) == reason
                        ):
                            total += int(point.value)
        return total


@pytest.fixture
def held() -> Iterator[Held]:
    receiver = Held()
    receiver.server.start()
    try:
        yield receiver
    finally:
        receiver.gate.set()
        receiver.server.stop()


def test_a_full_queue_is_a_partial_success_with_the_rejected_count(held: Held) -> None:
    response = post_traces(held.server.url, tool_spans_json(1000))
    assert response.status_code == 200
    rejected = int(response.json()["partialSuccess"]["rejectedSpans"])
    assert 0 < rejected < 1000
    assert held.dropped("queue_full") == rejected
    held.gate.set()
    assert held.processor.force_flush(30_000)
    assert len(held.seen) == 1000 - rejected  # every acknowledged span reached its hook


def test_a_queue_that_stays_full_is_a_retryable_503(held: Held) -> None:
    first = post_traces(held.server.url, tool_spans_json(1000))
    assert first.status_code == 200
    before = held.dropped("queue_full")
    started = time.monotonic()
    second = post_traces(held.server.url, tool_spans_json(10, start=1000))
    assert second.status_code == 503
    assert second.headers["retry-after"] == "1"
    assert second.json()["details"][0]["reason"] == "QUEUE_FULL"  # a google.rpc.Status
    assert time.monotonic() - started < 5
    assert held.dropped("queue_full") == before + 10


def test_spans_with_bad_ids_are_rejected_and_counted(held: Held) -> None:
    held.gate.set()
    body = tool_spans_json(3).replace(b'"spanId": "0000000000000002"', b'"spanId": "02"')
    response = post_traces(held.server.url, body)
    assert response.status_code == 200
    assert response.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert held.dropped("invalid") == 1
