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


def _gather(attributes: Mapping[str, Any] | None, texts: list[str]) -> None:
    """Append each key and each text value of ``attributes`` (a sequence's too) to ``texts``."""
    if attributes is None:
        return
    # Each value is read once: the SDK's attribute mapping answers every read with a Python call.
    for key, value in attributes.items():
        texts.append(key)
        if type(value) is str:
            texts.append(value)
        elif type(value) is tuple:
            texts.extend(v for v in value if type(v) is str)


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
    texts = [span.name] if description is None else [span.name, description]
    _gather(span.attributes, texts)
    for event in events:
        texts.append(event.name)
        _gather(event.attributes, texts)
    for link in links:
        _gather(link.attributes, texts)
    # All-ASCII text, the usual case, is known from a flag of each string, checked in one C
    # loop; only non-ASCII text can hold a lone surrogate, and only it is scanned.
    if all(map(str.isascii, texts)) or all(clean_text(text) is text for text in texts):
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
