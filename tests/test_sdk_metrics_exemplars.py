"""``configure(sdk_metrics=True)``: exemplars as the SDK's synchronous instruments give them.

The in-process aggregation with an exemplar filter must export what the SDK's instruments on a
``MeterProvider`` with :func:`metric_views` export (which is what ``sdk_metrics=True`` did before
it aggregated in process): the same points, and the same exemplars (value, filtered attributes,
span and trace ids), read through real ``InMemoryMetricReader``s.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import (
    AlwaysOffExemplarFilter,
    AlwaysOnExemplarFilter,
    ExemplarFilter,
    MeterProvider,
    TraceBasedExemplarFilter,
)
from opentelemetry.sdk.metrics._internal.exemplar import exemplar_reservoir
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

import otelhooks
from otelhooks import AgentMetrics, LocalMetricProducer, metric_views
from otelhooks import _semconv as sc
from otelhooks._metrics import MetricAttributes, exemplar_filter_from_env
from otelhooks._metrics import _local as local_metrics
from otelhooks._metrics._local import CARDINALITY_LIMIT
from tests.test_local_metrics import DELTA, RESOURCE, Pair, normalize, typical_run

TRACER = TracerProvider().get_tracer("exemplar-test")
UNSAMPLED = TracerProvider(sampler=ALWAYS_OFF).get_tracer("unsampled")


class ExemplarPair(Pair):
    """The SDK's instruments and the in-process ones with the same exemplar filter."""

    def __init__(self, exemplar_filter: ExemplarFilter, temporality: Any = None) -> None:
        super().__init__(temporality, exemplar_filter)

    def collect(self) -> tuple[dict[str, Any], dict[str, Any]]:
        sdk_data = self.sdk_reader.get_metrics_data()
        local_data = self.local_reader.get_metrics_data()
        return (
            {"points": normalize(sdk_data), "exemplars": exemplars(sdk_data)},
            {"points": normalize(local_data), "exemplars": exemplars(local_data)},
        )


def exemplars(data: MetricsData | None) -> dict[str, Any]:
    """name → {point attributes → [(value, filtered attributes, span id, trace id)]}."""
    out: dict[str, Any] = {}
    if data is None:
        return out
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                for p in metric.data.data_points:
                    attrs = tuple(sorted((k, str(v)) for k, v in (p.attributes or {}).items()))
                    kept = [
                        (e.value, e.filtered_attributes, e.span_id, e.trace_id) for e in p.exemplars
                    ]
                    if kept:
                        out.setdefault(metric.name, {})[attrs] = kept
    return out


def in_spans(m: AgentMetrics) -> None:
    """Measurements in no span, in two sampled spans (one nested), and in an unsampled one."""
    typical_run(m)
    tool = {sc.GEN_AI_AGENT_NAME: "a", sc.GEN_AI_TOOL_NAME: "readFile", sc.ATTR_OUTCOME: "ok"}
    with SPANS[0]:
        m.tool_calls.add(1, tool)
        for seconds in (0.005, 0.3, 0.31, 9000.0):
            m.tool_duration.record(seconds, tool)
        m.token_usage.record(70, {"gen_ai.token.type": "input"})
        with SPANS[1]:
            m.tool_duration.record(0.3, tool)  # the latest in its bucket wins
            m.operations.add(1)
            m.step_duration.record(0.25, {"list": [1, 2]})
    with SPANS[2]:
        m.tool_duration.record(0.011, tool)


# Set by each test: fresh use_span context managers (single-use) over its spans.
SPANS: list[Any] = []


@pytest.mark.parametrize("temporality", [None, DELTA], ids=["cumulative", "delta"])
@pytest.mark.parametrize(
    "exemplar_filter",
    [TraceBasedExemplarFilter(), AlwaysOnExemplarFilter(), AlwaysOffExemplarFilter()],
    ids=["trace_based", "always_on", "always_off"],
)
def test_exemplars_equal_the_sdk_instruments(
    exemplar_filter: ExemplarFilter, temporality: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A counter keeps a random pick of its offers (see the uniformity test below); here both
    # sides' dice always say "replace", so both keep the latest and can be compared.
    monkeypatch.setattr(exemplar_reservoir, "randrange", lambda start, stop: 0)
    monkeypatch.setattr(local_metrics, "random", lambda: 0.0)
    outer = TRACER.start_span("outer")
    inner = TRACER.start_span("inner", context=trace.set_span_in_context(outer))
    unsampled = UNSAMPLED.start_span("not sampled")
    pair = ExemplarPair(exemplar_filter, temporality)

    def measure(m: AgentMetrics) -> None:
        SPANS[:] = [trace.use_span(outer), trace.use_span(inner), trace.use_span(unsampled)]
        in_spans(m)

    pair.apply(measure)
    sdk, local = pair.collect()
    assert local == sdk
    if isinstance(exemplar_filter, TraceBasedExemplarFilter):
        durations = local["exemplars"][sc.METRIC_EXECUTE_TOOL_DURATION]
        (kept,) = durations.values()
        inner_id, outer_id = inner.get_span_context().span_id, outer.get_span_context().span_id
        # one per bucket, by bucket; the 0.3 bucket's latest is the inner span's
        assert [(e[0], e[2]) for e in kept] == [
            (0.005, outer_id),
            (0.3, inner_id),
            (9000.0, outer_id),
        ]
        assert all(e[1] == {} for e in kept)
    if isinstance(exemplar_filter, AlwaysOffExemplarFilter):
        assert local["exemplars"] == {}
    # the reservoirs restart with each collection, for cumulative readers too
    pair.apply(lambda m: m.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: "t"}))
    sdk, local = pair.collect()
    assert local == sdk
    assert sc.METRIC_EXECUTE_TOOL_DURATION not in local["exemplars"]


def test_an_overflowed_measurement_keeps_its_attributes_in_the_exemplar() -> None:
    pair = ExemplarPair(TraceBasedExemplarFilter())
    span = TRACER.start_span("s")

    def many(m: AgentMetrics) -> None:
        with trace.use_span(span):
            for i in range(CARDINALITY_LIMIT + 3):
                m.tool_duration.record(0.5, {sc.GEN_AI_TOOL_NAME: f"tool-{i}"})

    pair.apply(many)
    sdk, local = pair.collect()
    assert local == sdk
    overflow = local["exemplars"][sc.METRIC_EXECUTE_TOOL_DURATION][
        (("otel.metric.overflow", "True"),)
    ]
    assert overflow[0][1] == {sc.GEN_AI_TOOL_NAME: f"tool-{CARDINALITY_LIMIT + 2}"}


def test_a_counter_keeps_a_uniform_pick_of_its_offers() -> None:
    # The SDK's SimpleFixedSizeExemplarReservoir(1): each of n offers is kept with chance 1/n,
    # also across the folds a collection makes in between.
    producer = LocalMetricProducer(RESOURCE, exemplar_filter=AlwaysOnExemplarFilter())
    metrics = AgentMetrics(producer=producer)
    reader = InMemoryMetricReader()
    MeterProvider(resource=RESOURCE, metric_readers=[reader], views=metric_views())
    producer.attach(reader)
    other = InMemoryMetricReader()
    MeterProvider(resource=RESOURCE, metric_readers=[other])
    producer.attach(other)
    picks = {1: 0, 2: 0, 3: 0, 4: 0}
    for _ in range(4000):
        metrics.tool_calls.add(1)
        metrics.tool_calls.add(2)
        other.get_metrics_data()  # a fold between the offers
        metrics.tool_calls.add(3)
        metrics.tool_calls.add(4)
        data = reader.get_metrics_data()
        assert data is not None
        (point,) = data.resource_metrics[0].scope_metrics[0].metrics[0].data.data_points
        (exemplar,) = point.exemplars
        picks[int(exemplar.value)] += 1
    assert all(850 < n < 1150 for n in picks.values()), picks


def test_the_filter_comes_from_the_environment_as_the_sdk_takes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_METRICS_EXEMPLAR_FILTER", raising=False)
    assert isinstance(exemplar_filter_from_env(), TraceBasedExemplarFilter)
    monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", "always_on")
    assert isinstance(exemplar_filter_from_env(), AlwaysOnExemplarFilter)
    monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", "always_off")
    assert isinstance(exemplar_filter_from_env(), AlwaysOffExemplarFilter)
    monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", "sometimes")
    with pytest.raises(ValueError, match="Unknown exemplar filter"):
        exemplar_filter_from_env()


def run_tools(metrics: AgentMetrics, tracer_provider: TracerProvider) -> None:
    tracer = otelhooks.AgentTracer(tracer_provider=tracer_provider, metrics=metrics)
    with tracer.operation("agent") as op, op.step() as step:
        for name in ("readFile", "readFile", "writeFile"):
            with step.tool_call("fs", name, {"path": "a"}) as call:
                call.set_result("text")


@pytest.mark.parametrize("temporality", [None, DELTA], ids=["cumulative", "delta"])
def test_configure_sdk_metrics_exports_what_the_sdk_instruments_did(temporality: Any) -> None:
    """A real run: configure(sdk_metrics=True) against the SDK instruments it used before."""
    spans = InMemorySpanExporter()
    reader = InMemoryMetricReader(preferred_temporality=temporality)
    oh = otelhooks.configure(
        service_name="local-metrics-test",
        span_exporters=[spans],
        metric_readers=[reader],
        set_global=False,
        structured_logging=False,
        otlp=False,
        sdk_metrics=True,
    )
    before_spans = InMemorySpanExporter()
    before_provider = TracerProvider(resource=RESOURCE)
    before_provider.add_span_processor(SimpleSpanProcessor(before_spans))
    before_reader = InMemoryMetricReader(preferred_temporality=temporality)
    before = AgentMetrics(
        MeterProvider(resource=RESOURCE, metric_readers=[before_reader], views=metric_views()),
        sdk_instruments=True,
    )
    try:
        with oh.tracer.operation("agent") as op, op.step() as step:
            for name in ("readFile", "readFile", "writeFile"):
                with step.tool_call("fs", name, {"path": "a"}) as call:
                    call.set_result("text")
        run_tools(before, before_provider)
        oh.force_flush(5.0)
        now, then = reader.get_metrics_data(), before_reader.get_metrics_data()
    finally:
        oh.shutdown(timeout_s=5.0)

    def shape(data: MetricsData | None, exported: InMemorySpanExporter) -> Any:
        names = {s.context.span_id: s.name for s in exported.get_finished_spans()}
        points = normalize(data)
        for _shape, by_attrs in points.values():
            for attrs, value in list(by_attrs.items()):
                if isinstance(value, tuple):  # durations vary: keep count and buckets' layout
                    by_attrs[attrs] = (value[0], value[3])
        kept = {
            name: {
                attrs: sorted((names.get(e[2], "?"), e[1]) for e in found)
                for attrs, found in by_attrs.items()
            }
            for name, by_attrs in exemplars(data).items()
        }
        return points, kept

    assert shape(now, spans) == shape(then, before_spans)
    _, kept = shape(now, spans)
    tool_exemplars = kept[sc.METRIC_EXECUTE_TOOL_DURATION]
    assert sorted(len(v) for v in tool_exemplars.values()) == [1, 1]
    assert {n for v in tool_exemplars.values() for n, _ in v} == {"execute_tool readFile"} | {
        "execute_tool writeFile"
    }
    assert kept[sc.METRIC_TOOL_CALLS]


def counted_run(m: AgentMetrics, *, fused: bool) -> None:
    """The pairs a tool call, an operation and a hook record, in one call or two."""
    tool = {sc.GEN_AI_AGENT_NAME: "a", sc.GEN_AI_TOOL_NAME: "readFile", sc.ATTR_OUTCOME: "ok"}
    pairs = [
        (m.tool_call, m.tool_calls, m.tool_duration),
        (m.operation, m.operations, m.invoke_agent_duration),
        (m.hook_run, m.hook_invocations, m.hook_duration),
    ]
    for one, counter, histogram in pairs:
        for value, attrs in [
            (0.005, tool),
            (0.3, tool),
            (2.5, {"list": [1, 2]}),  # not hashable as it is
            (0.1, None),
            (-1.0, tool),  # counted, not timed, with the SDK's warning
        ]:
            if fused:
                one.record(value, attrs)
            else:
                counter.add(1, attrs)
                histogram.record(value, attrs)
    for i in range(CARDINALITY_LIMIT + 2):
        attrs = {sc.GEN_AI_TOOL_NAME: f"tool-{i}"}
        if fused:
            m.tool_call.record(0.5, attrs)
        else:
            m.tool_calls.add(1, attrs)
            m.tool_duration.record(0.5, attrs)


@pytest.mark.parametrize("exemplar_filter", [None, TraceBasedExemplarFilter()])
@pytest.mark.parametrize("temporality", [None, DELTA], ids=["cumulative", "delta"])
def test_one_call_for_a_count_and_a_duration_equals_two(
    exemplar_filter: ExemplarFilter | None, temporality: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_metrics, "random", lambda: 0.0)  # counters keep their latest
    span = TRACER.start_span("s")
    data = []
    for fused in (False, True):
        reader = InMemoryMetricReader(preferred_temporality=temporality)
        producer = LocalMetricProducer(RESOURCE, exemplar_filter=exemplar_filter)
        metrics = AgentMetrics(producer=producer)
        MeterProvider(resource=RESOURCE, metric_readers=[reader])
        producer.attach(reader)
        with trace.use_span(span):
            counted_run(metrics, fused=fused)
        collected = reader.get_metrics_data()
        data.append((normalize(collected), exemplars(collected)))
    assert data[1] == data[0]
    assert data[0][0][sc.METRIC_HOOK_DURATION]  # not vacuous
    assert bool(data[0][1]) is (exemplar_filter is not None)


def test_one_call_on_the_sdk_instruments_records_both() -> None:
    reader = InMemoryMetricReader()
    metrics = AgentMetrics(
        MeterProvider(resource=RESOURCE, metric_readers=[reader], views=metric_views()),
        sdk_instruments=True,
    )
    metrics.tool_call.record(0.3, {sc.GEN_AI_TOOL_NAME: "t"})
    data = normalize(reader.get_metrics_data())
    assert data[sc.METRIC_TOOL_CALLS][1] == {((sc.GEN_AI_TOOL_NAME, "t"),): 1}
    assert [p[0] for p in data[sc.METRIC_EXECUTE_TOOL_DURATION][1].values()] == [1]


def test_counted_takes_only_its_own_producers_instruments() -> None:
    mine, other = LocalMetricProducer(RESOURCE), LocalMetricProducer(RESOURCE)
    with pytest.raises(ValueError, match="instruments of this producer"):
        mine.counted(other.counter("c"), mine.histogram("h", bounds=(1,)))


def test_metric_attributes_measure_like_the_dict_they_were_built_from() -> None:
    frozen = MetricAttributes({sc.GEN_AI_TOOL_NAME: "t", "list": [1, 2]})
    with pytest.raises(TypeError, match="cannot change"):
        frozen[sc.ATTR_OUTCOME] = "ok"
    with pytest.raises(TypeError, match="cannot change"):
        frozen.update({})
    assert frozen == {sc.GEN_AI_TOOL_NAME: "t", "list": [1, 2]}
    data = []
    for attrs in (dict(frozen), frozen):
        reader = InMemoryMetricReader()
        producer = LocalMetricProducer(RESOURCE)
        metrics = AgentMetrics(producer=producer)
        MeterProvider(resource=RESOURCE, metric_readers=[reader])
        producer.attach(reader)
        metrics.tool_call.record(0.3, attrs)
        metrics.tool_calls.add(2, attrs)
        metrics.tool_duration.record(0.01, attrs)
        # the same set as a plain dict in another order lands in the same series
        metrics.tool_calls.add(1, {"list": [1, 2], sc.GEN_AI_TOOL_NAME: "t"})
        data.append(normalize(reader.get_metrics_data()))
    assert data[1] == data[0]
    assert list(data[0][sc.METRIC_TOOL_CALLS][1].values()) == [4]
