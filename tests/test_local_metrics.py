"""In-process metric aggregation gives readers the same data the SDK's instruments would.

Each test drives the same measurements into :class:`AgentMetrics` twice — once through the SDK's
synchronous instruments (with otelhooks' views), once through a :class:`LocalMetricProducer`
attached to the reader — and compares what real ``InMemoryMetricReader``s collect.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.metrics import (
    AlwaysOnExemplarFilter,
    Counter,
    ExemplarFilter,
    Histogram,
    MeterProvider,
)
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricsData,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelhooks
from otelhooks import AgentMetrics, LocalMetricProducer, metric_views
from otelhooks import _semconv as sc
from otelhooks._metrics._local import CARDINALITY_LIMIT

DELTA = {Counter: AggregationTemporality.DELTA, Histogram: AggregationTemporality.DELTA}
RESOURCE = Resource.create({"service.name": "local-metrics-test"})


class Pair:
    """The same AgentMetrics API on the SDK path and on the local path, each with a reader."""

    def __init__(
        self,
        temporality: dict[type, AggregationTemporality] | None = None,
        exemplar_filter: ExemplarFilter | None = None,
    ) -> None:
        self.sdk_reader = InMemoryMetricReader(preferred_temporality=temporality)
        self.sdk = AgentMetrics(
            MeterProvider(
                resource=RESOURCE,
                metric_readers=[self.sdk_reader],
                views=metric_views(),
                # the SDK's default filter when None (the local side then keeps no exemplars,
                # and collect() compares points only)
                **({"exemplar_filter": exemplar_filter} if exemplar_filter else {}),
            ),
            sdk_instruments=True,
        )
        self.local_reader = InMemoryMetricReader(preferred_temporality=temporality)
        producer = LocalMetricProducer(RESOURCE, exemplar_filter=exemplar_filter)
        self.local = AgentMetrics(producer=producer)
        MeterProvider(resource=RESOURCE, metric_readers=[self.local_reader])
        producer.attach(self.local_reader)

    def apply(self, measure: Callable[[AgentMetrics], None]) -> None:
        measure(self.sdk)
        measure(self.local)

    def collect(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return (
            normalize(self.sdk_reader.get_metrics_data()),
            normalize(self.local_reader.get_metrics_data()),
        )


def normalize(data: MetricsData | None) -> dict[str, Any]:
    """Everything a backend sees, minus timestamps: name → (shape, {attributes → values})."""
    out: dict[str, Any] = {}
    if data is None:
        return out
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points: dict[Any, Any] = {}
                for p in metric.data.data_points:
                    attrs = tuple(sorted((k, str(v)) for k, v in (p.attributes or {}).items()))
                    if hasattr(p, "bucket_counts"):
                        points[attrs] = (
                            p.count,
                            round(p.sum, 9),
                            tuple(p.bucket_counts),
                            tuple(p.explicit_bounds),
                            p.min,
                            p.max,
                        )
                    else:
                        points[attrs] = p.value
                shape = (
                    type(metric.data).__name__,
                    metric.unit,
                    metric.description,
                    getattr(metric.data, "aggregation_temporality", None),
                    getattr(metric.data, "is_monotonic", None),
                    rm.resource.attributes.get("service.name"),
                    sm.scope.name,
                )
                if points:
                    out[metric.name] = (shape, points)
    return out


def typical_run(m: AgentMetrics) -> None:
    tool = {sc.GEN_AI_AGENT_NAME: "a", sc.GEN_AI_TOOL_NAME: "readFile", sc.ATTR_OUTCOME: "ok"}
    # the same set in another order must land in the same series
    reordered = {sc.ATTR_OUTCOME: "ok", sc.GEN_AI_TOOL_NAME: "readFile", sc.GEN_AI_AGENT_NAME: "a"}
    for i, seconds in enumerate((0.0004, 0.001, 0.0011, 0.3, 0.3, 2.5, 9000.0)):
        m.tool_calls.add(1, tool if i % 2 else reordered)
        m.tool_duration.record(seconds, tool if i % 2 else reordered)
    m.tool_calls.add(2, {sc.GEN_AI_TOOL_NAME: "writeFile", sc.ATTR_OUTCOME: "denied"})
    m.token_usage.record(1, {"gen_ai.token.type": "input"})
    m.token_usage.record(5_000_000, {"gen_ai.token.type": "input"})
    m.token_usage.record(64, {"gen_ai.token.type": "output"})
    m.operations.add(1)  # no attributes
    m.dropped.add(3, {"otelhooks.drop.source": "webhook", "tags": ["x", "y"]})  # a list value
    m.step_duration.record(0.25, {"list": [1, 2]})


def test_cumulative_data_equals_the_sdk_instruments() -> None:
    pair = Pair()
    pair.apply(typical_run)
    sdk, local = pair.collect()
    assert local == sdk
    assert local[sc.METRIC_TOOL_CALLS][1]  # not vacuous
    # a second collection with more measurements keeps cumulating, as the SDK does
    pair.apply(typical_run)
    sdk, local = pair.collect()
    assert local == sdk
    tool_points = local[sc.METRIC_EXECUTE_TOOL_DURATION][1]
    assert [p[0] for p in tool_points.values()] == [14]


def test_delta_data_equals_the_sdk_instruments_with_interval_min_and_max() -> None:
    pair = Pair(DELTA)
    pair.apply(typical_run)
    first = pair.collect()
    assert first[1] == first[0]
    pair.apply(lambda m: m.tool_duration.record(0.05, {sc.GEN_AI_TOOL_NAME: "readFile"}))
    sdk, local = pair.collect()
    assert local == sdk
    (point,) = local[sc.METRIC_EXECUTE_TOOL_DURATION][1].values()
    assert point[0] == 1
    assert point[4] == point[5] == 0.05  # min and max of this interval only
    assert set(local) == {sc.METRIC_EXECUTE_TOOL_DURATION}  # nothing new elsewhere


def test_negative_amounts_are_dropped_like_the_sdk(caplog: pytest.LogCaptureFixture) -> None:
    pair = Pair()
    pair.apply(lambda m: (m.tool_calls.add(-1), m.tool_duration.record(-0.5)))
    sdk, local = pair.collect()
    assert local == sdk == {}
    assert "non-negative" in caplog.text


def test_cardinality_beyond_the_limit_goes_to_the_overflow_series_like_the_sdk() -> None:
    pair = Pair()

    def many(m: AgentMetrics) -> None:
        for i in range(CARDINALITY_LIMIT + 150):
            m.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: f"tool-{i}"})

    pair.apply(many)
    sdk, local = pair.collect()
    assert local == sdk
    points = local[sc.METRIC_TOOL_CALLS][1]
    assert len(points) == CARDINALITY_LIMIT + 1  # the overflow series comes on top
    assert points[(("otel.metric.overflow", "True"),)] == 150
    assert sum(points.values()) == CARDINALITY_LIMIT + 150


def test_a_series_keeps_a_copy_of_what_was_measured_like_the_sdk() -> None:
    pair = Pair()

    def measure(m: AgentMetrics) -> None:
        plain: dict[str, Any] = {sc.GEN_AI_TOOL_NAME: "t"}
        listed: dict[str, Any] = {sc.GEN_AI_TOOL_NAME: "u", "tags": ["a", "b"]}
        for attrs in (plain, listed):
            m.tool_calls.add(1, attrs)
            m.tool_call.record(0.5, attrs)
            m.step_duration.record(0.1, attrs)
            # the caller reuses its dicts: the series must not see it
            attrs[sc.GEN_AI_TOOL_NAME] = "changed"
            attrs.setdefault("tags", []).append("c")

    pair.apply(measure)
    sdk, local = pair.collect()
    assert local == sdk
    assert set(local[sc.METRIC_TOOL_CALLS][1]) == {
        ((sc.GEN_AI_TOOL_NAME, "t"),),
        ((sc.GEN_AI_TOOL_NAME, "u"), ("tags", "('a', 'b')")),
    }


def test_a_counted_record_overflows_each_instrument_on_its_own_like_the_sdk() -> None:
    pair = Pair()

    def measure(m: AgentMetrics) -> None:
        for i in range(CARDINALITY_LIMIT):
            m.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: f"counted-{i}"})
        # the counter is full, the histogram is not: the set is new only to the histogram
        m.tool_call.record(0.5, {sc.GEN_AI_TOOL_NAME: "fresh", "tags": ["a", "b"]})
        for i in range(CARDINALITY_LIMIT):
            m.tool_duration.record(0.1, {sc.GEN_AI_TOOL_NAME: f"timed-{i}"})
        m.tool_call.record(0.7, {sc.GEN_AI_TOOL_NAME: "fresher"})  # both full now

    pair.apply(measure)
    sdk, local = pair.collect()
    assert local == sdk
    overflow = (("otel.metric.overflow", "True"),)
    assert local[sc.METRIC_TOOL_CALLS][1][overflow] == 2
    durations = local[sc.METRIC_EXECUTE_TOOL_DURATION][1]
    assert durations[((sc.GEN_AI_TOOL_NAME, "fresh"), ("tags", "('a', 'b')"))][0] == 1
    assert durations[overflow][0] == 2  # the last timed set, then the counted one


def test_a_cumulative_and_a_delta_reader_on_one_producer_each_get_their_view() -> None:
    producer = LocalMetricProducer(RESOURCE)
    metrics = AgentMetrics(producer=producer)
    cumulative, delta = InMemoryMetricReader(), InMemoryMetricReader(preferred_temporality=DELTA)
    MeterProvider(resource=RESOURCE, metric_readers=[cumulative, delta])
    producer.attach(cumulative)
    producer.attach(delta)

    def total(reader: InMemoryMetricReader) -> float:
        data = normalize(reader.get_metrics_data())
        return sum(data[sc.METRIC_TOOL_CALLS][1].values()) if data else 0

    metrics.tool_calls.add(5, {sc.GEN_AI_TOOL_NAME: "t"})
    assert total(cumulative) == 5
    metrics.tool_calls.add(2, {sc.GEN_AI_TOOL_NAME: "t"})
    assert total(delta) == 7  # everything since it attached
    assert total(delta) == 0  # nothing new
    metrics.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: "t"})
    assert total(cumulative) == 8
    assert total(delta) == 1


def test_concurrent_measurements_and_collections_lose_nothing() -> None:
    producer = LocalMetricProducer(RESOURCE)
    metrics = AgentMetrics(producer=producer)
    reader = InMemoryMetricReader()
    MeterProvider(resource=RESOURCE, metric_readers=[reader])
    producer.attach(reader)
    threads, per_thread = 4, 20_000
    stop = threading.Event()

    def measure(n: int) -> None:
        attrs = {sc.GEN_AI_TOOL_NAME: f"t{n % 2}"}
        for _ in range(per_thread):
            metrics.tool_calls.add(1, attrs)
            metrics.tool_duration.record(0.01, attrs)

    def collect() -> None:
        while not stop.is_set():
            reader.get_metrics_data()

    collector = threading.Thread(target=collect)
    collector.start()
    workers = [threading.Thread(target=measure, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    collector.join()
    data = normalize(reader.get_metrics_data())
    assert sum(data[sc.METRIC_TOOL_CALLS][1].values()) == threads * per_thread
    histogram = data[sc.METRIC_EXECUTE_TOOL_DURATION][1]
    assert sum(p[0] for p in histogram.values()) == threads * per_thread
    assert math.isclose(sum(p[1] for p in histogram.values()), threads * per_thread * 0.01)


def test_sdk_metrics_of_the_same_provider_are_kept_beside_the_local_ones() -> None:
    producer = LocalMetricProducer(RESOURCE)
    metrics = AgentMetrics(producer=producer)
    reader = InMemoryMetricReader()
    provider = MeterProvider(resource=RESOURCE, metric_readers=[reader])
    producer.attach(reader)
    provider.get_meter("app").create_counter("app.requests").add(4)
    provider.get_meter("otelhooks").create_counter("otelhooks.extra").add(1)
    metrics.operations.add(1, {"outcome": "ok"})
    data = reader.get_metrics_data()
    assert data is not None
    (rm,) = data.resource_metrics
    scopes = {sm.scope.name: [m.name for m in sm.metrics] for sm in rm.scope_metrics}
    assert scopes == {
        "app": ["app.requests"],
        "otelhooks": ["otelhooks.extra", sc.METRIC_OPERATIONS],
    }


def test_attach_refuses_a_reader_that_is_on_no_provider() -> None:
    with pytest.raises(ValueError, match="not registered on a MeterProvider"):
        LocalMetricProducer().attach(InMemoryMetricReader())


@pytest.mark.parametrize("sdk_metrics", [False, True])
def test_configure_exports_the_same_metrics_either_way(sdk_metrics: bool) -> None:

    reader = InMemoryMetricReader()
    oh = otelhooks.configure(
        service_name="either-way",
        span_exporters=[InMemorySpanExporter()],
        metric_readers=[reader],
        set_global=False,
        structured_logging=False,
        otlp=False,
        sdk_metrics=sdk_metrics,
    )
    try:
        with oh.tracer.operation("agent") as op, op.step() as step:
            for _ in range(3):
                with step.tool_call("fs", "readFile", {"path": "a"}) as call:
                    call.set_result("text")
        data = normalize(reader.get_metrics_data())
    finally:
        oh.shutdown(timeout_s=5.0)
    calls = data[sc.METRIC_TOOL_CALLS][1]
    assert sum(calls.values()) == 3
    assert [p[0] for p in data[sc.METRIC_EXECUTE_TOOL_DURATION][1].values()] == [3]
    assert {sc.METRIC_STEP_DURATION, sc.METRIC_INVOKE_AGENT_DURATION, sc.METRIC_OPERATIONS} <= set(
        data
    )
    assert {shape[-1] for shape, _ in data.values()} == {"otelhooks"}
    assert {shape[-2] for shape, _ in data.values()} == {"either-way"}


def test_each_reader_overflows_on_its_own() -> None:
    producer = LocalMetricProducer(RESOURCE)
    metrics = AgentMetrics(producer=producer)
    cumulative, delta = InMemoryMetricReader(), InMemoryMetricReader(preferred_temporality=DELTA)
    MeterProvider(resource=RESOURCE, metric_readers=[cumulative, delta])
    producer.attach(cumulative)
    producer.attach(delta)
    for i in range(CARDINALITY_LIMIT):
        metrics.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: f"tool-{i}"})
    cumulative.get_metrics_data()
    delta.get_metrics_data()
    metrics.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: "fresh"})
    # the delta reader's interval has room: it sees the new set as it is
    assert normalize(delta.get_metrics_data())[sc.METRIC_TOOL_CALLS][1] == {
        ((sc.GEN_AI_TOOL_NAME, "fresh"),): 1
    }
    # the cumulative reader is full: the new set goes to its overflow series
    points = normalize(cumulative.get_metrics_data())[sc.METRIC_TOOL_CALLS][1]
    assert points[(("otel.metric.overflow", "True"),)] == 1
    assert ((sc.GEN_AI_TOOL_NAME, "fresh"),) not in points


@pytest.mark.parametrize("exemplars", [False, True], ids=["plain", "sampled"])
def test_record_many_equals_a_record_each_like_the_sdk(exemplars: bool) -> None:
    # The observer worker counts a batch's run times per hook with record_many.
    pair = Pair(exemplar_filter=AlwaysOnExemplarFilter() if exemplars else None)
    attrs = {sc.ATTR_HOOK_ID: "watch", sc.ATTR_OUTCOME: "ok"}
    seconds = [0.0004, 0.001, 0.3, 0.0011, 9000.0]

    def many(m: AgentMetrics) -> None:
        m.hook_run.record_many(seconds, attrs)
        m.hook_run.record_many([], attrs)  # nothing: no series
        m.hook_run.record_many([0.5, -1.0], {sc.ATTR_HOOK_ID: "neg"})  # dropped like the SDK

    pair.apply(many)
    sdk, local = pair.collect()
    assert local == sdk
    counts = local[sc.METRIC_HOOK_INVOCATIONS][1]
    assert sorted(counts.values()) == [2, 5]
    assert [p[0] for p in local[sc.METRIC_HOOK_DURATION][1].values()] == [5, 1]
