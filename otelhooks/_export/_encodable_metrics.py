"""Metric exports whose every field the OTLP encoder can encode.

The OTLP encoder fails a whole metrics export on a lone surrogate (see
:mod:`otelhooks._export._encodable`) in a meter's name, version or schema URL, or in an
instrument's description (a user's ``meter_provider.get_meter("caf\\udce9")``), and on a sum or
gauge past 64 bits (``counter.add(2**64)``): every metric of the provider, otelhooks' own
``otelhooks.dropped`` among them, was lost at every export for the rest of the run, since a
cumulative sum stays where it is. It drops, with a traceback each time, a data point's or an
exemplar's attribute it cannot encode. :func:`encodable_metrics` gives the data with each of
these repaired by the span rule (U+FFFD; a key or value of another type, its text), and a whole
number past 64 bits as a float.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from opentelemetry.sdk.metrics.export import MetricsData

from otelhooks._export._encodable import (
    encodable_resource,
    encodable_scope,
    fixed_attributes,
    text,
)

__all__ = ["encodable_metrics"]

_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1  # protobuf's sfixed64 (as_int)


def encodable_metrics(data: MetricsData) -> MetricsData:
    """``data`` itself when the OTLP encoder takes all of it, else a repaired copy."""
    resources = [_resource_metrics(rm) for rm in data.resource_metrics]
    if all(new is old for new, old in zip(resources, data.resource_metrics, strict=True)):
        return data
    return replace(data, resource_metrics=resources)


def _resource_metrics(rm: Any) -> Any:
    resource = encodable_resource(rm.resource)
    scopes = [_scope_metrics(sm) for sm in rm.scope_metrics]
    if resource is rm.resource and all(
        new is old for new, old in zip(scopes, rm.scope_metrics, strict=True)
    ):
        return rm
    return replace(rm, resource=resource, scope_metrics=scopes, schema_url=text(rm.schema_url))


def _scope_metrics(sm: Any) -> Any:
    scope = encodable_scope(sm.scope)
    metrics = [_metric(metric) for metric in sm.metrics]
    if scope is sm.scope and all(new is old for new, old in zip(metrics, sm.metrics, strict=True)):
        return sm
    return replace(sm, scope=scope, metrics=metrics, schema_url=text(sm.schema_url))


def _metric(metric: Any) -> Any:
    name, description, unit = metric.name, metric.description, metric.unit
    data = metric.data
    points = [_point(point) for point in data.data_points]
    if (
        text(name) is name
        and text(description) is description
        and text(unit) is unit
        and all(new is old for new, old in zip(points, data.data_points, strict=True))
    ):
        return metric
    return replace(
        metric,
        name=text(name) or "",
        description=text(description),
        unit=text(unit),
        data=replace(data, data_points=points),
    )


def _point(point: Any) -> Any:
    attributes = fixed_attributes(point.attributes)
    exemplars = [_exemplar(e) for e in point.exemplars]
    value = getattr(point, "value", None)  # a sum's or gauge's; a histogram's fields are floats
    if (
        attributes is point.attributes
        and _number(value) is value
        and all(new is old for new, old in zip(exemplars, point.exemplars, strict=True))
    ):
        return point
    changes: dict[str, Any] = {"attributes": attributes, "exemplars": exemplars}
    if hasattr(point, "value"):
        changes["value"] = _number(value)
    return replace(point, **changes)


def _exemplar(exemplar: Any) -> Any:
    attributes = fixed_attributes(exemplar.filtered_attributes)
    value = exemplar.value
    if attributes is exemplar.filtered_attributes and _number(value) is value:
        return exemplar
    return replace(exemplar, filtered_attributes=attributes, value=_number(value))


def _number(value: Any) -> Any:
    """``value`` when the encoder takes it, else the float nearest to it."""
    if type(value) is not int or _INT_MIN <= value <= _INT_MAX:
        return value
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")
