"""``LocalMetricProducer``: the in-process instruments (:mod:`._local`), produced for the readers
of a ``MeterProvider``.

The OpenTelemetry specification's seam for data aggregated outside the SDK is a
``MetricProducer`` registered on each ``MetricReader``; the Python SDK does not have it yet
(open-telemetry/opentelemetry-python#4768). :meth:`LocalMetricProducer.attach` therefore wraps
the collect callback a ``MeterProvider`` gives each of its readers: every collection (periodic
OTLP export, a Prometheus scrape, ``InMemoryMetricReader.get_metrics_data``) returns the SDK's
own metrics plus these, under the provider's resource and the ``otelhooks`` scope. SDK internals
this relies on: the reader's ``_collect``/``_set_collect_callback`` and
``_instrument_class_temporality``, and the ``_Counter``/``_Histogram`` classes that key it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from time import time_ns
from typing import TypeVar

from opentelemetry.sdk.metrics import (
    AlwaysOffExemplarFilter,
    ExemplarFilter,
)
from opentelemetry.sdk.metrics._internal.instrument import _Counter, _Histogram
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Metric,
    MetricReader,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from otelhooks._metrics._local import (
    LocalCountedHistogram,
    LocalCounter,
    LocalHistogram,
    _Collect,
    _LocalInstrument,
    _SampledCountedHistogram,
    _SampledCounter,
    _SampledHistogram,
)

__all__ = ["LocalMetricProducer"]

_I = TypeVar("_I", bound=_LocalInstrument)

_log = logging.getLogger(__name__)


class _Reader:
    """A reader the producer is attached to: its temporality per instrument kind, and whether
    it keeps a cumulative table of its own (``own``: it came after measurements were made, and
    counts only those made since, as a reader the SDK adds to a provider does)."""

    __slots__ = ("counter_temporality", "histogram_temporality", "last_ns", "own")

    def __init__(self, reader: MetricReader, now: int, *, own: bool = False) -> None:
        preferred = getattr(reader, "_instrument_class_temporality", {})
        cumulative = AggregationTemporality.CUMULATIVE
        self.counter_temporality: AggregationTemporality = preferred.get(_Counter, cumulative)
        self.histogram_temporality: AggregationTemporality = preferred.get(_Histogram, cumulative)
        self.last_ns = now
        self.own = own

    def temporality(self, instrument: _LocalInstrument) -> AggregationTemporality:
        if isinstance(instrument, LocalCounter):
            return self.counter_temporality
        return self.histogram_temporality

    def add(self, reader_id: int, instrument: _LocalInstrument) -> None:
        """Give ``instrument`` this reader's tables."""
        instrument.reservoirs[reader_id] = {}
        if self.own or self.temporality(instrument) is AggregationTemporality.DELTA:
            instrument.pending[reader_id] = {}  # never emptied for an own cumulative table
        else:
            instrument.cumulative_readers.append(reader_id)

    @staticmethod
    def remove(reader_id: int, instrument: _LocalInstrument) -> None:
        """Take this reader's tables from ``instrument``."""
        instrument.reservoirs.pop(reader_id, None)
        instrument.pending.pop(reader_id, None)
        if reader_id in instrument.cumulative_readers:
            instrument.cumulative_readers.remove(reader_id)


class LocalMetricProducer:
    """The ``otelhooks`` scope's instruments, aggregated in process and produced for readers.

    Create the instruments, build the ``MeterProvider`` with the readers, then :meth:`attach`
    each reader; every collection of that reader then includes these metrics.

    Example:
        >>> producer = LocalMetricProducer(resource)
        >>> calls = producer.counter("otelhooks.tool.calls", unit="{call}")
        >>> provider = MeterProvider(resource=resource, metric_readers=[reader])
        >>> producer.attach(reader)
    """

    def __init__(
        self,
        resource: Resource | None = None,
        scope: str = "otelhooks",
        *,
        exemplar_filter: ExemplarFilter | None = None,
    ) -> None:
        self._resource = resource or Resource.create()
        self._scope = InstrumentationScope(scope)
        # Always off keeps no exemplars: the plain instruments, whose hot path never samples.
        off = isinstance(exemplar_filter, AlwaysOffExemplarFilter)
        self._exemplar_filter = None if off else exemplar_filter
        self._instruments: list[_LocalInstrument] = []
        # As a Meter does: the same instrument asked for twice is the same instrument (one
        # series per attribute set, one metric in the collection).
        self._by_identity: dict[tuple[object, ...], _LocalInstrument] = {}
        self._readers: dict[int, _Reader] = {}
        self._collect_lock = threading.Lock()

    def counter(self, name: str, *, unit: str = "", description: str = "") -> LocalCounter:
        """The counter ``name`` (the one made before, if it was asked for with the same unit
        and description)."""
        identity = ("counter", name, unit, description)
        with self._collect_lock:
            known = self._by_identity.get(identity)
        if isinstance(known, LocalCounter):
            return known
        kind = LocalCounter if self._exemplar_filter is None else _SampledCounter
        counter = kind(name, unit, description, self._exemplar_filter)
        return self._register(identity, counter)

    def histogram(
        self, name: str, *, bounds: Sequence[float], unit: str = "", description: str = ""
    ) -> LocalHistogram:
        """The histogram ``name`` (the one made before, if it was asked for with the same
        bounds, unit and description)."""
        identity = ("histogram", name, unit, description, tuple(bounds))
        with self._collect_lock:
            known = self._by_identity.get(identity)
        if isinstance(known, LocalHistogram):
            return known
        kind = LocalHistogram if self._exemplar_filter is None else _SampledHistogram
        histogram = kind(name, unit, description, bounds, self._exemplar_filter)
        return self._register(identity, histogram)

    def counted(self, counter: LocalCounter, histogram: LocalHistogram) -> LocalCountedHistogram:
        """One call for ``counter.add(1, attrs)`` and ``histogram.record(value, attrs)``, both
        instruments of this producer."""
        if counter not in self._instruments or histogram not in self._instruments:
            raise ValueError("counted() takes instruments of this producer")
        if self._exemplar_filter is None:
            return LocalCountedHistogram(counter, histogram)
        return _SampledCountedHistogram(counter, histogram)

    def _register(self, identity: tuple[object, ...], instrument: _I) -> _I:
        with self._collect_lock:
            known = self._by_identity.get(identity)
            if known is not None:  # made meanwhile by another thread
                return known  # type: ignore[return-value]  # same identity, same kind
            self._by_identity[identity] = instrument
            self._instruments.append(instrument)
            for reader_id, state in self._readers.items():
                state.add(reader_id, instrument)
            return instrument

    def attach(self, reader: MetricReader, *, late: bool = False) -> None:
        """Make every collection of ``reader`` (already on its ``MeterProvider``) include these
        metrics. ``late``: the reader came after measurements were made; as with a reader added
        to a provider, it gets only the measurements made from now on, cumulative included."""
        collect: _Collect | None = getattr(reader, "_collect", None)
        if collect is None:
            raise ValueError(f"{type(reader).__name__} is not registered on a MeterProvider yet")
        with self._collect_lock:
            # What was measured so far goes to the tables of the readers there already.
            for instrument in self._instruments:
                instrument.fold()
            state = self._readers[id(reader)] = _Reader(reader, time_ns(), own=late)
            for instrument in self._instruments:
                state.add(id(reader), instrument)

        def collect_with_local(
            metric_reader: MetricReader, timeout_millis: float = 10_000
        ) -> MetricsData | None:
            return self._merge(collect(metric_reader, timeout_millis=timeout_millis), reader)

        # The SDK types the callback's second argument as a temporality; it passes the timeout.
        reader._set_collect_callback(collect_with_local)  # type: ignore[arg-type]

    def detach(self, reader: MetricReader) -> None:
        """Forget ``reader`` (removed from its provider): its tables are dropped."""
        with self._collect_lock:
            if self._readers.pop(id(reader), None) is None:
                return
            for instrument in self._instruments:
                _Reader.remove(id(reader), instrument)

    def _current_resource(self) -> Resource:
        """The resource of a collection with none of the SDK's own metrics."""
        return self._resource

    def _produce(self, reader: MetricReader) -> list[Metric]:
        with self._collect_lock:
            state = self._readers.get(id(reader))
            if state is None:  # detached while a collection was on its way
                return []
            now = time_ns()
            metrics = []
            for instrument in self._instruments:
                instrument.fold()
                temporality = state.temporality(instrument)
                if temporality is AggregationTemporality.DELTA:
                    table = instrument.pending[id(reader)]
                    instrument.pending[id(reader)] = {}
                    start = state.last_ns
                else:
                    table = instrument.pending[id(reader)] if state.own else instrument.cumulative
                    start = 0
                reservoirs = instrument.reservoirs[id(reader)]
                instrument.reservoirs[id(reader)] = {}
                data = instrument.data(list(table.items()), reservoirs, temporality, start, now)
                if data.data_points:
                    metrics.append(
                        Metric(
                            name=instrument.name,
                            description=instrument.description,
                            unit=instrument.unit,
                            data=data,
                        )
                    )
            state.last_ns = now
            return metrics

    def _merge(self, data: MetricsData | None, reader: MetricReader) -> MetricsData | None:
        metrics = self._produce(reader)
        if not metrics:
            return data
        if data is None or not data.resource_metrics:
            ours = ScopeMetrics(scope=self._scope, metrics=metrics, schema_url="")
            resource = self._current_resource()
            return MetricsData(
                resource_metrics=[
                    ResourceMetrics(
                        resource=resource, scope_metrics=[ours], schema_url=resource.schema_url
                    )
                ]
            )
        first, *rest = data.resource_metrics
        scopes = list(first.scope_metrics)
        for i, scoped in enumerate(scopes):
            if scoped.scope.name == self._scope.name and not scoped.scope.version:
                scopes[i] = ScopeMetrics(
                    scope=scoped.scope,
                    metrics=[*scoped.metrics, *metrics],
                    schema_url=scoped.schema_url,
                )
                break
        else:
            scopes.append(ScopeMetrics(scope=self._scope, metrics=metrics, schema_url=""))
        merged = ResourceMetrics(
            resource=first.resource, scope_metrics=scopes, schema_url=first.schema_url
        )
        return MetricsData(resource_metrics=[merged, *rest])
