"""``AgentMetrics`` on a user's own SDK ``MeterProvider``: aggregated in process wherever that
exports what the provider's SDK instruments would, the SDK's instruments wherever the provider's
views or readers make them export something else.

Each comparison builds two providers alike (readers, views, exemplar filter, resource): one with
``AgentMetrics(provider, sdk_instruments=True)`` (the SDK's instruments, the reference), one
with ``AgentMetrics(provider)``; it drives the same measurements into both and compares what
real ``InMemoryMetricReader``s collect: points, exemplars, names, units, descriptions, bounds,
temporality, resource and scope.
"""

from __future__ import annotations

import gc
import logging
import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.sdk.metrics import (
    AlwaysOffExemplarFilter,
    AlwaysOnExemplarFilter,
    Counter,
    ExemplarFilter,
    Histogram,
    MeterProvider,
    TraceBasedExemplarFilter,
)
from opentelemetry.sdk.metrics._internal.exemplar import exemplar_reservoir
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.view import (
    DropAggregation,
    ExplicitBucketHistogramAggregation,
    ExponentialBucketHistogramAggregation,
    View,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelhooks
from otelhooks import AgentMetrics, metric_views
from otelhooks import _semconv as sc
from otelhooks._metrics import _local as local_metrics
from otelhooks._metrics import _provider
from otelhooks._metrics._local import LocalCounter, LocalHistogram
from tests.test_local_metrics import DELTA, RESOURCE, typical_run
from tests.test_sdk_metrics_exemplars import SPANS, TRACER, UNSAMPLED, exemplars, in_spans

COUNTERS = ("operations", "errors", "tool_calls", "compactions", "tokens_saved")
COUNTERS += ("human_interventions", "hook_invocations", "dropped")
HISTOGRAMS = ("invoke_agent_duration", "step_duration", "operation_duration", "token_usage")
HISTOGRAMS += ("tool_duration", "hook_duration")


def both_readers() -> list[MetricReader]:
    """A cumulative and a delta reader on one provider."""
    return [InMemoryMetricReader(), InMemoryMetricReader(preferred_temporality=DELTA)]


class ProviderPair:
    """Two providers alike, the SDK's instruments on one and ``AgentMetrics(provider)``'s on
    the other."""

    def __init__(
        self,
        views: Sequence[View] = (),
        exemplar_filter: ExemplarFilter | None = None,
        readers: Callable[[], list[MetricReader]] = both_readers,
    ) -> None:
        def provider(rs: list[MetricReader]) -> MeterProvider:
            return MeterProvider(
                resource=RESOURCE,
                metric_readers=rs,
                views=list(views),
                shutdown_on_exit=False,
                # None: the SDK's default, from OTEL_METRICS_EXEMPLAR_FILTER (trace-based)
                **({"exemplar_filter": exemplar_filter} if exemplar_filter else {}),
            )

        self.sdk_readers, self.fast_readers = readers(), readers()
        self.sdk_provider = provider(self.sdk_readers)
        self.sdk = AgentMetrics(self.sdk_provider, sdk_instruments=True)
        self.fast_provider = provider(self.fast_readers)
        self.fast = AgentMetrics(self.fast_provider)

    def apply(self, measure: Callable[[AgentMetrics], None]) -> None:
        measure(self.sdk)
        measure(self.fast)

    def add_reader(self, make: Callable[[], MetricReader]) -> None:
        for provider, readers in (
            (self.sdk_provider, self.sdk_readers),
            (self.fast_provider, self.fast_readers),
        ):
            reader = make()
            provider.add_metric_reader(reader)
            readers.append(reader)

    def collect(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Per reader: (the SDK's export, the other's)."""
        return [
            (seen(sdk.get_metrics_data()), seen(fast.get_metrics_data()))  # type: ignore[attr-defined]
            for sdk, fast in zip(self.sdk_readers, self.fast_readers, strict=True)
        ]

    def assert_equal(self) -> list[dict[str, Any]]:
        """Both sides' exports equal, reader by reader; the exports."""
        collected = self.collect()
        for sdk, fast in collected:
            assert fast == sdk
        return [sdk for sdk, _ in collected]


def seen(data: MetricsData | None) -> dict[str, Any]:
    """What a backend sees, minus timestamps: points and exemplars by metric name."""
    return {"points": points(data), "exemplars": exemplars(data)}


def points(data: MetricsData | None) -> dict[str, Any]:
    """name → (shape, {attributes → values}), exponential histograms included."""
    out: dict[str, Any] = {}
    if data is None:
        return out
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                values: dict[Any, Any] = {}
                for p in metric.data.data_points:
                    attrs = tuple(sorted((k, str(v)) for k, v in (p.attributes or {}).items()))
                    if hasattr(p, "bucket_counts"):
                        values[attrs] = (
                            p.count,
                            round(p.sum, 9),
                            tuple(p.bucket_counts),
                            tuple(p.explicit_bounds),
                            p.min,
                            p.max,
                        )
                    elif hasattr(p, "positive"):
                        values[attrs] = (
                            p.count,
                            round(p.sum, 9),
                            p.scale,
                            p.zero_count,
                            p.positive.offset,
                            tuple(p.positive.bucket_counts),
                        )
                    else:
                        values[attrs] = p.value
                shape = (
                    type(metric.data).__name__,
                    metric.unit,
                    metric.description,
                    getattr(metric.data, "aggregation_temporality", None),
                    getattr(metric.data, "is_monotonic", None),
                    dict(rm.resource.attributes),
                    (sm.scope.name, sm.scope.version),
                )
                assert metric.name not in out, f"{metric.name} twice"
                out[metric.name] = (shape, values)
    return out


def local(m: AgentMetrics) -> set[str]:
    """The names of ``m``'s instruments that aggregate in process."""
    return {
        name
        for name in (*COUNTERS, *HISTOGRAMS)
        if isinstance(getattr(m, name), (LocalCounter, LocalHistogram))
    }


@pytest.fixture
def same_dice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counters keep a random pick of their offers: here both sides keep the latest."""
    monkeypatch.setattr(exemplar_reservoir, "randrange", lambda start, stop: 0)
    monkeypatch.setattr(local_metrics, "random", lambda: 0.0)


def spanned() -> Callable[[AgentMetrics], None]:
    """``in_spans`` (measurements in no span, sampled spans and an unsampled one), measured the
    same on both sides."""
    outer = TRACER.start_span("outer")
    inner = TRACER.start_span("inner", context=trace.set_span_in_context(outer))
    unsampled = UNSAMPLED.start_span("not sampled")

    def measure(m: AgentMetrics) -> None:
        SPANS[:] = [trace.use_span(outer), trace.use_span(inner), trace.use_span(unsampled)]
        in_spans(m)
        m.tool_call.record(0.2, {sc.GEN_AI_TOOL_NAME: "fused"})
        m.hook_run.record(0.01, {"otelhooks.hook.name": "h"})

    return measure


CUSTOM_BOUNDS = [
    View(
        instrument_name=sc.METRIC_EXECUTE_TOOL_DURATION,
        aggregation=ExplicitBucketHistogramAggregation((0.01, 0.1, 1.0)),
    ),
    View(instrument_name="otelhooks.*", meter_name="otelhooks"),  # matches, changes nothing
]


@pytest.mark.usefixtures("same_dice")
@pytest.mark.parametrize(
    "views",
    [metric_views(), [], CUSTOM_BOUNDS],
    ids=["metric_views", "no_views", "custom_bounds"],
)
@pytest.mark.parametrize(
    "exemplar_filter",
    [None, TraceBasedExemplarFilter(), AlwaysOnExemplarFilter(), AlwaysOffExemplarFilter()],
    ids=["default", "trace_based", "always_on", "always_off"],
)
def test_a_user_provider_aggregates_in_process_and_exports_what_the_sdk_does(
    views: list[View], exemplar_filter: ExemplarFilter | None
) -> None:
    pair = ProviderPair(views, exemplar_filter)
    assert local(pair.fast) == {*COUNTERS, *HISTOGRAMS}
    assert local(pair.sdk) == set()
    measure = spanned()
    pair.apply(measure)
    first = pair.assert_equal()
    tool_points = first[0]["points"][sc.METRIC_EXECUTE_TOOL_DURATION]
    assert tool_points[1]  # not vacuous
    if not views:  # the SDK's default boundaries, as the SDK gives a histogram with no view
        sdk_default = (0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000)
        assert next(iter(tool_points[1].values()))[3] == sdk_default
    if views is CUSTOM_BOUNDS:
        assert next(iter(tool_points[1].values()))[3] == (0.01, 0.1, 1.0)
    if not isinstance(exemplar_filter, AlwaysOffExemplarFilter):
        assert first[0]["exemplars"]
    # more, and again: cumulative keeps adding up, delta starts over, reservoirs restart.
    # (Measurements outside a span come first: the SDK's ExemplarBucket keeps the span and
    # trace ids of an earlier offer when a later one in the same bucket has no span.)
    pair.apply(typical_run)
    pair.apply(measure)
    pair.assert_equal()
    pair.apply(lambda m: m.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: "t"}))
    cumulative, delta = pair.assert_equal()
    assert set(delta["points"]) == {sc.METRIC_TOOL_CALLS}
    assert len(cumulative["points"]) > 1


@pytest.mark.usefixtures("same_dice")
@pytest.mark.parametrize(
    ("views", "readers", "sdk_ones", "effect"),
    [
        pytest.param(
            [*metric_views(), View(instrument_name=sc.METRIC_TOOL_CALLS, name="agent.tool.calls")],
            both_readers,
            {"tool_calls"},
            lambda e: "agent.tool.calls" in e and sc.METRIC_TOOL_CALLS not in e,
            id="renamed",
        ),
        pytest.param(
            [View(instrument_name=sc.METRIC_EXECUTE_TOOL_DURATION, aggregation=DropAggregation())],
            both_readers,
            {"tool_duration"},
            lambda e: sc.METRIC_EXECUTE_TOOL_DURATION not in e and sc.METRIC_TOOL_CALLS in e,
            id="dropped",
        ),
        pytest.param(
            [View(instrument_name=sc.METRIC_TOOL_CALLS, attribute_keys={sc.GEN_AI_TOOL_NAME})],
            both_readers,
            {"tool_calls"},
            lambda e: all(
                [k for k, _ in attrs] in ([sc.GEN_AI_TOOL_NAME], [])
                for attrs in e[sc.METRIC_TOOL_CALLS][1]
            ),
            id="attribute_keys",
        ),
        pytest.param(
            [View(instrument_name=sc.METRIC_TOOL_CALLS, description="Tools.")],
            both_readers,
            {"tool_calls"},
            lambda e: e[sc.METRIC_TOOL_CALLS][0][2] == "Tools.",
            id="description",
        ),
        pytest.param(
            # two views match: the SDK makes two streams (and warns of the conflict)
            [View(instrument_name="*", aggregation=DropAggregation()), View(instrument_name="*")],
            both_readers,
            {*COUNTERS, *HISTOGRAMS},
            lambda e: sc.METRIC_TOOL_CALLS in e,
            id="two_views",
        ),
        pytest.param(
            [],
            lambda: [
                InMemoryMetricReader(
                    preferred_aggregation={Histogram: ExponentialBucketHistogramAggregation()}
                )
            ],
            set(HISTOGRAMS),
            lambda e: e[sc.METRIC_EXECUTE_TOOL_DURATION][0][0] == "ExponentialHistogram",
            id="exponential_preferred",
        ),
        pytest.param(
            [],
            lambda: [InMemoryMetricReader(cardinality_limits={Counter: 3})],
            set(COUNTERS),
            lambda e: (("otel.metric.overflow", "True"),) in e[sc.METRIC_DROPPED][1],
            id="reader_cardinality_limit",
        ),
        pytest.param(
            [View(instrument_name=sc.METRIC_DROPPED, aggregation_cardinality_limit=1)],
            both_readers,
            {"dropped"},
            lambda e: len(e[sc.METRIC_DROPPED][1]) == 2,  # one set and the overflow
            id="view_cardinality_limit",
        ),
        pytest.param(
            [],
            lambda: [
                InMemoryMetricReader(),
                InMemoryMetricReader(
                    preferred_aggregation={Histogram: ExplicitBucketHistogramAggregation((1, 2))}
                ),
            ],
            set(HISTOGRAMS),
            lambda e: True,
            id="readers_disagree_on_bounds",
        ),
    ],
)
def test_what_local_aggregation_cannot_reproduce_takes_the_sdk_instrument(
    views: list[View],
    readers: Callable[[], list[MetricReader]],
    sdk_ones: set[str],
    effect: Callable[[dict[str, Any]], bool],
) -> None:
    pair = ProviderPair(views, readers=readers)
    assert local(pair.fast) == {*COUNTERS, *HISTOGRAMS} - sdk_ones
    in_spans = spanned()

    def measure(m: AgentMetrics) -> None:
        in_spans(m)
        for reason in ("full", "closed", "slow"):
            m.dropped.add(1, {"otelhooks.drop.source": "s", "otelhooks.drop.reason": reason})

    pair.apply(measure)
    exported = pair.assert_equal()
    assert effect(exported[0]["points"])


def test_with_metric_views_an_exponential_preference_changes_nothing() -> None:
    # the views' explicit buckets win over a reader's preferred aggregation, in the SDK too
    pair = ProviderPair(
        metric_views(),
        readers=lambda: [
            InMemoryMetricReader(
                preferred_aggregation={Histogram: ExponentialBucketHistogramAggregation()}
            )
        ],
    )
    assert local(pair.fast) == {*COUNTERS, *HISTOGRAMS}
    pair.apply(typical_run)
    (exported,) = pair.assert_equal()
    assert exported["points"][sc.METRIC_EXECUTE_TOOL_DURATION][0][0] == "Histogram"


def otlp_reader() -> MetricReader:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    # never exports: no interval, and the provider is never shut down
    exporter = OTLPMetricExporter(endpoint="http://127.0.0.1:9/v1/metrics")
    return PeriodicExportingMetricReader(exporter, export_interval_millis=math.inf)


def test_the_otlp_exporters_histogram_aggregation_variable_is_followed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    variable = "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION"
    monkeypatch.delenv(variable, raising=False)
    # unset, the OTLP exporter prefers explicit buckets with the SDK's default boundaries
    plain = MeterProvider(metric_readers=[otlp_reader()], shutdown_on_exit=False)
    assert local(AgentMetrics(plain)) == {*COUNTERS, *HISTOGRAMS}
    monkeypatch.setenv(variable, "base2_exponential_bucket_histogram")
    exponential = MeterProvider(metric_readers=[otlp_reader()], shutdown_on_exit=False)
    assert local(AgentMetrics(exponential)) == set(COUNTERS)
    with_views = MeterProvider(
        metric_readers=[otlp_reader()], views=metric_views(), shutdown_on_exit=False
    )
    assert local(AgentMetrics(with_views)) == {*COUNTERS, *HISTOGRAMS}


@pytest.mark.usefixtures("same_dice")
def test_two_agent_metrics_on_one_provider_share_their_instruments() -> None:
    pair = ProviderPair(metric_views())
    second_sdk = AgentMetrics(pair.sdk_provider, sdk_instruments=True)
    second = AgentMetrics(pair.fast_provider)
    assert second.tool_calls is pair.fast.tool_calls
    assert second.tool_duration is pair.fast.tool_duration
    attrs = {sc.GEN_AI_TOOL_NAME: "readFile"}
    for first, other in ((pair.sdk, second_sdk), (pair.fast, second)):
        first.tool_call.record(0.3, attrs)
        other.tool_call.record(0.5, attrs)
        other.tool_calls.add(1, attrs)
    exported = pair.assert_equal()[0]["points"]
    assert exported[sc.METRIC_TOOL_CALLS][1] == {((sc.GEN_AI_TOOL_NAME, "readFile"),): 3}
    assert [p[0] for p in exported[sc.METRIC_EXECUTE_TOOL_DURATION][1].values()] == [2]


def test_the_users_own_instruments_export_alongside() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(
        resource=RESOURCE, metric_readers=[reader], views=metric_views(), shutdown_on_exit=False
    )
    agent = AgentMetrics(provider)
    provider.get_meter("app").create_counter("app.requests").add(4)
    own = provider.get_meter("otelhooks")
    own.create_counter("otelhooks.extra").add(1)
    own.create_histogram("otelhooks.extra.seconds", unit="s").record(0.5)
    agent.operations.add(1, {"outcome": "ok"})
    agent.tool_call.record(0.3)
    data = reader.get_metrics_data()
    assert data is not None
    (rm,) = data.resource_metrics
    assert rm.resource is provider._sdk_config.resource
    scopes = {sm.scope.name: {m.name for m in sm.metrics} for sm in rm.scope_metrics}
    assert scopes == {
        "app": {"app.requests"},
        "otelhooks": {
            "otelhooks.extra",
            "otelhooks.extra.seconds",
            sc.METRIC_OPERATIONS,
            sc.METRIC_TOOL_CALLS,
            sc.METRIC_EXECUTE_TOOL_DURATION,
        },
    }
    # with nothing of the SDK's to collect, the provider's resource and the otelhooks scope
    quiet = InMemoryMetricReader()
    alone = MeterProvider(resource=RESOURCE, metric_readers=[quiet], shutdown_on_exit=False)
    AgentMetrics(alone).errors.add(1)
    data = quiet.get_metrics_data()
    assert data is not None
    (rm,) = data.resource_metrics
    assert rm.resource is alone._sdk_config.resource
    assert [(sm.scope.name, [m.name for m in sm.metrics]) for sm in rm.scope_metrics] == [
        ("otelhooks", [sc.METRIC_ERRORS])
    ]


@pytest.mark.usefixtures("same_dice")
@pytest.mark.parametrize("temporality", [None, DELTA], ids=["cumulative", "delta"])
def test_readers_added_later_count_from_then_on_and_removed_ones_are_let_go(
    temporality: Any,
) -> None:
    pair = ProviderPair(metric_views(), readers=lambda: [InMemoryMetricReader()])
    measure = spanned()
    pair.apply(measure)
    pair.add_reader(lambda: InMemoryMetricReader(preferred_temporality=temporality))
    pair.apply(lambda m: m.tool_call.record(0.3, {sc.GEN_AI_TOOL_NAME: "later"}))
    old, new = pair.assert_equal()
    assert set(new["points"]) == {sc.METRIC_TOOL_CALLS, sc.METRIC_EXECUTE_TOOL_DURATION}
    assert new["points"][sc.METRIC_TOOL_CALLS][1] == {((sc.GEN_AI_TOOL_NAME, "later"),): 1}
    assert len(old["points"]) > 2
    pair.apply(measure)
    pair.assert_equal()
    producer = pair.fast.tool_calls  # its tables, one per delta or later reader
    assert isinstance(producer, LocalCounter)
    assert len(producer.pending) == 1
    for provider, readers in (
        (pair.sdk_provider, pair.sdk_readers),
        (pair.fast_provider, pair.fast_readers),
    ):
        provider.remove_metric_reader(readers.pop())
    assert producer.pending == {}
    assert producer.reservoirs.keys() == {id(pair.fast_readers[0])}
    pair.apply(measure)
    pair.assert_equal()


def test_a_reader_added_later_that_prefers_other_histograms_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)
    assert local(AgentMetrics(provider)) == {*COUNTERS, *HISTOGRAMS}
    with caplog.at_level(logging.WARNING, logger=_provider.__name__):
        provider.add_metric_reader(
            InMemoryMetricReader(
                preferred_aggregation={Histogram: ExponentialBucketHistogramAggregation()}
            )
        )
    assert "aggregated in process as the provider's other readers do" in caplog.text
    assert sc.METRIC_EXECUTE_TOOL_DURATION in caplog.text
    assert sc.METRIC_TOOL_CALLS not in caplog.text


def test_the_first_agent_metrics_on_a_provider_decides(caplog: pytest.LogCaptureFixture) -> None:
    sdk_first = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)
    assert local(AgentMetrics(sdk_first, sdk_instruments=True)) == set()
    assert local(AgentMetrics(sdk_first)) == set()  # one stream per name, the SDK's
    local_first = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)
    assert local(AgentMetrics(local_first)) == {*COUNTERS, *HISTOGRAMS}
    with caplog.at_level(logging.WARNING, logger=_provider.__name__):
        assert local(AgentMetrics(local_first, sdk_instruments=True)) == set()
    assert "as two streams of each name" in caplog.text
    with pytest.raises(ValueError, match="not a producer"):
        AgentMetrics(producer=otelhooks.LocalMetricProducer(), sdk_instruments=True)


def test_a_shut_down_or_disabled_provider_keeps_the_sdk_instruments(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _provider._logged.clear()
    shut = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)
    shut.shutdown()
    with caplog.at_level(logging.DEBUG, logger=_provider.__name__):
        assert local(AgentMetrics(shut)) == set()
        assert local(AgentMetrics(MeterProvider(shutdown_on_exit=False))) == {
            *COUNTERS,
            *HISTOGRAMS,
        }
    assert "the MeterProvider is shut down" in caplog.text
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert local(AgentMetrics(MeterProvider(shutdown_on_exit=False))) == set()


def test_sdk_internals_gone_mean_the_sdk_instruments_not_an_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _provider._logged.clear()
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    monkeypatch.delattr(provider, "_sdk_config")
    with caplog.at_level(logging.DEBUG, logger=_provider.__name__):
        agent = AgentMetrics(provider)
    assert local(agent) == set()
    assert "the SDK's MeterProvider changed" in caplog.text
    agent.tool_call.record(0.3)
    assert points(reader.get_metrics_data())[sc.METRIC_TOOL_CALLS][1] == {(): 1}
    monkeypatch.setattr(_provider, "_INTERNALS", False)
    assert local(AgentMetrics(MeterProvider(shutdown_on_exit=False))) == set()
    broken = MeterProvider(shutdown_on_exit=False)
    monkeypatch.setattr(_provider, "_INTERNALS", True)
    monkeypatch.setattr(broken, "get_meter", None)  # not callable: an unexpected error
    assert _provider.instrument_source(broken) is None


def test_the_global_provider_is_used_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    monkeypatch.setattr(otel_metrics, "get_meter_provider", lambda: provider)
    agent = AgentMetrics()
    assert local(agent) == {*COUNTERS, *HISTOGRAMS}
    assert AgentMetrics(provider).tool_calls is agent.tool_calls
    agent.tool_calls.add(2)
    assert points(reader.get_metrics_data())[sc.METRIC_TOOL_CALLS][1] == {(): 2}


def test_configure_shares_its_instruments_with_agent_metrics_on_its_provider() -> None:
    reader = InMemoryMetricReader()
    oh = otelhooks.configure(
        service_name="shared",
        span_exporters=[InMemorySpanExporter()],
        metric_readers=[reader],
        set_global=False,
        structured_logging=False,
        otlp=False,
    )
    try:
        extra = AgentMetrics(oh.meter_provider)
        assert extra.tool_calls is oh.metrics.tool_calls
        with (
            oh.tracer.operation("agent") as op,
            op.step() as step,
            step.tool_call("fs", "readFile", {"path": "a"}) as call,
        ):
            call.set_result("text")
        extra.tool_calls.add(1, {sc.GEN_AI_TOOL_NAME: "other"})
        exported = points(reader.get_metrics_data())  # asserts each name comes once
    finally:
        oh.shutdown(timeout_s=5.0)
    assert sum(exported[sc.METRIC_TOOL_CALLS][1].values()) == 2


def test_a_dropped_provider_is_let_go() -> None:
    provider = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)
    agent = AgentMetrics(provider)
    agent.tool_call.record(0.3)
    gone = weakref.ref(provider)
    del provider
    gc.collect()
    assert gone() is None
