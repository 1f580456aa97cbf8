"""The instruments otelhooks records: through the SDK's meter, or aggregated in process.

Durations are in seconds with explicit bucket boundaries (the SDK's default boundaries 0, 5,
10 … 10000 are useless for seconds): the GenAI metrics use the boundaries their semantic
conventions give (``docs/gen-ai/gen-ai-metrics.md`` in the ``semantic-conventions-genai``
repository), otelhooks' own durations :data:`DURATION_BUCKETS_S`; see :func:`metric_views`.
Counts use curly-brace units (``{error}``, ``{call}``), never ``1``, which a Prometheus
exporter following the spec turns into a ``_ratio`` suffix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from opentelemetry import metrics
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

from otelhooks import _semconv as sc
from otelhooks._metrics._local import LocalCounter, LocalHistogram
from otelhooks._metrics._producer import LocalMetricProducer
from otelhooks._metrics._provider import _ProducerSource, instrument_source

__all__ = [
    "CLIENT_DURATION_BUCKETS_S",
    "DURATION_BUCKETS_S",
    "INVOKE_AGENT_BUCKETS_S",
    "TOKEN_BUCKETS",
    "Adds",
    "AgentMetrics",
    "Records",
    "metric_views",
]

DURATION_BUCKETS_S: Final[Sequence[float]] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
)  # fmt: skip
# The GenAI conventions' boundaries: gen_ai.client.token.usage; gen_ai.client.operation.duration
# and gen_ai.execute_tool.duration; gen_ai.invoke_agent.duration.
TOKEN_BUCKETS: Final[Sequence[float]] = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
CLIENT_DURATION_BUCKETS_S: Final[Sequence[float]] = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
INVOKE_AGENT_BUCKETS_S: Final[Sequence[float]] = (
    0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6,
)  # fmt: skip
_SPEC_BUCKETS: Final[dict[str, Sequence[float]]] = {
    sc.METRIC_TOKEN_USAGE: TOKEN_BUCKETS,
    sc.METRIC_OPERATION_DURATION: CLIENT_DURATION_BUCKETS_S,
    sc.METRIC_EXECUTE_TOOL_DURATION: CLIENT_DURATION_BUCKETS_S,
    sc.METRIC_INVOKE_AGENT_DURATION: INVOKE_AGENT_BUCKETS_S,
}


def metric_views() -> list[View]:
    """Views giving each GenAI histogram its spec's boundaries, otelhooks' own second-scale ones."""
    views = [
        View(instrument_name=name, aggregation=ExplicitBucketHistogramAggregation(bounds))
        for name, bounds in _SPEC_BUCKETS.items()
    ]
    own = ExplicitBucketHistogramAggregation(boundaries=DURATION_BUCKETS_S)
    for name in (sc.METRIC_STEP_DURATION, sc.METRIC_HOOK_DURATION):
        views.append(View(instrument_name=name, aggregation=own))
    return views


class Adds(Protocol):
    """A counter: the SDK's or a :class:`~otelhooks._metrics.LocalCounter`."""

    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None: ...


class Records(Protocol):
    """A histogram: the SDK's or a :class:`~otelhooks._metrics.LocalHistogram`."""

    def record(self, value: float, attributes: Mapping[str, Any] | None = None) -> None: ...


class Counts(Records, Protocol):
    """A count and a duration recorded together (:class:`~otelhooks._metrics.LocalCountedHistogram`
    or a pair of the SDK's instruments)."""

    def record_many(
        self, values: Sequence[float], attributes: Mapping[str, Any] | None = None
    ) -> None: ...


class AgentMetrics:
    """Every instrument, named from :mod:`otelhooks._semconv`. See the README's metric table.

    On ``meter_provider`` (the global one by default): an SDK ``MeterProvider`` gets each
    instrument aggregated in process, attached to its readers, wherever that exports exactly
    what the SDK's instrument would (names, boundaries, temporality per reader, exemplars under
    the provider's exemplar filter, resource, cardinality limit; boundaries from its views,
    :func:`metric_views` or its own, or the SDK's defaults), for a fraction of the SDK's
    100,000 instructions a measurement; an instrument the provider's views or readers change
    otherwise (renamed, dropped, re-keyed, exponential histograms...) is the SDK's, and so are
    all on any other provider. Every ``AgentMetrics`` on one provider shares its instruments;
    the first decides. ``sdk_instruments=True`` forces the SDK's instruments (pass it to the
    first ``AgentMetrics`` on the provider). With a ``producer`` (what
    :func:`otelhooks.configure` does) the instruments are that producer's, reaching the
    readers it is attached to (with exemplars when it has an exemplar filter).

    ``tool_call``, ``operation`` and ``hook_run`` record a count and a duration with the same
    attributes in one call (``record(seconds, attrs)``); pass a :class:`MetricAttributes` built
    once for attribute sets that repeat.

    Example:
        >>> metrics = AgentMetrics(MeterProvider(metric_readers=[reader], views=metric_views()))
        >>> metrics.tool_calls.add(1, {"gen_ai.tool.name": "readFile"})
        >>> # the SDK's own instruments, measurement by measurement, whatever the provider:
        >>> sdk = AgentMetrics(MeterProvider(metric_readers=[other]), sdk_instruments=True)
    """

    def __init__(
        self,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        producer: LocalMetricProducer | None = None,
        sdk_instruments: bool = False,
    ) -> None:
        source: _ProducerSource | None
        if producer is not None:
            if sdk_instruments:
                raise ValueError("sdk_instruments=True takes a provider, not a producer")
            source = _ProducerSource(producer)
        else:
            provider = meter_provider or metrics.get_meter_provider()
            source = instrument_source(provider, sdk_instruments=sdk_instruments)
        counter: Callable[[str, str, str], Adds]
        histogram: Callable[[str, str, str, Sequence[float]], Records]
        counted: Callable[[Adds, Records], Counts] = _Counted
        if source is not None:
            local = source.producer
            counter, histogram = source.counter, source.histogram

            def counted(calls: Adds, durations: Records) -> Counts:
                if isinstance(calls, LocalCounter) and isinstance(durations, LocalHistogram):
                    return local.counted(calls, durations)
                return _Counted(calls, durations)

        else:
            meter = provider.get_meter("otelhooks")

            def counter(name: str, unit: str, description: str) -> Adds:
                return meter.create_counter(name, unit=unit, description=description)

            def histogram(
                name: str, unit: str, description: str, bounds: Sequence[float]
            ) -> Records:
                # The bounds come from the provider's views (metric_views()) or the SDK.
                return meter.create_histogram(name, unit=unit, description=description)

        seconds = DURATION_BUCKETS_S
        self.operations = counter(
            sc.METRIC_OPERATIONS, "{operation}", "Agent operations by outcome."
        )
        self.errors = counter(
            sc.METRIC_ERRORS, "{error}", "Agent errors (on_error); alerts fire on it."
        )
        self.invoke_agent_duration = histogram(
            sc.METRIC_INVOKE_AGENT_DURATION,
            "s",
            "Duration of agent operations.",
            INVOKE_AGENT_BUCKETS_S,
        )
        self.step_duration = histogram(
            sc.METRIC_STEP_DURATION, "s", "Duration of agent steps.", seconds
        )
        self.operation_duration = histogram(
            sc.METRIC_OPERATION_DURATION,
            "s",
            "GenAI client operation duration.",
            CLIENT_DURATION_BUCKETS_S,
        )
        self.token_usage = histogram(
            sc.METRIC_TOKEN_USAGE, "{token}", "Tokens used per LLM call.", TOKEN_BUCKETS
        )
        self.tool_calls = counter(sc.METRIC_TOOL_CALLS, "{call}", "Tool calls by tool and outcome.")
        self.tool_duration = histogram(
            sc.METRIC_EXECUTE_TOOL_DURATION,
            "s",
            "Duration of tool calls.",
            CLIENT_DURATION_BUCKETS_S,
        )
        self.compactions = counter(sc.METRIC_COMPACTIONS, "{compaction}", "Context compactions.")
        self.tokens_saved = counter(
            sc.METRIC_COMPACT_TOKENS_SAVED, "{token}", "Tokens saved by compaction."
        )
        self.human_interventions = counter(
            sc.METRIC_HUMAN_INTERVENTIONS, "{intervention}", "Human interventions by action."
        )
        self.hook_invocations = counter(
            sc.METRIC_HOOK_INVOCATIONS,
            "{invocation}",
            "Hook invocations by hook, event and outcome.",
        )
        self.hook_duration = histogram(sc.METRIC_HOOK_DURATION, "s", "Hook run time.", seconds)
        self.dropped = counter(
            sc.METRIC_DROPPED,
            "{item}",
            "Spans, observer events and deliveries dropped, by source and reason.",
        )

        # One call each where a count and a duration share their attributes: locally one key
        # and one exemplar decision instead of two (see LocalCountedHistogram).
        self.tool_call = counted(self.tool_calls, self.tool_duration)
        """``record(seconds, attrs)``: ``tool_calls`` + 1 and ``tool_duration``."""
        self.operation = counted(self.operations, self.invoke_agent_duration)
        """``record(seconds, attrs)``: ``operations`` + 1 and ``invoke_agent_duration``."""
        self.hook_run = counted(self.hook_invocations, self.hook_duration)
        """``record(seconds, attrs)``: ``hook_invocations`` + 1 and ``hook_duration``."""

    def drop_counter(self, source: str) -> _DropRecorder:
        """A callback ``(count, reason)`` for bounded queues that counts drops from ``source``."""
        return _DropRecorder(self, source)


class _Counted:
    """A counter's ``add(1, attrs)`` and a histogram's ``record(value, attrs)`` in one call."""

    __slots__ = ("_counter", "_histogram")

    def __init__(self, counter: Adds, histogram: Records) -> None:
        self._counter = counter
        self._histogram = histogram

    def record(self, value: float, attributes: Mapping[str, Any] | None = None) -> None:
        self._counter.add(1, attributes)
        self._histogram.record(value, attributes)

    def record_many(
        self, values: Sequence[float], attributes: Mapping[str, Any] | None = None
    ) -> None:
        for value in values:
            self.record(value, attributes)


class _DropRecorder:
    __slots__ = ("_attrs", "_metrics", "_source")

    def __init__(self, m: AgentMetrics, source: str) -> None:
        self._metrics = m
        self._source = source
        # One attribute dict per reason, built once: a full queue drops on every event.
        self._attrs: dict[str, dict[str, str]] = {}

    def __call__(self, count: int, reason: str) -> None:
        attrs = self._attrs.get(reason)
        if attrs is None:
            attrs = {sc.ATTR_DROP_SOURCE: self._source, sc.ATTR_DROP_REASON: reason}
            self._attrs[reason] = attrs
        self._metrics.dropped.add(count, attrs)
