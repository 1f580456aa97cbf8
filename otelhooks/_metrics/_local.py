"""Counters and histograms aggregated in process, handed to metric readers when they collect.

Why not the SDK's synchronous instruments: one measurement through the OpenTelemetry Python SDK
(1.45) costs 98,000-105,000 instructions with a sampled span current (callgrind): the
``Measurement`` and its attribute cleaning about 38,000, the attribute copy and
``_hash_attributes`` 31,000, the trace-based exemplar filter 9,000, the exemplar reservoir's
offer 13,000-15,000, the aggregation, locks and dispatch the rest. That is 40 % of a whole span,
and a tool call records two. Here a measurement is a tuple key, one dict look-up and a few
additions under one lock, and the work the SDK does per measurement is done once per attribute
set per collection instead. :class:`LocalCountedHistogram` records a count and a duration that
share their attributes with one key and one lock; a :class:`MetricAttributes` brings its key.

:class:`~otelhooks._metrics._producer.LocalMetricProducer` makes these instruments and hands
their data to a ``MeterProvider``'s readers; the exemplars, when asked for, are kept as
:mod:`._exemplars` describes.

Behaviour matches the SDK's defaults for the same instruments: monotonic sums and explicit-bucket
histograms (upper bounds inclusive, min and max kept), cumulative or delta as each reader prefers,
at most 2,000 attribute sets per instrument (the rest go to the ``otel.metric.overflow=true``
series), negative amounts dropped with a warning. With an ``exemplar_filter`` (what
``configure(sdk_metrics=True)`` passes: the provider's own, from ``OTEL_METRICS_EXEMPLAR_FILTER``)
the exemplars are the SDK default reservoirs': per reader and collection, a histogram keeps the
latest measurement per bucket, a counter a uniform pick of its measurements, each with the span
and trace current when it was made and the attributes the point does not carry; a delta
reader's limit holds per collection interval, as the SDK's (1.45) does. What differs: as the spec
says of producers, the provider's views do not apply (bucket boundaries are given here;
``AgentMetrics`` on a user's provider takes these instruments only where its views and readers
would not change the data, see :mod:`._provider`); a non-finite amount is not dropped (the SDK
drops it with a warning; durations and counts otelhooks records are finite).
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from random import random
from time import time_ns
from typing import Any, Final

from opentelemetry.sdk.metrics import (
    ExemplarFilter,
)
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    MetricsData,
    NumberDataPoint,
    Sum,
)

from otelhooks._metrics._exemplars import (
    _exemplars,
    _hashable,
    _Reservoir,
    _Sample,
    _sampler,
)

__all__ = [
    "LocalCountedHistogram",
    "LocalCounter",
    "LocalHistogram",
    "MetricAttributes",
]

_log = logging.getLogger(__name__)

CARDINALITY_LIMIT: Final = 2000  # the SDK's default, per instrument
_OVERFLOW: Final[Mapping[str, Any]] = {"otel.metric.overflow": True}
_OVERFLOW_KEY: Final = (("otel.metric.overflow", True),)
_INF: Final = float("inf")
_NEG_INF: Final = -_INF

_Key = tuple[tuple[str, Any], ...]
_Collect = Callable[..., MetricsData | None]


def _normal_key(attributes: Mapping[str, Any]) -> _Key:
    """The key of an attribute set whatever the insertion order (sequence values as tuples)."""
    key = tuple(sorted(attributes.items()))  # keys are unique: values are never compared
    try:
        hash(key)
    except TypeError:  # a list value: the slower way, rarely
        return tuple(sorted((k, _hashable(v)) for k, v in attributes.items()))
    return key


class MetricAttributes(dict[str, Any]):
    """An attribute set built once, never changed, and measured with again and again (a tool
    call's ``{agent, tool, outcome}``): the local instruments take its key, computed here once,
    instead of building one from the items on every measurement. Any other mapping works too.

    Example:
        >>> attrs = MetricAttributes({"gen_ai.tool.name": "readFile", "otelhooks.outcome": "ok"})
        >>> metrics.tool_call.record(0.25, attrs)
    """

    __slots__ = ("key",)

    def __init__(self, attributes: Mapping[str, Any]) -> None:
        super().__init__(attributes)
        self.key: _Key = _normal_key(self)

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("MetricAttributes cannot change: its key was computed when it was built")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = __ior__ = _read_only


def _key_of(attributes: Mapping[str, Any] | None) -> _Key:
    """The hot table's key: a MetricAttributes carries its own; otherwise the items in insertion
    order (the same set in another order is merged when folded). Inlined in
    :meth:`LocalCountedHistogram.record`, the default hot path."""
    if type(attributes) is MetricAttributes:
        return attributes.key
    return tuple(attributes.items()) if attributes else ()


class _Series:
    """One attribute set's aggregate: a sum (``value``) or a histogram (the rest), and the
    exemplar candidates kept since the last fold (``samples`` by bucket, of ``seen`` offered)."""

    __slots__ = (
        "attributes",
        "buckets",
        "count",
        "max",
        "min",
        "samples",
        "seen",
        "start_ns",
        "sum",
        "value",
    )

    def __init__(self, attributes: Mapping[str, Any], buckets: int, start_ns: int) -> None:
        self.attributes = attributes
        self.start_ns = start_ns
        self.value: float = 0
        self.count = 0
        self.sum: float = 0
        self.min = _INF  # not float("inf"): a series is made per new attribute set
        self.max = _NEG_INF
        self.buckets = [0] * buckets
        self.seen = 0
        self.samples: dict[int, _Sample] = {}

    def observe(self, value: float, bucket: int) -> None:
        """One histogram measurement (``bucket``: its index among the bounds). The default hot
        paths (:meth:`LocalHistogram.record`, :meth:`LocalCountedHistogram.record`) inline
        this rule: a method call there is a few per cent of a tool call."""
        self.count += 1
        self.sum += value
        if value < self.min:
            self.min = value
        if value > self.max:
            self.max = value
        self.buckets[bucket] += 1

    def merge(self, other: _Series) -> None:
        self.value += other.value
        if other.count:
            self.count += other.count
            self.sum += other.sum
            self.min = min(self.min, other.min)
            self.max = max(self.max, other.max)
            self.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]


class _LocalInstrument(ABC):
    """What counters and histograms share: the hot table, and the folding a collection does.

    Measurements land in ``_current``, keyed by the attribute dict's items in insertion order
    (cheap to build; the same set in another order is merged when folded). A collection swaps
    ``_current`` for an empty table under the lock and folds what it took, outside the hot
    path, into the cumulative table and into each delta reader's pending table.
    """

    _bounds: Sequence[float] = ()

    def __init__(
        self,
        name: str,
        unit: str,
        description: str,
        exemplar_filter: ExemplarFilter | None = None,
    ) -> None:
        self.name = name
        self.unit = unit
        self.description = description
        self._lock = threading.Lock()
        self._current: dict[_Key, _Series] = {}
        self.cumulative: dict[_Key, _Series] = {}
        self.pending: dict[int, dict[_Key, _Series]] = {}
        # Exemplars, per reader (each reader's reservoirs restart when it collects, as the
        # SDK's do), keyed like the reader's table; the readers that read ``cumulative``.
        self.reservoirs: dict[int, dict[_Key, _Reservoir]] = {}
        self.cumulative_readers: list[int] = []
        self._sample, self._value_blind = _sampler(exemplar_filter)

    def _series(self, attributes: Mapping[str, Any] | None) -> _Series:
        """The hot series for ``attributes``; call with the lock held."""
        key = _key_of(attributes)
        try:
            series = self._current.get(key)
        except TypeError:  # a list value: not hashable as it is
            key = _normal_key(attributes or {})
            series = self._current.get(key)
        return series if series is not None else self._new(key, attributes)

    def _keyed(self, key: _Key, attributes: Mapping[str, Any] | None) -> tuple[_Key, _Series]:
        """:meth:`_series` for a key built by the caller, and the key it ended up using; call
        with the lock held."""
        try:
            series = self._current.get(key)
        except TypeError:
            key = _normal_key(attributes or {})
            series = self._current.get(key)
        return key, series if series is not None else self._new(key, attributes)

    def _new(
        self,
        key: _Key,
        attributes: Mapping[str, Any] | None,
        frozen: Mapping[str, Any] | None = None,
    ) -> _Series:
        """The series of a key the hot table lacks, made now (call with the lock held): the
        overflow series once the table is full. ``frozen``: the set's attributes copied and
        cleaned already (by its series in the other table of a counted pair)."""
        if len(self._current) >= CARDINALITY_LIMIT:
            series = self._current.get(_OVERFLOW_KEY)
            if series is None:
                series = self._current[_OVERFLOW_KEY] = _Series(
                    _OVERFLOW, len(self._bounds) + 1, time_ns()
                )
            return series
        if frozen is None:
            # A copy, so a caller's dict can change, with sequences as tuples (as the SDK cleans
            # them). Copied whole, and cleaned value by value only if a value is unhashable (a
            # list): the clean way alone cost a new set (a new tool name) 7,000 instructions.
            frozen = dict(attributes) if attributes else {}
            try:
                hash(tuple(frozen.values()))
            except TypeError:
                frozen = {k: _hashable(v) for k, v in frozen.items()}
        series = self._current[key] = _Series(frozen, len(self._bounds) + 1, time_ns())
        return series

    def fold(self) -> None:
        """Move what was measured since the last fold into the cumulative and pending tables."""
        with self._lock:
            taken, self._current = self._current, {}
        tables = [
            (self.cumulative, self.cumulative_readers),
            *((table, (reader,)) for reader, table in self.pending.items()),
        ]
        for series in taken.values():
            key = _normal_key(series.attributes)
            for table, readers in tables:
                # Each table overflows on its own: a delta reader's pending table may have room
                # where the cumulative one has none.
                slot = key
                kept = table.get(slot)
                if kept is None and len(table) >= CARDINALITY_LIMIT:
                    slot = _OVERFLOW_KEY
                    kept = table.get(slot)
                if kept is None:
                    attributes = series.attributes if slot == key else _OVERFLOW
                    kept = table[slot] = _Series(attributes, len(self._bounds) + 1, series.start_ns)
                kept.merge(series)
                if series.seen:
                    for reader in readers:
                        reservoir = self.reservoirs[reader].get(slot)
                        if reservoir is None:
                            reservoir = self.reservoirs[reader][slot] = _Reservoir()
                        self._keep(reservoir, series)

    @staticmethod
    def _keep(reservoir: _Reservoir, series: _Series) -> None:
        """Fold ``series``' exemplar candidates into a reader's reservoir: the latest per
        bucket (the SDK's ``AlignedHistogramBucketExemplarReservoir``)."""
        reservoir.samples.update(series.samples)
        reservoir.seen += series.seen

    @abstractmethod
    def data(
        self,
        series: Sequence[tuple[_Key, _Series]],
        reservoirs: Mapping[_Key, _Reservoir],
        temporality: AggregationTemporality,
        start: int,
        now: int,
    ) -> Sum | Histogram:
        """The OTel data of ``series`` (with the exemplars in ``reservoirs``) as a reader with
        ``temporality`` wants it (``start``: the previous collection for delta, 0 for
        cumulative: each series' own start)."""


class LocalCounter(_LocalInstrument):
    """A monotonic counter with the SDK ``Counter``'s ``add(amount, attributes)``.

    Example:
        >>> calls = producer.counter("otelhooks.tool.calls", unit="{call}")
        >>> calls.add(1, {"gen_ai.tool.name": "readFile"})
    """

    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        if amount < 0:
            _log.warning("Add amount must be non-negative on Counter %s.", self.name)
            return
        with self._lock:
            self._series(attributes).value += amount

    @staticmethod
    def _keep(reservoir: _Reservoir, series: _Series) -> None:
        """Fold ``series``' pick into a reader's reservoir so it stays a uniform pick of all
        offers: the newer one wins with probability newer offers / all offers."""
        seen = reservoir.seen + series.seen
        if series.samples and (not reservoir.samples or random() * seen < series.seen):
            reservoir.samples = dict(series.samples)
        reservoir.seen = seen

    def data(
        self,
        series: Sequence[tuple[_Key, _Series]],
        reservoirs: Mapping[_Key, _Reservoir],
        temporality: AggregationTemporality,
        start: int,
        now: int,
    ) -> Sum:
        points = [
            NumberDataPoint(
                attributes=s.attributes,
                start_time_unix_nano=start or s.start_ns,
                time_unix_nano=now,
                value=s.value,
                exemplars=_exemplars(reservoirs.get(key), s.attributes),
            )
            for key, s in series
        ]
        return Sum(data_points=points, aggregation_temporality=temporality, is_monotonic=True)


class LocalHistogram(_LocalInstrument):
    """An explicit-bucket histogram with the SDK ``Histogram``'s ``record(value, attributes)``.

    Example:
        >>> duration = producer.histogram("gen_ai.execute_tool.duration", bounds=(0.1, 1, 10))
        >>> duration.record(0.25, {"gen_ai.tool.name": "readFile"})
    """

    def __init__(
        self,
        name: str,
        unit: str,
        description: str,
        bounds: Sequence[float],
        exemplar_filter: ExemplarFilter | None = None,
    ) -> None:
        super().__init__(name, unit, description, exemplar_filter)
        self._bounds = tuple(bounds)

    def record(self, value: float, attributes: Mapping[str, Any] | None = None) -> None:
        if value < 0:
            _log.warning("Record amount must be non-negative on Histogram %s.", self.name)
            return
        bucket = bisect_left(self._bounds, value)  # upper bounds inclusive, as the SDK does
        with self._lock:
            series = self._series(attributes)
            series.count += 1
            series.sum += value
            if value < series.min:
                series.min = value
            if value > series.max:
                series.max = value
            series.buckets[bucket] += 1

    def data(
        self,
        series: Sequence[tuple[_Key, _Series]],
        reservoirs: Mapping[_Key, _Reservoir],
        temporality: AggregationTemporality,
        start: int,
        now: int,
    ) -> Histogram:
        points = [
            HistogramDataPoint(
                attributes=s.attributes,
                start_time_unix_nano=start or s.start_ns,
                time_unix_nano=now,
                count=s.count,
                sum=s.sum,
                bucket_counts=tuple(s.buckets),
                explicit_bounds=self._bounds,
                min=s.min,
                max=s.max,
                exemplars=_exemplars(reservoirs.get(key), s.attributes),
            )
            for key, s in series
            if s.count
        ]
        return Histogram(data_points=points, aggregation_temporality=temporality)


# With an exemplar filter the instruments are these subclasses, so the plain ones' hot path
# does not even test for sampling.


def _offer_uniform(series: _Series, sample: _Sample) -> None:
    """The SDK's SimpleFixedSizeExemplarReservoir (size 1): the n-th offer replaces the kept
    one with probability 1/n, a uniform pick of the interval's offers."""
    series.seen += 1
    if series.seen == 1 or random() * series.seen < 1:
        series.samples[0] = sample


class _SampledCounter(LocalCounter):
    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        if amount < 0:
            _log.warning("Add amount must be non-negative on Counter %s.", self.name)
            return
        sample = self._sample(amount, attributes) if self._sample is not None else None
        with self._lock:
            series = self._series(attributes)
            series.value += amount
            if sample is not None:
                _offer_uniform(series, sample)


class _SampledHistogram(LocalHistogram):
    def record(self, value: float, attributes: Mapping[str, Any] | None = None) -> None:
        if value < 0:
            _log.warning("Record amount must be non-negative on Histogram %s.", self.name)
            return
        bucket = bisect_left(self._bounds, value)
        sample = self._sample(value, attributes) if self._sample is not None else None
        with self._lock:
            series = self._series(attributes)
            series.observe(value, bucket)
            if sample is not None:
                # The SDK's AlignedHistogramBucketExemplarReservoir: the latest per bucket.
                series.seen += 1
                series.samples[bucket] = sample


class LocalCountedHistogram:
    """``record(value, attributes)``: ``counter.add(1, attributes)`` and
    ``histogram.record(value, attributes)`` (a tool call's count and duration), with the same
    data, for one attribute key and one exemplar decision instead of two.

    Example:
        >>> tool_call = producer.counted(calls, duration)
        >>> tool_call.record(0.25, {"gen_ai.tool.name": "readFile"})
    """

    __slots__ = ("_counter", "_histogram")

    def __init__(self, counter: LocalCounter, histogram: LocalHistogram) -> None:
        self._counter = counter
        self._histogram = histogram
        # One lock for the pair, so a call takes it once (each fold still takes it alone).
        histogram._lock = counter._lock

    def record(self, value: float, attributes: Mapping[str, Any] | None = None) -> None:
        counter, histogram = self._counter, self._histogram
        if value < 0:
            counter.add(1, attributes)
            histogram.record(value, attributes)  # warns and drops, as apart
            return
        bucket = bisect_left(histogram._bounds, value)
        # _key_of, inlined: the default hot path (a tool call's count and duration).
        key: _Key = (
            # A MetricAttributes carries its key; otherwise the items in insertion order (the
            # same set in another order is merged when folded).
            attributes.key
            if type(attributes) is MetricAttributes
            else tuple(attributes.items())
            if attributes
            else ()
        )
        with counter._lock:
            # _keyed, inlined too (a method call each was a fifth of the measurement).
            try:
                total = counter._current.get(key)
                series = histogram._current.get(key)
            except TypeError:  # a list value: _keyed builds the key that hashes
                key, total = counter._keyed(key, attributes)
                series = histogram._keyed(key, attributes)[1]
            if total is None:
                total = counter._new(key, attributes)
            if series is None:
                # The counter's copy of the set serves here too (unless it overflowed).
                shared = total.attributes
                series = histogram._new(key, attributes, None if shared is _OVERFLOW else shared)
            total.value += 1
            series.count += 1
            series.sum += value
            if value < series.min:
                series.min = value
            if value > series.max:
                series.max = value
            series.buckets[bucket] += 1

    def record_many(
        self, values: Sequence[float], attributes: Mapping[str, Any] | None = None
    ) -> None:
        """``record(value, attributes)`` for each of ``values``, with one series look-up and
        one lock for all of them (the observer worker records a batch's run times at once).

        Example:
            >>> hook_run.record_many([0.001, 0.002], attrs)
        """
        counter, histogram = self._counter, self._histogram
        bounds = histogram._bounds
        if min(values, default=0.0) < 0:
            for value in values:
                self.record(value, attributes)
            return
        buckets = [bisect_left(bounds, value) for value in values]
        with counter._lock:
            key, total = counter._keyed(_key_of(attributes), attributes)
            series = histogram._keyed(key, attributes)[1]
            total.value += len(values)
            # _Series.observe inlined, in locals (a call per value was half of counting a
            # batch of observer run times); added one by one, as the SDK adds them.
            counts, total_sum, low, high = series.buckets, series.sum, series.min, series.max
            for value, bucket in zip(values, buckets, strict=True):
                total_sum += value
                if value < low:
                    low = value
                if value > high:
                    high = value
                counts[bucket] += 1
            series.count += len(values)
            series.sum, series.min, series.max = total_sum, low, high


class _SampledCountedHistogram(LocalCountedHistogram):
    """With exemplars: one exemplar decision (span look-up) for both when the filter ignores
    the value, as the SDK's default trace-based one does."""

    __slots__ = ()

    def record_many(
        self, values: Sequence[float], attributes: Mapping[str, Any] | None = None
    ) -> None:
        for value in values:  # each value is offered as an exemplar on its own
            self.record(value, attributes)

    def record(self, value: float, attributes: Mapping[str, Any] | None = None) -> None:
        counter, histogram = self._counter, self._histogram
        sample_of = counter._sample
        if value < 0 or sample_of is None or not counter._value_blind:
            counter.add(1, attributes)
            histogram.record(value, attributes)
            return
        sample = sample_of(1, attributes)
        bucket = bisect_left(histogram._bounds, value)
        with counter._lock:
            key, series = counter._keyed(_key_of(attributes), attributes)
            series.value += 1
            if sample is not None:
                _offer_uniform(series, sample)
            series = histogram._keyed(key, attributes)[1]
            series.observe(value, bucket)
            if sample is not None:
                series.seen += 1
                series.samples[bucket] = (value, *sample[1:])
