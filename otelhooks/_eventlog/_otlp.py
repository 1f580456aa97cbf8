"""OTLP/HTTP trace requests (protobuf or JSON) decoded into SDK ``ReadableSpan`` objects.

The spans are what the SDK itself would hand a span processor's ``on_end``: same ids, kind,
status, attributes, events, links, resource and instrumentation scope, so the receiver runs
the processors (and through them every observer hook and the event log) unchanged.

JSON follows the OTLP/JSON encoding: trace and span ids are hex (base64 is accepted too),
enums are integers or names, 64-bit integers strings or numbers, unknown fields are ignored.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

__all__ = ["OtlpDecodeError", "decode_traces", "encode_response"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

_HEX = re.compile(r"[0-9a-fA-F]*")
_SAMPLED = TraceFlags.SAMPLED
_IS_REMOTE = 0x200  # OTLP span flags: bit 8 says "is_remote is known", bit 9 is its value


class OtlpDecodeError(ValueError):
    """The body is not a valid OTLP trace request in the stated encoding."""


def decode_traces(body: bytes, content_type: str) -> tuple[list[ReadableSpan], int]:
    """Decode an ``ExportTraceServiceRequest``.

    Returns:
        The spans, and how many were rejected (ids of the wrong length).

    Raises:
        OtlpDecodeError: the body does not parse.
    """
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    if content_type == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RecursionError) as exc:
            raise OtlpDecodeError(f"not an OTLP protobuf trace request: {exc}") from None
    else:
        try:
            data = json.loads(body)
            if not isinstance(data, dict):
                raise ValueError("the body is not a JSON object")
            for span in _json_spans(data):
                _ids_to_base64(span, ("traceId", "spanId", "parentSpanId"))
                for link in span.get("links") or ():
                    _ids_to_base64(link, ("traceId", "spanId"))
            json_format.ParseDict(data, request, ignore_unknown_fields=True)
        except (ValueError, TypeError, AttributeError, json_format.ParseError) as exc:
            raise OtlpDecodeError(f"not an OTLP/JSON trace request: {exc}") from None
        except RecursionError:
            # json.loads recurses once per nesting level: a deep body is the client's error.
            raise OtlpDecodeError("not an OTLP/JSON trace request: nested too deeply") from None
    try:
        return spans_from_request(request)
    except RecursionError:
        raise OtlpDecodeError("an attribute value is nested too deeply") from None


def encode_response(content_type: str, rejected: int, message: str = "") -> bytes:
    """An ``ExportTraceServiceResponse`` (with ``partialSuccess`` when spans were rejected)."""
    if content_type == PROTOBUF:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTracePartialSuccess,
            ExportTraceServiceResponse,
        )

        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=rejected, error_message=message)
            )
        return response.SerializeToString()
    if not rejected:
        return b"{}"
    body = {"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": message}}
    return json.dumps(body).encode()


def _json_spans(data: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for rs in data.get("resourceSpans") or ():
        for ss in rs.get("scopeSpans") or ():
            yield from ss.get("spans") or ()


def _ids_to_base64(message: dict[str, Any], fields: tuple[str, ...]) -> None:
    for name in fields:
        value = message.get(name)
        if isinstance(value, str) and len(value) in (16, 32) and _HEX.fullmatch(value):
            message[name] = base64.b64encode(bytes.fromhex(value)).decode()


def spans_from_request(request: ExportTraceServiceRequest) -> tuple[list[ReadableSpan], int]:
    """Every valid span of ``request`` and the count of rejected ones."""
    spans: list[ReadableSpan] = []
    rejected = 0
    for rs in request.resource_spans:
        resource = Resource(_attributes(rs.resource.attributes), rs.schema_url or None)
        for ss in rs.scope_spans:
            scope = InstrumentationScope(
                ss.scope.name,
                ss.scope.version or None,
                ss.schema_url or None,
                _attributes(ss.scope.attributes) or None,
            )
            for pb in ss.spans:
                span = _span(pb, resource, scope)
                if span is None:
                    rejected += 1
                else:
                    spans.append(span)
    return spans, rejected


def _context(trace_id: bytes, span_id: bytes, flags: int, state: str) -> SpanContext | None:
    if len(trace_id) != 16 or len(span_id) != 8:
        return None
    ctx = SpanContext(
        int.from_bytes(trace_id, "big"),
        int.from_bytes(span_id, "big"),
        is_remote=bool(flags & _IS_REMOTE),
        trace_flags=TraceFlags((flags & 0xFF) | _SAMPLED),
        trace_state=TraceState.from_header([state]) if state else None,
    )
    return ctx if ctx.is_valid else None


def _span(pb: PbSpan, resource: Resource, scope: InstrumentationScope) -> ReadableSpan | None:
    context = _context(pb.trace_id, pb.span_id, pb.flags & 0xFF, pb.trace_state)
    if context is None:
        return None
    parent = None
    if pb.parent_span_id:
        parent = _context(pb.trace_id, pb.parent_span_id, pb.flags, "")
        if parent is None:
            return None
    links = []
    for link in pb.links:
        linked = _context(link.trace_id, link.span_id, link.flags, link.trace_state)
        if linked is not None:
            links.append(Link(linked, _attributes(link.attributes)))
    code = StatusCode(pb.status.code) if pb.status.code in (0, 1, 2) else StatusCode.UNSET
    status = Status(code, pb.status.message or None) if code is StatusCode.ERROR else Status(code)
    return ReadableSpan(
        name=pb.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=_attributes(pb.attributes),
        events=[
            Event(e.name, _attributes(e.attributes), e.time_unix_nano or None) for e in pb.events
        ],
        links=links,
        # OTLP numbers kinds from 1 (0 is "unspecified"); the SDK's SpanKind from 0.
        kind=SpanKind(pb.kind - 1) if 1 <= pb.kind <= 5 else SpanKind.INTERNAL,
        status=status,
        start_time=pb.start_time_unix_nano or None,
        end_time=pb.end_time_unix_nano or None,
        instrumentation_scope=scope,
    )


def _attributes(key_values: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in key_values}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)
