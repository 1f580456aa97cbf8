"""Exemplars for the in-process instruments, as the SDK's default reservoirs keep them.

With an exemplar filter (``configure(sdk_metrics=True)`` passes the provider's own, from
``OTEL_METRICS_EXEMPLAR_FILTER``), a measurement the filter lets through is a *sample*: its value,
time, attributes and the current span's ids. Per reader and collection a histogram keeps the
latest sample per bucket (the SDK's ``AlignedHistogramBucketExemplarReservoir``), a counter a
uniform pick of its samples (``SimpleFixedSizeExemplarReservoir`` of size 1), and an exemplar
carries the measurement's attributes that its point does not. Kept apart from the instruments
(:mod:`._local`) so their plain hot path never tests for sampling.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from time import time_ns
from typing import Any

from opentelemetry.context import get_current
from opentelemetry.sdk.environment_variables import OTEL_METRICS_EXEMPLAR_FILTER
from opentelemetry.sdk.metrics import (
    AlwaysOffExemplarFilter,
    AlwaysOnExemplarFilter,
    Exemplar,
    ExemplarFilter,
    TraceBasedExemplarFilter,
)
from opentelemetry.trace import INVALID_SPAN, get_current_span

__all__ = ["exemplar_filter_from_env"]

# An exemplar candidate: value, time, the measurement's attributes, span id, trace id.
_Sample = tuple[float, int, Mapping[str, Any] | None, int | None, int | None]


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class _Reservoir:
    """One reader's exemplars of one series since that reader last collected."""

    __slots__ = ("samples", "seen")

    def __init__(self) -> None:
        self.seen = 0
        self.samples: dict[int, _Sample] = {}


_Sampler = Callable[[float, Mapping[str, Any] | None], _Sample | None]


def _sampler(exemplar_filter: ExemplarFilter | None) -> tuple[_Sampler | None, bool]:
    """``(value, attributes) -> sample or None``: what ``exemplar_filter`` lets through, with
    the current span's ids, as the SDK's filter and reservoirs take them (None: no exemplars);
    and whether the decision ignores the value (then one decision serves two instruments)."""
    if exemplar_filter is None or isinstance(exemplar_filter, AlwaysOffExemplarFilter):
        return None, True
    if isinstance(exemplar_filter, TraceBasedExemplarFilter):

        def trace_based(value: float, attributes: Mapping[str, Any] | None) -> _Sample | None:
            # The SDK's default: only measurements made inside a sampled span.
            span = get_current_span()
            if span is INVALID_SPAN:
                return None
            ctx = span.get_span_context()
            if not ctx.trace_flags.sampled:
                return None
            return (value, time_ns(), attributes, ctx.span_id, ctx.trace_id)

        return trace_based, True
    chosen = exemplar_filter

    def filtered(value: float, attributes: Mapping[str, Any] | None) -> _Sample | None:
        now = time_ns()
        context = get_current()
        if not isinstance(chosen, AlwaysOnExemplarFilter) and not chosen.should_sample(
            value, now, attributes, context
        ):
            return None
        span = get_current_span(context)
        if span is INVALID_SPAN:
            return (value, now, attributes, None, None)
        ctx = span.get_span_context()
        return (value, now, attributes, ctx.span_id, ctx.trace_id)

    return filtered, isinstance(chosen, AlwaysOnExemplarFilter)


def exemplar_filter_from_env() -> ExemplarFilter:
    """The exemplar filter a ``MeterProvider`` built without one uses:
    ``OTEL_METRICS_EXEMPLAR_FILTER`` (``trace_based`` when unset, ``always_on``, ``always_off``)."""
    name = os.environ.get(OTEL_METRICS_EXEMPLAR_FILTER, "trace_based")
    filters: dict[str, type[ExemplarFilter]] = {
        "trace_based": TraceBasedExemplarFilter,
        "always_on": AlwaysOnExemplarFilter,
        "always_off": AlwaysOffExemplarFilter,
    }
    if name not in filters:
        raise ValueError(f"Unknown exemplar filter '{name}'.")  # the SDK's words
    return filters[name]()


def _exemplars(reservoir: _Reservoir | None, point: Mapping[str, Any]) -> list[Exemplar]:
    """The reservoir's exemplars by bucket, each with the measurement's attributes that the
    point does not carry (the SDK's ``filtered_attributes``: ``{}`` unless it overflowed)."""
    if reservoir is None:
        return []
    out = []
    for _, (value, at, attributes, span_id, trace_id) in sorted(reservoir.samples.items()):
        rest = (
            {k: _hashable(v) for k, v in attributes.items() if k not in point}
            if attributes
            else None
        )
        out.append(Exemplar(rest, value, at, span_id, trace_id))
    return out
