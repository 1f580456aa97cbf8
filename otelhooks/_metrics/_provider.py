"""otelhooks' instruments on a user's own SDK ``MeterProvider``, aggregated in process where
that exports exactly what the provider's SDK instruments would.

``AgentMetrics(meter_provider)`` (and ``AgentMetrics()`` on the global provider) asks
:func:`instrument_source` for its instruments. For an SDK ``MeterProvider`` it works out, per
instrument, what the provider would make of the SDK instrument of that name: the view that
matches it (by the SDK's own matching, on the real instrument from the provider's ``otelhooks``
meter), each reader's preferred aggregation and cardinality limit. When that is a monotonic sum,
or an explicit-bucket histogram keeping min and max with the same boundaries for every reader
(those of the view, of the reader's preferred aggregation, or the SDK's defaults 0, 5 … 10000
when nothing gives any), under its own name and description, with every attribute, the default
exemplar reservoirs and the 2,000-series limit, the instrument is a local one
(:mod:`._local`) of a :class:`~._producer.LocalMetricProducer` attached to the provider's
readers, with the provider's exemplar filter: same names, units, descriptions, boundaries,
temporality per reader, exemplars, resource and ``otelhooks`` scope, at a fraction of the cost
(tests/test_user_meter_provider.py holds the exports equal). Otherwise (a view renames, drops
or re-keys it, an exponential histogram, another limit, a shut-down or disabled provider, an
SDK whose internals below moved) it is the SDK's instrument, and the reason is logged once at
debug level. ``AgentMetrics(..., sdk_instruments=True)`` always takes the SDK's.

One :class:`_ProviderSource` per provider (a ``WeakKeyDictionary``): every ``AgentMetrics`` on
it shares its instruments, as every ``create_counter`` of one name on one meter gives one
instrument; the first ``AgentMetrics`` on a provider decides between local and SDK instruments
for all that come after (``configure()`` registers its own provider's producer here, so
``AgentMetrics()`` on the global provider it set shares its instruments).

Readers added with ``add_metric_reader`` later are attached (counting from then on, as the
SDK's storage for them does), removed ones detached: the provider's two methods are wrapped on
the instance. What a later reader prefers is not applied to instruments already local (a
warning says so); a meter configurator set later (``_set_meter_configurator``) is not followed.

SDK internals read (any missing or changed: the SDK's instruments, never an error): the
provider's ``_sdk_config`` (``views``, ``exemplar_filter``, ``resource``), ``_shutdown`` and
``_measurement_consumer._reader_storages`` (its readers); the meter's ``_is_enabled``; a view's
``_match``, ``_name``, ``_description``, ``_attribute_keys``, ``_aggregation``,
``_exemplar_reservoir_factory`` and ``_aggregation_cardinality_limit``, and the default
``_default_reservoir_factory``; ``ExplicitBucketHistogramAggregation._boundaries`` and
``_record_min_max``; a histogram's ``_advisory``; the SDK's default boundaries and cardinality
limit; a reader's ``_instrument_class_aggregation`` and ``_instrument_class_cardinality_limit``
(and what :mod:`._producer` reads).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import threading
import weakref
from collections.abc import Sequence
from typing import Any, Final

from opentelemetry import metrics
from opentelemetry.sdk.metrics import Meter, MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.metrics.view import (
    DefaultAggregation,
    ExplicitBucketHistogramAggregation,
    SumAggregation,
)
from opentelemetry.sdk.resources import Resource

from otelhooks._metrics._local import CARDINALITY_LIMIT, LocalCounter, LocalHistogram
from otelhooks._metrics._producer import LocalMetricProducer

try:  # SDK internals: without them, the SDK's instruments
    from opentelemetry.sdk.metrics._internal._view_instrument_match import (
        _DEFAULT_CARDINALITY_LIMIT,
    )
    from opentelemetry.sdk.metrics._internal.aggregation import (
        _DEFAULT_EXPLICIT_BUCKET_HISTOGRAM_AGGREGATION_BOUNDARIES,
    )
    from opentelemetry.sdk.metrics._internal.instrument import _Counter, _Histogram
    from opentelemetry.sdk.metrics._internal.view import _default_reservoir_factory

    _INTERNALS: bool = True
except ImportError:  # pragma: no cover - another SDK
    _INTERNALS = False

__all__ = ["adopt", "instrument_source"]

_log = logging.getLogger(__name__)

SCOPE: Final = "otelhooks"


class _Unsupported(Exception):
    """Why the SDK's instrument is needed (the message is logged)."""


class _ProducerSource:
    """Instruments of a producer: all local, with the boundaries ``AgentMetrics`` gives."""

    def __init__(self, producer: LocalMetricProducer) -> None:
        self.producer = producer

    def counter(self, name: str, unit: str, description: str) -> Any:
        return self.producer.counter(name, unit=unit, description=description)

    def histogram(self, name: str, unit: str, description: str, bounds: Sequence[float]) -> Any:
        return self.producer.histogram(name, bounds=bounds, unit=unit, description=description)


class _ProviderProducer(LocalMetricProducer):
    """A producer for a user's provider: its resource is the provider's, read at collection
    (the SDK merges a new process's resource into it after a fork)."""

    def __init__(self, config: Any) -> None:
        super().__init__(config.resource, SCOPE, exemplar_filter=config.exemplar_filter)
        self._config = config

    def _current_resource(self) -> Resource:
        resource: Resource = self._config.resource
        return resource


class _ProviderSource(_ProducerSource):
    """otelhooks' instruments on one SDK ``MeterProvider``: each local when that exports what
    the provider's SDK instrument would, the SDK's otherwise (see the module docstring).

    Raises :class:`_Unsupported` when none can be local.
    """

    def __init__(self, provider: MeterProvider) -> None:
        if not _INTERNALS:
            raise _Unsupported("this SDK lacks the internals otelhooks reads")
        if type(provider) is not MeterProvider:
            raise _Unsupported(f"{type(provider).__name__} is not the SDK's MeterProvider itself")
        try:
            shut_down = provider._shutdown
            config = provider._sdk_config
            self._views = tuple(config.views)
            readers: list[MetricReader] = list(provider._measurement_consumer._reader_storages)
        except AttributeError as missing:
            raise _Unsupported(f"the SDK's MeterProvider changed ({missing})") from None
        if shut_down:
            raise _Unsupported("the MeterProvider is shut down")
        meter = provider.get_meter(SCOPE)
        if type(meter) is not Meter:
            raise _Unsupported("the MeterProvider gives a no-op meter (OTEL_SDK_DISABLED?)")
        if not meter._is_enabled():
            raise _Unsupported("the MeterProvider's meter configurator disables the meter")
        if any(getattr(r, "_collect", None) is None for r in readers):
            raise _Unsupported("a reader has no collect callback")
        self._meter = meter
        self._readers = readers
        self._lock = threading.Lock()
        self._decided: dict[tuple[str, str, str, str], Any] = {}
        super().__init__(_ProviderProducer(config))
        for reader in readers:
            self.producer.attach(reader)
        self._follow_readers(provider)

    def counter(self, name: str, unit: str, description: str) -> Any:
        with self._lock:
            identity = ("counter", name, unit, description)
            if identity not in self._decided:
                sdk = self._meter.create_counter(name, unit=unit, description=description)
                try:
                    _local_bounds(sdk, _Counter, self._views, self._readers)
                except _Unsupported as why:
                    _debug_once(f"{name}: the SDK's instrument ({why})")
                    self._decided[identity] = sdk
                else:
                    self._decided[identity] = super().counter(name, unit, description)
            return self._decided[identity]

    def histogram(self, name: str, unit: str, description: str, bounds: Sequence[float]) -> Any:
        """The histogram ``name``; ``bounds`` (metric_views()'s) are not used: the provider's
        views and readers give the boundaries, as they do to the SDK's histogram."""
        with self._lock:
            identity = ("histogram", name, unit, description)
            if identity not in self._decided:
                sdk = self._meter.create_histogram(name, unit=unit, description=description)
                try:
                    given = _local_bounds(sdk, _Histogram, self._views, self._readers)
                except _Unsupported as why:
                    _debug_once(f"{name}: the SDK's instrument ({why})")
                    self._decided[identity] = sdk
                else:
                    self._decided[identity] = super().histogram(name, unit, description, given)
            return self._decided[identity]

    def _follow_readers(self, provider: MeterProvider) -> None:
        """Attach readers the provider gets later, detach the ones it loses."""
        add = getattr(provider, "add_metric_reader", None)
        remove = getattr(provider, "remove_metric_reader", None)
        if add is None or remove is None:
            return
        producer, source = self.producer, weakref.ref(self)

        def add_metric_reader(reader: MetricReader) -> None:
            before = getattr(reader, "_collect", None)
            add(reader)
            after = getattr(reader, "_collect", None)
            if after is None or after is before:  # refused (registered already)
                return
            mine = source()
            if mine is not None:
                mine._adding(reader)
            producer.attach(reader, late=True)

        def remove_metric_reader(reader: MetricReader) -> None:
            remove(reader)
            if getattr(reader, "_collect", None) is None:
                producer.detach(reader)
                mine = source()
                if mine is not None:
                    with mine._lock:
                        mine._readers = [r for r in mine._readers if r is not reader]

        provider.add_metric_reader = add_metric_reader  # type: ignore[method-assign,assignment]
        provider.remove_metric_reader = remove_metric_reader  # type: ignore[method-assign,assignment]

    def _adding(self, reader: MetricReader) -> None:
        """Note a reader added to the provider; warn if it would aggregate otelhooks' local
        instruments otherwise than they do."""
        with self._lock:
            self._readers = [*self._readers, reader]
            for identity, instrument in self._decided.items():
                if not isinstance(instrument, (LocalCounter, LocalHistogram)):
                    continue
                what, name, unit, description = identity
                kind = _Counter if what == "counter" else _Histogram
                sdk = (
                    self._meter.create_counter(name, unit, description)
                    if kind is _Counter
                    else self._meter.create_histogram(name, unit, description)
                )
                try:
                    bounds = _local_bounds(sdk, kind, self._views, [reader])
                except _Unsupported as why:
                    differs = str(why)
                else:
                    if kind is _Counter or tuple(bounds) == tuple(instrument._bounds):
                        continue
                    differs = f"boundaries {bounds}"
                _log.warning(
                    "%s, added to the MeterProvider, gets %s aggregated in process as the "
                    "provider's other readers do, not as it prefers (%s); build AgentMetrics "
                    "with sdk_instruments=True for the SDK's instruments",
                    type(reader).__name__,
                    name,
                    differs,
                )


def _local_bounds(
    instrument: Any, kind: type, views: Sequence[Any], readers: Sequence[MetricReader]
) -> tuple[float, ...]:
    """The boundaries the provider gives the SDK histogram ``instrument`` (``()`` for a
    counter), if a local instrument exports the same for every reader; else
    :class:`_Unsupported`, saying why."""
    try:
        matching = [view for view in views if view._match(instrument)]
    except AttributeError as missing:
        raise _Unsupported(f"the SDK's View changed ({missing})") from None
    if len(matching) > 1:
        raise _Unsupported(f"{len(matching)} views match it: one stream each")
    aggregation: Any = None
    limit: int | None = None
    if matching:
        (view,) = matching
        try:
            if view._name not in (None, instrument.name):
                raise _Unsupported(f"a view renames it {view._name}")
            if view._description not in (None, instrument.description):
                raise _Unsupported("a view gives it another description")
            if view._attribute_keys is not None:
                raise _Unsupported("a view keeps only some of its attributes")
            if view._exemplar_reservoir_factory is not _default_reservoir_factory:
                raise _Unsupported("a view gives it another exemplar reservoir")
            limit = view._aggregation_cardinality_limit
            if not isinstance(view._aggregation, DefaultAggregation):
                aggregation = view._aggregation
        except AttributeError as missing:
            raise _Unsupported(f"the SDK's View changed ({missing})") from None
    found: set[tuple[float, ...]] = set()
    # With no reader yet: what a reader with the defaults would make of it.
    candidates: Sequence[MetricReader | None] = readers or [None]
    for reader in candidates:
        preferred = getattr(reader, "_instrument_class_aggregation", {})
        limits = getattr(reader, "_instrument_class_cardinality_limit", {})
        if reader is not None and not (preferred and limits):
            raise _Unsupported("the SDK's MetricReader changed")
        reader_limit = limit if limit is not None else limits.get(kind, _DEFAULT_CARDINALITY_LIMIT)
        if reader_limit != CARDINALITY_LIMIT:
            raise _Unsupported(f"a cardinality limit of {reader_limit}")
        chosen = aggregation or preferred.get(kind, DefaultAggregation())
        found.add(_bounds_of(chosen, instrument, kind))
    if len(found) > 1:
        raise _Unsupported("its readers aggregate it with different boundaries")
    (bounds,) = found
    return bounds


def _bounds_of(aggregation: Any, instrument: Any, kind: type) -> tuple[float, ...]:
    """The boundaries ``aggregation`` gives ``instrument`` (``()`` for a counter's sum)."""
    if kind is _Counter:
        if type(aggregation) in (DefaultAggregation, SumAggregation):
            return ()
        raise _Unsupported(f"aggregated with {type(aggregation).__name__}")
    if type(aggregation) is DefaultAggregation:
        given = None
    elif type(aggregation) is ExplicitBucketHistogramAggregation:
        if getattr(aggregation, "_record_min_max", None) is not True:
            raise _Unsupported("a histogram without min and max")
        given = aggregation._boundaries
    else:
        raise _Unsupported(f"aggregated with {type(aggregation).__name__}")
    if given is None:  # the instrument's advice, else the SDK's default boundaries
        advisory = getattr(instrument, "_advisory", None)
        given = getattr(advisory, "explicit_bucket_boundaries", None)
    if given is None:
        given = _DEFAULT_EXPLICIT_BUCKET_HISTOGRAM_AGGREGATION_BOUNDARIES
    bounds = tuple(given)
    valid = all(math.isfinite(b) for b in bounds) and all(
        a < b for a, b in itertools.pairwise(bounds)
    )
    if not valid:
        raise _Unsupported(f"boundaries the SDK refuses: {bounds}")
    return bounds


_sources: weakref.WeakKeyDictionary[Any, _ProducerSource | None] = weakref.WeakKeyDictionary()
_sources_lock = threading.Lock()
_logged: set[str] = set()


def _debug_once(message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        _log.debug("AgentMetrics: %s", message)


def instrument_source(
    provider: metrics.MeterProvider, *, sdk_instruments: bool = False
) -> _ProducerSource | None:
    """Where ``AgentMetrics`` on ``provider`` gets its instruments: a source of local ones
    (some may still be the SDK's, per :class:`_ProviderSource`), or None for the SDK's."""
    with _sources_lock:
        try:
            known = _sources[provider]
        except (KeyError, TypeError):  # TypeError: not weakly referable
            pass
        else:
            if known is not None and sdk_instruments:
                _log.warning(
                    "AgentMetrics(sdk_instruments=True) on a MeterProvider whose otelhooks "
                    "instruments already aggregate in process: both export, as two streams of "
                    "each name; pass sdk_instruments=True to the first AgentMetrics on it"
                )
                return None
            return known
        if sdk_instruments:
            source = None
        else:
            try:
                source = _ProviderSource(provider)  # type: ignore[arg-type]
            except _Unsupported as why:
                _debug_once(f"the SDK's instruments: {why}")
                source = None
            except Exception as error:  # an SDK otelhooks does not know: its instruments
                _debug_once(f"the SDK's instruments: reading the MeterProvider failed ({error!r})")
                source = None
        with contextlib.suppress(TypeError):  # not weakly referable: decided each time
            _sources[provider] = source  # later AgentMetrics on it decide the same
        return source


def adopt(provider: MeterProvider, producer: LocalMetricProducer) -> None:
    """Make ``producer`` (attached to every reader of ``provider``, with instruments for the
    provider's views) the source of every ``AgentMetrics`` on ``provider``."""
    with _sources_lock:
        _sources[provider] = _ProducerSource(producer)
