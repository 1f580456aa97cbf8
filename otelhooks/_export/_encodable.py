"""Spans whose text every exporter can encode.

A Python ``str`` may hold a lone surrogate (``"\\udce9"``: a file name that is not UTF-8, read
with ``os.fsdecode``; a ``\\ud800`` escape in JSON an agent or a model wrote), which UTF-8, and so
protobuf and OTLP/JSON, cannot encode. The OTLP encoder drops such an attribute with a traceback,
and fails the whole request on such a span name, event name or status message: one tool call
whose error message named such a file lost every span of its batch (up to 512, other sessions'
too), after five minutes of retries. :func:`encodable` gives the span with each lone surrogate
replaced by U+FFFD (:func:`otelhooks._encoding.clean_text`, the rule for every other output).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Link, Status

from otelhooks._encoding import clean_text

__all__ = ["encodable"]


def _ok(text: str) -> bool:
    # isascii() is a flag read: the usual all-ASCII text costs no scan.
    return text.isascii() or clean_text(text) is text


def _attributes_ok(attributes: Mapping[str, Any] | None) -> bool:
    if not attributes:
        return True
    for key, value in attributes.items():
        if not key.isascii() and not _ok(key):
            return False
        if type(value) is str:
            if not value.isascii() and not _ok(value):
                return False
        elif type(value) is tuple and not all(_ok(v) for v in value if type(v) is str):
            return False
    return True


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, tuple):
        return tuple(clean_text(v) if isinstance(v, str) else v for v in value)
    return value


def _cleaned(attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if attributes is None:
        return None
    return {clean_text(key): _clean(value) for key, value in attributes.items()}


def encodable(span: ReadableSpan) -> ReadableSpan:
    """``span`` itself when all its text encodes as UTF-8, else a copy whose text does."""
    description = span.status.description
    events, links = span.events, span.links
    if (
        _ok(span.name)
        and (description is None or _ok(description))
        and _attributes_ok(span.attributes)
        and (not events or all(_ok(e.name) and _attributes_ok(e.attributes) for e in events))
        and (not links or all(_attributes_ok(link.attributes) for link in links))
    ):
        return span
    return ReadableSpan(
        name=clean_text(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=_cleaned(span.attributes),
        events=[Event(clean_text(e.name), _cleaned(e.attributes), e.timestamp) for e in events],
        links=[Link(link.context, _cleaned(link.attributes)) for link in links],
        kind=span.kind,
        status=Status(span.status.status_code, description and clean_text(description)),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
