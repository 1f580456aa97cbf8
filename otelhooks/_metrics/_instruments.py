"""The instruments otelhooks records: the SDK's own, fed from a queue off the agent's thread.

A measurement through the OpenTelemetry SDK's synchronous instruments is dear (see
benchmarks/README.md, "Metrics on the SDK's public API"), and a tool call records two. So each
instrument here only queues the measurement, a copy of its attributes and the OpenTelemetry
context current when it was made, on a :class:`~otelhooks._worker.BoundedWorker`; the worker
records it through the SDK's instrument with that ``context=``, so the exemplars are the ones
the SDK would have kept had the measurement been made in place. Aggregation,
temporality, views, the exemplar filter and reservoirs and the cardinality limit are the SDK's.
A reader sees a measurement once the worker has recorded it: :meth:`AgentMetrics.flush` waits
for that (``OtelHooks.force_flush`` and ``otelhooks.testing`` call it). A full queue drops the
measurement and counts it in ``otelhooks.dropped{otelhooks.drop.source="metrics"}``.

Durations are in seconds with explicit bucket boundaries (the SDK's default boundaries 0, 5,
10 … 10000 are useless for seconds): the GenAI metrics use the boundaries their semantic
conventions give (``docs/gen-ai/gen-ai-metrics.md`` in the ``semantic-conventions-genai``
repository), otelhooks' own durations :data:`DURATION_BUCKETS_S`. Each histogram advises its
boundaries to the SDK (``explicit_bucket_boundaries_advisory``), and :func:`metric_views` gives
the same as views. Counts use curly-brace units (``{error}``, ``{call}``), never ``1``, which a
Prometheus exporter following the spec turns into a ``_ratio`` suffix.
"""

from __future__ import annotations

import atexit
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

from opentelemetry import context as otel_context
from opentelemetry import metrics
from opentelemetry.context import Context
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

from otelhooks import _semconv as sc
from otelhooks._encoding import clean_text
from otelhooks._version import __version__
from otelhooks._worker import BoundedWorker, DropReason

__all__ = [
    "CLIENT_DURATION_BUCKETS_S",
    "DURATION_BUCKETS_S",
    "INVOKE_AGENT_BUCKETS_S",
    "TOKEN_BUCKETS",
    "AgentMetrics",
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
_BUCKETS: Final[dict[str, Sequence[float]]] = {
    sc.METRIC_TOKEN_USAGE: TOKEN_BUCKETS,
    sc.METRIC_OPERATION_DURATION: CLIENT_DURATION_BUCKETS_S,
    sc.METRIC_EXECUTE_TOOL_DURATION: CLIENT_DURATION_BUCKETS_S,
    sc.METRIC_INVOKE_AGENT_DURATION: INVOKE_AGENT_BUCKETS_S,
    sc.METRIC_STEP_DURATION: DURATION_BUCKETS_S,
    sc.METRIC_HOOK_DURATION: DURATION_BUCKETS_S,
}


def metric_views() -> list[View]:
    """Views giving each histogram its boundaries: the GenAI spec's, otelhooks' own second-scale
    ones. The histograms advise the same boundaries themselves; these views make them hold on a
    provider whose readers prefer other boundaries.

    Example:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> provider = MeterProvider(views=metric_views())
    """
    return [
        View(instrument_name=name, aggregation=ExplicitBucketHistogramAggregation(bounds))
        for name, bounds in _BUCKETS.items()
    ]


Attributes: TypeAlias = Mapping[str, Any] | None
# The SDK instrument's ``record`` or ``add`` the worker calls: (value, attributes, context).
_Record: TypeAlias = Callable[[Any, Attributes, Context], None]
# What a measurement queues: where it goes, its value and attributes, and the context current
# where it was made (the caller's span in it: the SDK's exemplar filter and reservoirs read it).
_Item: TypeAlias = tuple["_Sink", Any, Attributes, Context]


class _Sink:
    """Where a queued measurement goes: a histogram's ``record`` and/or a counter's ``add``
    (``add_one``: the counter counts measurements, each adding 1; otherwise it adds the value)."""

    __slots__ = ("add", "add_one", "record")

    def __init__(
        self, *, record: _Record | None = None, add: _Record | None = None, add_one: bool = False
    ) -> None:
        self.record = record
        self.add = add
        self.add_one = add_one


def _encodable(attributes: Attributes) -> Attributes:
    """``attributes`` with each lone surrogate of a value as U+FFFD (a tool name from an agent
    may hold one): UTF-8 cannot encode it, and one such series failed every Prometheus scrape
    (500) for the life of the process, and dropped the attribute from every OTLP export."""
    if attributes:
        for value in attributes.values():
            if type(value) is str and not value.isascii() and clean_text(value) is not value:
                return {k: clean_text(v) if type(v) is str else v for k, v in attributes.items()}
    return attributes


def _record_batch(batch: list[_Item]) -> None:
    """The worker's handler: record each histogram measurement with the span it was made in,
    and add a batch's counter increments of one attribute set in one ``add``.

    A counter's sum is the same either way, and each SDK measurement costs about what a bare
    span does (benchmarks/README.md, "Eighth pass"), so a batch of tool calls with one tool and
    outcome pays for one ``add`` instead of one each. What it gives up: the counter is offered
    one exemplar per batch and attribute set (the last measurement's span), not one per call;
    the histogram beside it still offers every call's.
    """
    sums: dict[tuple[_Record, tuple[tuple[str, Any], ...]], list[Any]] = {}
    for sink, value, given, context in batch:
        attributes = _encodable(given)
        if sink.record is not None:
            sink.record(value, attributes, context)
        add = sink.add
        if add is None:
            continue
        amount = 1 if sink.add_one else value
        try:
            key = (add, tuple(attributes.items()) if attributes else ())
            pending = sums.get(key)
        except TypeError:  # an unhashable attribute value (a list): added on its own
            add(amount, attributes, context)
            continue
        if pending is None:
            sums[key] = [amount, attributes, context]
        else:
            pending[0] += amount
            pending[2] = context
    for (add, _), (amount, attributes, context) in sums.items():
        add(amount, attributes, context)


def _flush_at_exit(ref: weakref.ref[AgentMetrics]) -> None:
    metrics = ref()
    if metrics is not None:
        metrics.flush(2.0)


class _Queued:
    """An SDK instrument whose measurements the metrics worker records."""

    __slots__ = ("_sink", "_submit")

    def __init__(self, sink: _Sink, submit: Callable[[_Item], bool]) -> None:
        self._sink = sink
        self._submit = submit

    def _queue(self, value: Any, attributes: Attributes) -> None:
        # A copy: the worker reads the attributes later, and a caller may reuse its dict. The
        # context is immutable; it keeps the caller's span object alive until the worker has
        # recorded the measurement (at most half a second unless the queue backs up).
        attrs = dict(attributes) if attributes else None
        self._submit((self._sink, value, attrs, otel_context.get_current()))


class QueuedCounter(_Queued):
    """A monotonic counter: ``add(amount, attributes)``, as the SDK's ``Counter``."""

    __slots__ = ()

    def add(self, amount: float, attributes: Attributes = None) -> None:
        self._queue(amount, attributes)


class QueuedHistogram(_Queued):
    """A histogram: ``record(value, attributes)``, as the SDK's ``Histogram``."""

    __slots__ = ()

    def record(self, value: float, attributes: Attributes = None) -> None:
        self._queue(value, attributes)


class CountedHistogram(_Queued):
    """A count and a duration with the same attributes (a tool call's, a hook run's):
    ``record(seconds, attributes)`` adds 1 to the counter and records the duration."""

    __slots__ = ()

    def record(self, value: float, attributes: Attributes = None) -> None:
        self._queue(value, attributes)

    def record_many(self, values: Sequence[float], attributes: Attributes = None) -> None:
        """``record(value, attributes)`` for each of ``values`` (a batch's hook run times)."""
        for value in values:
            self._queue(value, attributes)


class AgentMetrics:
    """Every instrument otelhooks records, named from :mod:`otelhooks._semconv` (see
    docs/telemetry.md), on ``meter_provider``'s ``otelhooks`` meter (the global provider by
    default), recorded on a worker thread.

    ``tool_call``, ``operation`` and ``hook_run`` count one and record a duration with the same
    attributes in one call (``record(seconds, attrs)``). Attributes are copied when a
    measurement is made; call :meth:`flush` before reading a reader, :meth:`shutdown` when done.

    Args:
        meter_provider: where the instruments come from (``get_meter("otelhooks")``, its only
            use of the provider).
        max_queue_size: measurements waiting for the worker at most; more are dropped and
            counted.
        sdk_instruments: deprecated, no effect: the instruments are always the SDK's.

    Example:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        >>> from otelhooks import AgentMetrics
        >>> reader = InMemoryMetricReader()
        >>> metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
        >>> metrics.tool_call.record(0.25, {"gen_ai.tool.name": "readFile"})
        >>> metrics.flush()
        True
        >>> scope = reader.get_metrics_data().resource_metrics[0].scope_metrics[0]
        >>> sorted(m.name for m in scope.metrics)
        ['gen_ai.execute_tool.duration', 'otelhooks.tool.calls']
    """

    def __init__(
        self,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        max_queue_size: int = 65_536,
        sdk_instruments: bool | None = None,
    ) -> None:
        if sdk_instruments is not None:
            warnings.warn(
                "AgentMetrics(sdk_instruments=...) is deprecated and does nothing: otelhooks' "
                "metrics are always recorded through the SDK's instruments",
                DeprecationWarning,
                stacklevel=2,
            )
        meter = (meter_provider or metrics.get_meter_provider()).get_meter(
            "otelhooks", __version__, schema_url=sc.SCHEMA_URL
        )
        self._worker: BoundedWorker[_Item] = BoundedWorker(
            "otelhooks-metrics",
            _record_batch,
            max_queue_size=max_queue_size,
            max_batch_size=min(512, max_queue_size),
            schedule_delay_s=0.5,
            on_drop=self._count_own_drop,
        )
        submit = self._worker.submit
        # What is still queued at exit reaches the provider before its own exit-time shutdown
        # collects it: exit handlers run last registered first, and the provider came first.
        atexit.register(_flush_at_exit, weakref.ref(self))

        def counter(name: str, unit: str, description: str) -> QueuedCounter:
            sdk = meter.create_counter(name, unit=unit, description=description)
            return QueuedCounter(_Sink(add=sdk.add), submit)

        def histogram(name: str, unit: str, description: str) -> QueuedHistogram:
            sdk = meter.create_histogram(
                name,
                unit=unit,
                description=description,
                explicit_bucket_boundaries_advisory=_BUCKETS[name],
            )
            return QueuedHistogram(_Sink(record=sdk.record), submit)

        def counted(calls: QueuedCounter, durations: QueuedHistogram) -> CountedHistogram:
            sink = _Sink(record=durations._sink.record, add=calls._sink.add, add_one=True)
            return CountedHistogram(sink, submit)

        # The one measurement recorded in place: the metrics queue's own drops.
        self._dropped = meter.create_counter(
            sc.METRIC_DROPPED,
            unit="{item}",
            description="Spans, observer events and deliveries dropped, by source and reason.",
        )
        self.operations = counter(
            sc.METRIC_OPERATIONS, "{operation}", "Agent operations by outcome."
        )
        self.errors = counter(
            sc.METRIC_ERRORS, "{error}", "Agent errors (on_error); alerts fire on it."
        )
        self.invoke_agent_duration = histogram(
            sc.METRIC_INVOKE_AGENT_DURATION, "s", "Duration of agent operations."
        )
        self.step_duration = histogram(sc.METRIC_STEP_DURATION, "s", "Duration of agent steps.")
        self.operation_duration = histogram(
            sc.METRIC_OPERATION_DURATION, "s", "GenAI client operation duration."
        )
        self.token_usage = histogram(sc.METRIC_TOKEN_USAGE, "{token}", "Tokens used per LLM call.")
        self.tool_calls = counter(sc.METRIC_TOOL_CALLS, "{call}", "Tool calls by tool and outcome.")
        self.tool_duration = histogram(
            sc.METRIC_EXECUTE_TOOL_DURATION, "s", "Duration of tool calls."
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
        self.hook_duration = histogram(sc.METRIC_HOOK_DURATION, "s", "Hook run time.")
        self.llm_calls = counter(
            sc.METRIC_LLM_CALLS, "{call}", "Model calls, otelhooks' own and instrumented SDKs'."
        )
        self.llm_cost = counter(
            sc.METRIC_LLM_COST, "{USD}", "Cost of priced model calls (genai-prices), in US dollars."
        )
        self.store_errors = counter(
            sc.METRIC_STORE_ERRORS,
            "{error}",
            "serve's store statements that failed, by error: store_busy (serve saturated, or "
            "one change waited past its timeout), store_unavailable (down), store_error.",
        )
        self.dropped = QueuedCounter(_Sink(add=self._dropped.add), submit)
        self.tool_call = counted(self.tool_calls, self.tool_duration)
        """``record(seconds, attrs)``: ``tool_calls`` + 1 and ``tool_duration``."""
        self.operation = counted(self.operations, self.invoke_agent_duration)
        """``record(seconds, attrs)``: ``operations`` + 1 and ``invoke_agent_duration``."""
        self.hook_run = counted(self.hook_invocations, self.hook_duration)
        """``record(seconds, attrs)``: ``hook_invocations`` + 1 and ``hook_duration``."""

    def drop_counter(self, source: str) -> Callable[[int, str], None]:
        """A callback ``(count, reason)`` for bounded queues that counts drops from ``source``.

        Example:
            >>> from opentelemetry.sdk.metrics import MeterProvider
            >>> from opentelemetry.sdk.metrics.export import InMemoryMetricReader
            >>> from otelhooks import AgentMetrics
            >>> reader = InMemoryMetricReader()
            >>> agent_metrics = AgentMetrics(MeterProvider(metric_readers=[reader]))
            >>> on_drop = agent_metrics.drop_counter("observer_queue")
            >>> on_drop(1, "queue_full")
            >>> agent_metrics.flush()
            True
            >>> scope = reader.get_metrics_data().resource_metrics[0].scope_metrics[0]
            >>> (dropped,) = [m for m in scope.metrics if m.name == "otelhooks.dropped"]
            >>> point = dropped.data.data_points[0]
            >>> point.value, sorted(point.attributes.items())
            (1, [('otelhooks.drop.reason', 'queue_full'),
                 ('otelhooks.drop.source', 'observer_queue')])
        """
        dropped = self.dropped

        def count(amount: int, reason: str) -> None:
            dropped.add(amount, {sc.ATTR_DROP_SOURCE: source, sc.ATTR_DROP_REASON: reason})

        return count

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every measurement made before this call is recorded in the SDK.

        Returns:
            True when all were recorded within ``timeout_s``.
        """
        return self._worker.flush(timeout_s)

    def shutdown(self, timeout_s: float = 30.0) -> bool:
        """Record what is queued (within ``timeout_s``) and stop the worker; later measurements
        are dropped and counted. Idempotent.

        Returns:
            True when everything queued was recorded in time.
        """
        return self._worker.shutdown(timeout_s)

    @property
    def queue_dropped(self) -> int:
        """Measurements the queue dropped (full, or after :meth:`shutdown`)."""
        return self._worker.dropped

    def _count_own_drop(self, count: int, reason: DropReason) -> None:
        self._dropped.add(count, {sc.ATTR_DROP_SOURCE: "metrics", sc.ATTR_DROP_REASON: reason})
