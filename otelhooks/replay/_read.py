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

Recordings are streamed: one line or frame is held at a time, so memory does not grow with
the file. A line or frame that cannot be read (not JSON, not a request, nested past the
protobuf parser's limit) is described in ``problems`` and skipped when the caller asks for that
(``otelhooks replay`` reports them and exits 2), or raises :class:`RecordingError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterator
from typing import Any, BinaryIO, Final

# protobuf ships no type hints (see otelhooks._export._otlp_json).
from google.protobuf.message import DecodeError  # type: ignore[import-untyped,unused-ignore]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

from otelhooks._export._otlp_json import _attributes, _flatten_request, request_json
from otelhooks._json import JsonProblem, loads_bounded

__all__ = [
    "BARE_MESSAGE_LIMIT",
    "RecordingError",
    "check_recording",
    "iter_ancestry",
    "iter_requests",
    "iter_spans",
    "read_recording",
]

# A bare ExportTraceServiceRequest starts with field 1 (resource_spans), wire type 2.
_RESOURCE_SPANS_TAG = 0x0A
# A request is read whole (and decoded to several times its size): one larger than an OTLP/HTTP
# request body ever is (an unframed message, a JSON line, a frame) is refused rather than risk
# the memory.
BARE_MESSAGE_LIMIT: Final = 64 * 1024 * 1024
# a line over the limit is passed over this many bytes at a time
_SKIP_CHUNK: Final = 1024 * 1024


class RecordingError(ValueError):
    """A recording file could not be read (names the file and what was wrong)."""


def read_recording(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every span of a recording, in file order, as :func:`otelhooks.read_otlp_json_lines`
    returns them (flat dicts with plain ``attributes``, ``resource`` and ``scope``).

    Holds the whole recording: :func:`iter_spans` streams it.

    Args:
        path: an OTLP JSON lines file or an OTLP protobuf dump (see the module docstring).

    Raises:
        OSError: the file cannot be read.
        RecordingError: the file is in none of the formats, or a line or frame of it cannot
            be read.

    Example:
        >>> spans = read_recording("examples/replay/traces.jsonl")
        >>> len(spans), spans[0]["attributes"]["gen_ai.operation.name"]
        (63, 'agent_lifecycle')
    """
    return list(iter_spans(path))


def iter_spans(
    path: str | os.PathLike[str], *, problems: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """The spans of a recording one by one, as :func:`read_recording` gives them, holding one
    line or frame at a time.

    Args:
        path: the recording.
        problems: where a line or frame that cannot be read is described (``path:line: why``)
            and skipped; without it, the first one raises :class:`RecordingError`.

    Raises:
        OSError: the file cannot be read.
        RecordingError: the file is in none of the formats (or, without ``problems``, a line
            or frame cannot be read).
    """
    name = os.fspath(path)
    for number, request in iter_requests(name, problems=problems):
        try:
            spans = _flatten_request(request)
        except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
            _problem(problems, f"{name}:{number}: not an OTLP trace request ({exc})")
            continue
        # Each span given out is held by the caller alone, and freed when its caller is done
        # with it, not with the whole line.
        request.clear()
        spans.reverse()
        while spans:
            yield spans.pop()


def iter_ancestry(
    path: str | os.PathLike[str], wanted: Collection[str], *, problems: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """What a first pass over a recording needs of each span, read without decoding the rest:
    ``traceId``, ``spanId``, ``parentSpanId`` (hex), ``name``, the string attributes named in
    ``wanted`` and the ``resource`` (its integer attributes, from a protobuf dump). Problems are
    reported as :func:`iter_spans` reports them."""
    name = os.fspath(path)
    for number, request in _raw_requests(name, problems):
        try:
            if isinstance(request, ExportTraceServiceRequest):
                yield from _proto_ancestry(request, wanted)
            else:
                yield from _json_ancestry(request, wanted)
        except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
            _problem(problems, f"{name}:{number}: not an OTLP trace request ({exc})")


def _proto_ancestry(
    request: ExportTraceServiceRequest, wanted: Collection[str]
) -> Iterator[dict[str, Any]]:
    for resource_spans in request.resource_spans:
        # its integer attributes: the attribute length limit it says, if it says one
        resource = {
            kv.key: kv.value.int_value
            for kv in resource_spans.resource.attributes
            if kv.value.WhichOneof("value") == "int_value"
        }
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                attrs = {
                    kv.key: kv.value.string_value
                    for kv in span.attributes
                    if kv.key in wanted and kv.value.WhichOneof("value") == "string_value"
                }
                yield {
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(),
                    "name": span.name,
                    "attributes": attrs,
                    "resource": resource,
                }


def _json_ancestry(request: dict[str, Any], wanted: Collection[str]) -> Iterator[dict[str, Any]]:
    for resource_spans in request.get("resourceSpans", ()):
        resource = _attributes(resource_spans.get("resource", {}).get("attributes"))
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                attrs = {}
                for kv in span.get("attributes") or ():
                    if kv.get("key") in wanted:
                        value = (kv.get("value") or {}).get("stringValue")
                        if isinstance(value, str):
                            attrs[kv["key"]] = value
                yield {
                    "traceId": span.get("traceId", ""),
                    "spanId": span.get("spanId", ""),
                    "parentSpanId": span.get("parentSpanId", ""),
                    "name": span.get("name", ""),
                    "attributes": attrs,
                    "resource": resource,
                }


def _problem(problems: list[str] | None, text: str) -> None:
    if problems is None:
        raise RecordingError(text)
    problems.append(text)


def iter_requests(
    path: str | os.PathLike[str], *, problems: list[str] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each ``ExportTraceServiceRequest`` of a recording in the OTLP/JSON shape (hex ids),
    with its line (JSON lines) or message (protobuf) number, one at a time.

    A JSON line is read to a bounded depth (values nested deeper than 64 levels are kept as
    their JSON text, see :mod:`otelhooks._json`); a protobuf dump is read frame by frame.

    Args:
        path: the recording.
        problems: where a line or frame that cannot be read is described and skipped;
            without it, the first one raises :class:`RecordingError`.

    Raises:
        OSError: the file cannot be read.
        RecordingError: the file is in none of the formats (or, without ``problems``, a line
            or frame cannot be read).
    """
    name = os.fspath(path)
    for number, request in _raw_requests(name, problems):
        if not isinstance(request, ExportTraceServiceRequest):
            yield number, request
            continue
        try:
            yield number, request_json(request)
        except (ValueError, TypeError, RecursionError) as exc:
            _problem(problems, f"{name}: message {number}: cannot be read ({exc})")


def _raw_requests(
    name: str, problems: list[str] | None
) -> Iterator[tuple[int, dict[str, Any] | ExportTraceServiceRequest]]:
    """Each request as read: a decoded JSON line, or a parsed protobuf message."""
    with open(name, "rb") as file:
        head = file.read(64).lstrip()
        if not head:
            return
        file.seek(0)
        if head[:1] == b"{":
            number = 0
            while line := file.readline(BARE_MESSAGE_LIMIT + 1):
                number += 1
                if len(line) > BARE_MESSAGE_LIMIT:
                    while not line.endswith(b"\n") and (line := file.readline(_SKIP_CHUNK)):
                        pass
                    _problem(
                        problems,
                        f"{name}:{number}: a line over {BARE_MESSAGE_LIMIT} bytes: not read",
                    )
                    continue
                if not line.strip():
                    continue
                try:
                    request = _loads(line)
                except JsonProblem as exc:
                    _problem(problems, f"{name}:{number}: not an OTLP/JSON line ({exc})")
                    continue
                if not isinstance(request, dict):
                    _problem(problems, f"{name}:{number}: not an OTLP/JSON line")
                    continue
                yield number, request
            return
        yield from _messages(name, file, problems)


def _loads(line: bytes) -> Any:
    """One line: the C parser first (a recording's lines are large and almost never deep);
    a line too deep for it is read again to a bounded depth."""
    try:
        return json.loads(line)
    except RecursionError:
        return loads_bounded(line)
    except ValueError as exc:  # not JSON, not UTF-8, an integer too long to convert
        raise JsonProblem(str(exc)) from None


def check_recording(path: str | os.PathLike[str]) -> None:
    """Raise what reading ``path`` would raise first: it cannot be opened, or it is in none of
    the formats. Reads the first bytes and, for a protobuf dump, the frame headers (a bare
    message is parsed). A caller streaming several recordings checks them all first, so no
    hook runs on the first when the last would be refused.

    Raises:
        OSError: the file cannot be read.
        RecordingError: the file is in none of the formats.
    """
    name = os.fspath(path)
    with open(name, "rb") as file:
        head = file.read(64).lstrip()
        if not head or head[:1] == b"{":
            return
        if _framing(file) is None:
            _bare(name, file)


def _framing(file: BinaryIO) -> Callable[[BinaryIO], int | None] | None:
    """The framing whose sizes account for every byte of ``file``, if one does."""
    size = os.fstat(file.fileno()).st_size
    for framing in (_fixed32_size, _varint_size):
        if _frames_fit(file, size, framing):
            return framing
    return None


def _bare(name: str, file: BinaryIO) -> ExportTraceServiceRequest:
    """``file`` as one bare message, or the error for a file in none of the formats."""
    size = os.fstat(file.fileno()).st_size
    file.seek(0)
    first = file.read(1)
    if first and first[0] == _RESOURCE_SPANS_TAG and size <= BARE_MESSAGE_LIMIT:
        file.seek(0)
        message = _parse(file.read())
        if message is not None:
            return message
    raise RecordingError(
        f"{name}: neither OTLP JSON lines nor an OTLP protobuf ExportTraceServiceRequest dump "
        f"(4-byte or varint length-delimited, or one bare message of at most "
        f"{BARE_MESSAGE_LIMIT} bytes)"
    )


def _messages(
    name: str, file: BinaryIO, problems: list[str] | None
) -> Iterator[tuple[int, ExportTraceServiceRequest]]:
    framing = _framing(file)
    if framing is None:
        yield 1, _bare(name, file)
        return
    file.seek(0)
    number = 0
    while (frame := _next_frame(file, framing)) is not None:
        number += 1
        offset, data = frame
        if data is None:
            _problem(problems, f"{name}: message {number} (byte {offset}): over "
                     f"{BARE_MESSAGE_LIMIT} bytes: not read")  # fmt: skip
            continue
        message = _parse(data)
        if message is None:
            _problem(problems, f"{name}: message {number} (byte {offset}): not an OTLP "
                     "ExportTraceServiceRequest")  # fmt: skip
            continue
        yield number, message


def _fixed32_size(file: BinaryIO) -> int | None:
    """The size before the next frame (``None`` at the end, ``-1`` for a cut header)."""
    header = file.read(4)
    if not header:
        return None
    return int.from_bytes(header, "big") if len(header) == 4 else -1


def _varint_size(file: BinaryIO) -> int | None:
    size, shift = 0, 0
    while True:
        byte = file.read(1)
        if not byte:
            return None if shift == 0 else -1
        if shift > 35:
            return -1
        size |= (byte[0] & 0x7F) << shift
        shift += 7
        if not byte[0] & 0x80:
            return size


def _frames_fit(file: BinaryIO, size: int, read_size: Callable[[BinaryIO], int | None]) -> bool:
    """Whether the sizes frame every byte of the file, each frame opening as a request does
    (only the headers and each frame's first byte are read)."""
    file.seek(0)
    count = 0
    while (frame_size := read_size(file)) is not None:
        start = file.tell()
        if frame_size <= 0 or start + frame_size > size:
            return False
        first = file.read(1)
        if not first or first[0] != _RESOURCE_SPANS_TAG:
            return False
        file.seek(start + frame_size)
        count += 1
    return count > 0


def _next_frame(
    file: BinaryIO, read_size: Callable[[BinaryIO], int | None]
) -> tuple[int, bytes | None] | None:
    frame_size = read_size(file)
    if frame_size is None or frame_size < 0:
        return None
    offset = file.tell()
    if frame_size > BARE_MESSAGE_LIMIT:
        file.seek(offset + frame_size)
        return offset, None  # not read
    return offset, file.read(frame_size)


def _parse(frame: bytes) -> ExportTraceServiceRequest | None:
    message = ExportTraceServiceRequest()
    try:
        message.ParseFromString(frame)
    except (DecodeError, RecursionError):
        return None
    return message
