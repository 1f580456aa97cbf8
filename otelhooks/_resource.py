"""The resource of every TracerProvider otelhooks makes."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits
from opentelemetry.util.types import AttributeValue

from otelhooks import _semconv as sc

__all__ = ["recording_resource"]


def recording_resource(attributes: Mapping[str, AttributeValue]) -> Resource:
    """``Resource.create(attributes)``, saying the span attribute value length limit in effect
    (``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``, else ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``, read
    as a provider made without ``span_limits`` reads it) when one is: a recording does not
    otherwise say it, and replay must know which of its names and ids may have been cut.
    """
    limit = SpanLimits().max_span_attribute_length
    if limit is None:
        return Resource.create(attributes)
    return Resource.create({**attributes, sc.ATTRIBUTE_VALUE_LENGTH_LIMIT: limit})
