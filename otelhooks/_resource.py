"""What every provider otelhooks makes reads of the ``OTEL_*`` environment: its resource, its span
limits, its exemplar filter; a value the SDK cannot read is logged and taken as unset, never an
error (a hook process that raised on it ended with exit 1, and the CLI ran the tool)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Final

import structlog
from opentelemetry.sdk.environment_variables import (
    OTEL_ATTRIBUTE_COUNT_LIMIT,
    OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT,
    OTEL_LINK_ATTRIBUTE_COUNT_LIMIT,
    OTEL_METRICS_EXEMPLAR_FILTER,
    OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT,
    OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_SPAN_EVENT_COUNT_LIMIT,
    OTEL_SPAN_LINK_COUNT_LIMIT,
)
from opentelemetry.sdk.metrics import (
    AlwaysOffExemplarFilter,
    AlwaysOnExemplarFilter,
    ExemplarFilter,
    TraceBasedExemplarFilter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits
from opentelemetry.util.types import AttributeValue

from otelhooks import _semconv as sc

__all__ = ["exemplar_filter", "recording_resource", "span_limits"]

_log = structlog.get_logger("otelhooks")
# the specification's default for every count limit (sdk-environment-variables.md)
_DEFAULT_COUNT: Final = 128
_COUNTS: Final = (
    ("max_events", OTEL_SPAN_EVENT_COUNT_LIMIT),
    ("max_links", OTEL_SPAN_LINK_COUNT_LIMIT),
)
# limits whose default is the general one's (``OTEL_ATTRIBUTE_COUNT_LIMIT``)
_ATTRIBUTE_COUNTS: Final = (
    ("max_span_attributes", OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT),
    ("max_event_attributes", OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT),
    ("max_link_attributes", OTEL_LINK_ATTRIBUTE_COUNT_LIMIT),
)


def span_limits() -> SpanLimits:
    """The span limits the ``OTEL_*`` variables set, as ``SpanLimits()`` reads them; a variable
    it cannot read (``abc``, ``-1``, ``1e3``) is logged and counts as unset.

    ``SpanLimits()`` raises ``ValueError`` for such a value, and a TracerProvider made without
    ``span_limits`` makes one: a typo in the environment (which Codex CLI and Gemini CLI hand
    their hooks) ended every hook process with exit 1, and the CLI ran the tool its guard
    denies. A limit shapes what a span records, never a decision.

    Example:
        >>> span_limits().max_events >= 0
        True
    """
    try:
        return SpanLimits()
    except ValueError:
        pass
    bad = {name for name in _NAMES if not _readable(os.environ.get(name))}
    for name in sorted(bad):
        _log.warning("invalid environment variable, using default", var=name)
    # the general limits first (the others default to them), the others held still meanwhile
    general = SpanLimits(
        max_attributes=_DEFAULT_COUNT if OTEL_ATTRIBUTE_COUNT_LIMIT in bad else None,
        max_attribute_length=SpanLimits.UNSET if OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT in bad else None,
        **dict.fromkeys([param for param, _ in _COUNTS + _ATTRIBUTE_COUNTS], 0),
        max_span_attribute_length=0,
    )
    length = (
        SpanLimits.UNSET if general.max_attribute_length is None else general.max_attribute_length
    )
    given: dict[str, int | None] = {
        "max_attributes": general.max_attributes,
        "max_attribute_length": length,
        "max_span_attribute_length": length
        if OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT in bad
        else None,
    }
    given.update((param, _DEFAULT_COUNT if name in bad else None) for param, name in _COUNTS)
    given.update(
        (param, general.max_attributes if name in bad else None)
        for param, name in _ATTRIBUTE_COUNTS
    )
    return SpanLimits(**given)


_NAMES: Final = frozenset(
    [OTEL_ATTRIBUTE_COUNT_LIMIT, OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT]
    + [name for _, name in _COUNTS + _ATTRIBUTE_COUNTS]
    + [OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT]
)


def _readable(value: str | None) -> bool:
    """Whether ``SpanLimits()`` reads ``value`` (unset, empty, or a non-negative integer)."""
    if value is None or not value.strip():
        return True
    try:
        return int(value.strip()) >= 0
    except ValueError:
        return False


# the SDK's names for them, as ``MeterProvider`` reads ``OTEL_METRICS_EXEMPLAR_FILTER`` (exactly)
_EXEMPLAR_FILTERS: Final[dict[str, Callable[[], ExemplarFilter]]] = {
    "trace_based": TraceBasedExemplarFilter,
    "always_on": AlwaysOnExemplarFilter,
    "always_off": AlwaysOffExemplarFilter,
}


def exemplar_filter() -> ExemplarFilter:
    """The exemplar filter ``OTEL_METRICS_EXEMPLAR_FILTER`` names, as a ``MeterProvider`` made
    without one reads it (trace-based when unset); a name it does not know (for which the SDK
    raises ``ValueError``) is logged and trace-based.

    Example:
        >>> type(exemplar_filter()).__name__
        'TraceBasedExemplarFilter'
    """
    name = os.environ.get(OTEL_METRICS_EXEMPLAR_FILTER, "trace_based")
    if name not in _EXEMPLAR_FILTERS:
        _log.warning(
            "invalid environment variable, using default", var=OTEL_METRICS_EXEMPLAR_FILTER
        )
        name = "trace_based"
    return _EXEMPLAR_FILTERS[name]()


def recording_resource(attributes: Mapping[str, AttributeValue]) -> Resource:
    """``Resource.create(attributes)``, saying the span attribute value length limit in effect
    (``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``, else ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``, read
    as :func:`span_limits` reads it) when one is: a recording does not otherwise say it, and
    replay must know which of its names and ids may have been cut.
    """
    limit = span_limits().max_span_attribute_length
    if limit is None:
        return Resource.create(attributes)
    return Resource.create({**attributes, sc.ATTRIBUTE_VALUE_LENGTH_LIMIT: limit})
