"""A deliverer shut down while its endpoint is down counts every event it gives up on: those
still queued, and those already taken off the queue (waiting for a slot, or being retried)."""

from __future__ import annotations

import gc
import socket
import time

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otelhooks import AgentMetrics, HookEvent, WebhookConfig, WebhookDeliverer
from tests._webhook_server import Reply, webhook_server


def _dropped(reader: InMemoryMetricReader) -> dict[str, int]:
    out: dict[str, int] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == "otelhooks.dropped":
                    for point in metric.data.data_points:
                        reason = str((point.attributes or {})["otelhooks.drop.reason"])
                        out[reason] = out.get(reason, 0) + int(point.value)
    return out


def test_events_held_at_shutdown_are_counted_as_dropped() -> None:
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    deliverer = WebhookDeliverer(metrics=metrics, max_queue_size=1000)
    with socket.socket() as dead:  # bound, never listening: every connection is refused
        dead.bind(("127.0.0.1", 0))
        config = WebhookConfig(url=f"http://127.0.0.1:{dead.getsockname()[1]}/x")
        for i in range(200):
            event = HookEvent(event="after_tool_call", eventId=f"e{i}")
            assert deliverer.enqueue("dead", "afterToolCall", config, event)
        deadline = time.monotonic() + 30
        while deliverer._worker.queued and time.monotonic() < deadline:
            time.sleep(0.01)  # the worker takes them all (one batch), 8 go in flight
        deliverer.shutdown(timeout_s=0.2)
    assert metrics.flush(5.0)
    assert sum(_dropped(reader).values()) == 200
    assert _dropped(reader)["shutdown"] == 200


def test_a_slow_delivery_is_cancelled_at_shutdown_and_a_second_shutdown_does_nothing(
    recwarn: pytest.WarningsRecorder,
) -> None:
    # garbage of earlier tests (another client's abandoned connect coroutine) warns when
    # collected: collect it first, so only what this test leaves behind is counted
    gc.collect()
    recwarn.clear()
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
    deliverer = WebhookDeliverer(metrics=metrics)
    with webhook_server() as server:
        server.routes["/slow"] = Reply(status=204, delay_s=2.0)
        config = WebhookConfig(url=server.url + "/slow")
        assert deliverer.enqueue("slow", "afterToolCall", config, HookEvent(event="gateway_start"))
        server.wait_for("/slow")  # in flight now, answering in 2 s
        started = time.monotonic()
        deliverer.shutdown(timeout_s=0.2)
        deliverer.shutdown(timeout_s=0.2)  # e.g. OtelHooks.shutdown after the owner's own
        assert time.monotonic() - started < 1.5
    gc.collect()  # a task left pending on the stopped loop would warn when collected
    assert [str(w.message) for w in recwarn if "never awaited" in str(w.message)] == []
    assert metrics.flush(5.0)
    assert _dropped(reader) == {"shutdown": 1}
