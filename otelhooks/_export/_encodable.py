"""Spans whose every field the OTLP encoder can encode.

A Python ``str`` may hold a lone surrogate (``"\\udce9"``: a file name that is not UTF-8, read
with ``os.fsdecode``; a ``\\ud800`` escape in JSON an agent or a model wrote; a variable such as
``OTEL_RESOURCE_ATTRIBUTES`` holding bytes that are not UTF-8), which UTF-8, and so protobuf and
OTLP/JSON, cannot encode. The OTLP encoder (the one of every OTLP exporter and of the traces
file) fails the whole request on such a span name, event name, status message, scope name,
version or schema URL, and on a name that is not a ``str``, a kind that is not a ``SpanKind``,
or a time that is not a whole number of nanoseconds from 0 to 2^64 - 1 (``start_time=
time.time()``): one such span lost every span of its batch (up to 512, other sessions' too), as
did a tracer a user named with such text, on every batch. It drops, with a traceback each time,
an attribute (the span's, an event's, a link's, the resource's or the scope's) whose key or text
it cannot encode or whose integer does not fit 64 bits.

:func:`encodable` gives the span with each of these repaired, the rule of every other output:
a lone surrogate becomes U+FFFD (:func:`otelhooks._encoding.clean_text`); an integer past 64
bits, a key or a value of another type becomes its text; a container nested past 20 levels
becomes its JSON text (a collector's decoder refuses a request nested past 100 messages); a time
becomes the nearest one the field holds; a kind, ``INTERNAL``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanKind, Status

from otelhooks._encoding import clean_text, dumps

__all__ = [
    "encodable",
    "encodable_batch",
    "encodable_resource",
    "encodable_scope",
    "fixed_attributes",
    "text",
]

_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1  # protobuf's int64 (AnyValue.int_value)
_TIME_MAX = 2**64 - 1  # fixed64 (a span's, an event's times)
# A receiver's protobuf decoder refuses a request nested past 100 messages (Python's, Java's
# default), and each level of a map is three (AnyValue, KeyValueList, KeyValue) under the six
# of the request down to an attribute: past this many levels a value is sent as its JSON text.
_MAX_NESTING = 20


def _ok(text: str) -> bool:
    # isascii() is a flag read: the usual all-ASCII text costs no scan.
    return text.isascii() or clean_text(text) is text


def text(value: Any) -> Any:
    """``value`` when it is ``None`` or a ``str`` UTF-8 can hold, else text that is."""
    if value is None or (type(value) is str and _ok(value)):
        return value
    return clean_text(value if isinstance(value, str) else _str(value))


def _str(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a value whose __str__ raises, or an int too long for str
        return f"{value:#x}" if isinstance(value, int) else f"<unrepresentable {type(value)}>"


def _attributes_ok(attributes: Mapping[str, Any] | None) -> bool:
    if not attributes:
        return True
    try:
        for key, value in attributes.items():
            if not key.isascii() and not _ok(key):
                return False
            kind = type(value)
            if kind is str:
                if not value.isascii() and not _ok(value):
                    return False
            elif kind is int:
                if not _INT_MIN <= value <= _INT_MAX:
                    return False
            elif kind is not bool and kind is not float and not _flat_ok(value):
                return False
    except AttributeError:  # a key that is not a str
        return False
    return True


def _flat_ok(value: Any) -> bool:
    """A tuple of scalars the encoder takes (what the SDK's attribute check lets through)."""
    if type(value) is not tuple:
        return value is None
    for item in value:
        kind = type(item)
        if kind is str:
            if not item.isascii() and not _ok(item):
                return False
        elif kind is int:
            if not _INT_MIN <= item <= _INT_MAX:
                return False
        elif kind is not bool and kind is not float and item is not None:
            return False
    return True


def _value(value: Any, depth: int) -> Any:
    if value is None or isinstance(value, bool | float | bytes):
        return value
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, int):
        return int(value) if _INT_MIN <= value <= _INT_MAX else _str(value)
    if isinstance(value, Mapping | Sequence | set | frozenset) and depth >= _MAX_NESTING:
        return dumps(value)  # the text of what is nested deeper, its content kept
    if isinstance(value, Mapping):
        return {text(key): _value(item, depth + 1) for key, item in value.items()}
    if isinstance(value, Sequence | set | frozenset):
        return tuple(_value(item, depth + 1) for item in value)
    return clean_text(_str(value))


def fixed_attributes(attributes: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``attributes`` itself when the encoder takes all of it, else a repaired copy."""
    if _attributes_ok(attributes) or attributes is None:
        return attributes
    return {text(key): _value(value, 1) for key, value in attributes.items()}


def _time(value: Any) -> int | None:
    if value is None or (type(value) is int and 0 <= value <= _TIME_MAX):
        return value
    try:
        number = float(value) if not isinstance(value, int) else value
    except (TypeError, ValueError):
        return None
    if isinstance(number, float) and not math.isfinite(number):
        return None if math.isnan(number) else (0 if number < 0 else _TIME_MAX)
    return min(max(int(number), 0), _TIME_MAX)


def encodable_resource(resource: Resource) -> Resource:
    """``resource`` itself when the encoder takes all of it, else a repaired copy."""
    attributes, schema_url = resource.attributes, resource.schema_url
    if _attributes_ok(attributes) and text(schema_url) is schema_url:
        return resource
    return Resource(fixed_attributes(attributes) or {}, text(schema_url))


def encodable_scope(scope: InstrumentationScope | None) -> InstrumentationScope | None:
    """``scope`` itself when the encoder takes all of it, else a repaired copy."""
    if scope is None:
        return None
    name, version, schema_url = scope.name, scope.version, scope.schema_url
    attributes = scope.attributes
    if (
        text(name) is name
        and text(version) is version
        and text(schema_url) is schema_url
        and _attributes_ok(attributes)
    ):
        return scope
    return InstrumentationScope(
        text(name) or "", text(version), text(schema_url), fixed_attributes(attributes)
    )


class _Memo:
    """The repaired resource and scope of each seen in one batch (most spans share one)."""

    def __init__(self) -> None:
        # The last resource and scope seen that need no repair: one identity test a span.
        self.resource: Any = _NONE
        self.scope: Any = _NONE
        self._whole: set[int] = set()  # ids of all such (each held by the batch)
        self._fixed: dict[int, Any] = {}

    def whole_resource(self, resource: Resource) -> bool:
        """Whether ``resource`` needs no repair."""
        if self._whole_or_fixed(resource, encodable_resource):
            self.resource = resource
            return True
        return False

    def whole_scope(self, scope: InstrumentationScope | None) -> bool:
        """Whether ``scope`` needs no repair."""
        if self._whole_or_fixed(scope, encodable_scope):
            self.scope = scope
            return True
        return False

    def _whole_or_fixed(self, given: Any, repair: Any) -> bool:
        key = id(given)
        if key in self._whole:
            return True
        if key not in self._fixed:
            fixed = repair(given)
            if fixed is given:
                self._whole.add(key)
                return True
            self._fixed[key] = fixed
        return False

    def get(self, given: Any, repair: Any) -> Any:
        """``given`` repaired by ``repair`` (itself when it needs no repair)."""
        return given if self._whole_or_fixed(given, repair) else self._fixed[id(given)]


_NONE = object()


def encodable_batch(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """Each span of ``spans`` through :func:`encodable`, each resource and scope read once."""
    memo = _Memo()
    return [encodable(span, memo) for span in spans]


def encodable(span: ReadableSpan, memo: _Memo | None = None) -> ReadableSpan:
    """``span`` itself when the OTLP encoder takes all of it, else a repaired copy."""
    if memo is None:
        memo = _Memo()
    description = span.status.description
    events, links = span.events, span.links
    start, end = span.start_time, span.end_time
    resource, scope = span.resource, span.instrumentation_scope
    name = span.name
    if (
        type(name) is str
        and _ok(name)
        and (description is None or _ok(description))
        and type(start) is int
        and type(end) is int
        and 0 <= start <= end <= _TIME_MAX  # one that ended before it began: a copy, as it is
        and type(span.kind) is SpanKind
        and _attributes_ok(span.attributes)
        and (not events or _events_ok(events))
        and (not links or _links_ok(links))
        and (resource is memo.resource or memo.whole_resource(resource))
        and (scope is memo.scope or memo.whole_scope(scope))
    ):
        return span
    return ReadableSpan(
        name=text(name) or "",
        context=span.context,
        parent=span.parent,
        resource=memo.get(resource, encodable_resource),
        attributes=fixed_attributes(span.attributes),
        events=[
            Event(text(e.name) or "", fixed_attributes(e.attributes), _time(e.timestamp))
            for e in events
        ],
        links=[Link(link.context, fixed_attributes(link.attributes)) for link in links],
        kind=span.kind if type(span.kind) is SpanKind else SpanKind.INTERNAL,
        status=Status(span.status.status_code, text(description)),
        start_time=_time(start),
        end_time=_time(end),
        instrumentation_scope=memo.get(scope, encodable_scope),
    )


def _events_ok(events: Sequence[Event]) -> bool:
    for event in events:
        name, timestamp = event.name, event.timestamp
        if not (
            type(name) is str
            and _ok(name)
            and type(timestamp) is int
            and 0 <= timestamp <= _TIME_MAX
            and _attributes_ok(event.attributes)
        ):
            return False
    return True


def _links_ok(links: Sequence[Link]) -> bool:
    return all(_attributes_ok(link.attributes) for link in links)
