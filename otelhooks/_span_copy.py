"""A finished span as it is but for some of its fields: the one way otelhooks copies a
``ReadableSpan`` it changes on the way to an exporter (a price added, a CLI's span moved into
its session's trace, the links between the two spans of one tool use)."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link, SpanContext
from opentelemetry.util.types import Attributes

__all__ = ["altered"]


def altered(
    span: ReadableSpan,
    *,
    context: SpanContext | None = None,
    parent: SpanContext | None = None,
    attributes: Attributes = None,
    links: Sequence[Link] | None = None,
) -> ReadableSpan:
    """A copy of ``span`` with the fields given; a field left ``None`` is the span's own (a
    copy never drops a parent: a span is ended, its fields cannot be set, so this is how one
    changes)."""
    return ReadableSpan(
        name=span.name,
        context=span.context if context is None else context,
        parent=span.parent if parent is None else parent,
        resource=span.resource,
        attributes=span.attributes if attributes is None else attributes,
        events=span.events,
        links=span.links if links is None else links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
