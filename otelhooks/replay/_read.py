"""Recordings on disk: OTLP JSON lines or an OTLP protobuf dump, read as flat span dicts.

Three encodings are read, told apart by their first bytes:

* **OTLP JSON lines**: one ``ExportTraceServiceRequest`` per line, what ``--traces-out``, the
  Claude Code bridge and the Collector's ``file`` exporter (``format: json``) write.
* **OTLP protobuf, 4-byte framed**: the Collector's ``file`` exporter with ``format: proto``
  writes each ``ExportTraceServiceRequest`` after its size as an unsigned 32-bit big-endian
  integer.
* **OTLP protobuf, varint-delimited** (protobuf's ``writeDelimitedTo`` framing), or one bare
  ``ExportTraceServiceRequest`` (an OTLP/HTTP request body saved to a file).

Compressed files (the file exporter's ``compression: zstd``) are not read: decompress first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

# protobuf ships no type hints (see otelhooks._export._otlp_json).
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped,unused-ignore]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped,unused-ignore]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

from otelhooks._export._otlp_json import _flatten_request, _ids_to_hex

__all__ = ["RecordingError", "iter_requests", "read_recording"]

# A bare ExportTraceServiceRequest starts with field 1 (resource_spans), wire type 2.
_RESOURCE_SPANS_TAG = 0x0A


class RecordingError(ValueError):
    """A recording file could not be read (names the file and what was wrong)."""


def read_recording(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every span of a recording, in file order, as :func:`otelhooks.read_otlp_json_lines`
    returns them (flat dicts with plain ``attributes``, ``resource`` and ``scope``).

    Args:
        path: an OTLP JSON lines file or an OTLP protobuf dump (see the module docstring).

    Raises:
        OSError: the file cannot be read.
        RecordingError: the file is in none of the formats.

    Example:
        >>> spans = read_recording("traces.jsonl")  # doctest: +SKIP
        >>> spans[0]["attributes"]["gen_ai.operation.name"]  # doctest: +SKIP
        'execute_tool'
    """
    name = os.fspath(path)
    spans: list[dict[str, Any]] = []
    for number, request in iter_requests(name):
        try:
            spans.extend(_flatten_request(request))
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise RecordingError(f"{name}:{number}: not an OTLP/JSON line") from exc
    return spans


def iter_requests(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each ``ExportTraceServiceRequest`` of a recording in the OTLP/JSON shape (hex ids),
    with its line (JSON lines) or message (protobuf) number.

    Raises:
        OSError: the file cannot be read.
        RecordingError: the file is in none of the formats.
    """
    name = os.fspath(path)
    with open(name, "rb") as file:
        head = file.read(64).lstrip()
    if not head:
        return
    if head[:1] == b"{":
        with open(name, encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    request = json.loads(line)
                except ValueError as exc:
                    raise RecordingError(f"{name}:{number}: not an OTLP/JSON line") from exc
                if not isinstance(request, dict):
                    raise RecordingError(f"{name}:{number}: not an OTLP/JSON line")
                yield number, request
        return
    with open(name, "rb") as file:
        data = file.read()
    for number, message in enumerate(_messages(name, data), start=1):
        yield number, _as_dict(message)


def _messages(name: str, data: bytes) -> list[ExportTraceServiceRequest]:
    for framing in (_fixed32_frames, _varint_frames):
        frames = list(framing(data))
        if frames and all(frame is not None for frame in frames):
            parsed = [_parse(frame) for frame in frames if frame is not None]
            if all(message is not None for message in parsed):
                return [m for m in parsed if m is not None]
    if data[0] == _RESOURCE_SPANS_TAG:
        message = _parse(data)
        if message is not None:
            return [message]
    raise RecordingError(
        f"{name}: neither OTLP JSON lines nor an OTLP protobuf ExportTraceServiceRequest dump "
        "(4-byte or varint length-delimited, or one bare message)"
    )


def _fixed32_frames(data: bytes) -> Iterator[bytes | None]:
    """Frames after 4-byte big-endian sizes; a ``None`` when the sizes do not fit the data."""
    offset = 0
    while offset < len(data):
        if offset + 4 > len(data):
            yield None
            return
        size = int.from_bytes(data[offset : offset + 4], "big")
        offset += 4
        if size == 0 or offset + size > len(data) or data[offset] != _RESOURCE_SPANS_TAG:
            yield None
            return
        yield data[offset : offset + size]
        offset += size


def _varint_frames(data: bytes) -> Iterator[bytes | None]:
    """Frames after varint sizes; a ``None`` when the sizes do not fit the data."""
    offset = 0
    while offset < len(data):
        size, shift = 0, 0
        while True:
            if offset >= len(data) or shift > 35:
                yield None
                return
            byte = data[offset]
            offset += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if size == 0 or offset + size > len(data) or data[offset] != _RESOURCE_SPANS_TAG:
            yield None
            return
        yield data[offset : offset + size]
        offset += size


def _parse(frame: bytes) -> ExportTraceServiceRequest | None:
    message = ExportTraceServiceRequest()
    try:
        message.ParseFromString(frame)
    except DecodeError:
        return None
    return message


def _as_dict(message: ExportTraceServiceRequest) -> dict[str, Any]:
    # The same JSON shape OtlpJsonLinesSpanExporter writes, so one flattening serves both.
    request: dict[str, Any] = MessageToDict(
        message, preserving_proto_field_name=False, use_integers_for_enums=True
    )
    for resource_spans in request.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                _ids_to_hex(span)
                for link in span.get("links", ()):
                    _ids_to_hex(link)
    return request
