"""Spans as OTLP/JSON lines: the format the OpenTelemetry Collector's ``file`` exporter writes.

Each line is one ``ExportTraceServiceRequest`` in the OTLP/JSON encoding: lowerCamelCase field
names, enums as integers, 64-bit integers as decimal strings, default values omitted, and (the
one place OTLP/JSON departs from protobuf's canonical JSON) trace and span ids as lowercase hex
rather than base64. Other ``bytes`` values stay base64, as the OTLP specification says.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

import structlog

# protobuf ships no type hints; types-protobuf is not a dependency (the ignore stays quiet if
# it is installed).
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped,unused-ignore]
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otelhooks._private_files import FILE_MODE, tighten
from otelhooks._worker import at_fork

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

__all__ = ["OtlpJsonLinesSpanExporter", "encode_otlp_json", "read_otlp_json_lines"]

_logger = structlog.get_logger("otelhooks")

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class OtlpJsonLinesSpanExporter(SpanExporter):
    """Append one OTLP/JSON ``ExportTraceServiceRequest`` line per ``export`` call to a file.

    The file is opened on the first export, so constructing the exporter touches
    nothing, and opened again (to add to) when its path no longer names it: renamed by a log
    rotation or removed. Lines are written whole under a lock, so concurrent exports never
    interleave.
    The file is created ``0600`` (an existing regular file is tightened to it): spans carry
    prompts and tool arguments, kept as privately as the event log.

    Args:
        path: The file to write to. Its directory must exist.
        append: keep what the file holds (the default); ``False`` empties it on the first
            export (or before the first ``fork``, so that the children's lines stay), so the
            file holds the spans of this exporter and its forked children only
            (``configure(traces_out=)``).
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = True) -> None:
        self._path = os.fspath(path)
        # Where the file is, whatever directory the process moves to later: the path is looked
        # at again before each write (a rotation), never resolved against a new working folder.
        self._where = os.path.abspath(self._path)
        # Always O_APPEND: a forked child shares the open file, and its lines and ours follow
        # each other whole.
        self._flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (0 if append else os.O_TRUNC)
        self._lock = threading.Lock()
        self._file: IO[bytes] | None = None
        self._shutdown = False
        #: The last I/O error, e.g. "No such file or directory" (None after none).
        self.last_error: str | None = None
        at_fork(before=self._empty_before_fork, after_in_child=self._new_lock)

    @property
    def path(self) -> str:
        """The file spans are appended to."""
        return self._path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write ``spans`` as one line.

        Returns:
            ``SUCCESS`` when the line was written; ``FAILURE`` after shutdown or on an I/O
            error (which is logged).
        """
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            line = encode_otlp_json(spans).encode() + b"\n"
        except Exception:
            # An exporter reports failure as a value; a raise here would reach the agent's
            # thread under SimpleSpanProcessor.
            _logger.exception("encoding spans failed", spans=len(spans))
            return SpanExportResult.FAILURE
        with self._lock:
            if self._shutdown:
                return SpanExportResult.FAILURE
            try:
                if self._file is not None and _replaced(self._where, self._file):
                    # Renamed or removed (logrotate, a user's rm): what was written to the old
                    # file after that was lost with it, while the report said exported.
                    self._file.close()
                    self._file = None
                if self._file is None:
                    self._file = self._open()
                _write_all(self._file, line)
            except OSError as exc:
                reason = f"{exc.strerror or exc}"
                if reason != self.last_error:
                    # One line per distinct error: a retried batch would repeat it otherwise.
                    _logger.warning(
                        "writing spans failed", path=self._path, spans=len(spans), error=reason
                    )
                self.last_error = reason
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _open(self) -> IO[bytes]:
        # Unbuffered: each line reaches the OS in one write, whole, as it is made. Created 0600
        # like every file otelhooks keeps data in (spans carry prompts and tool arguments); a
        # file of an older version is tightened.
        fd = os.open(self._where, self._flags, FILE_MODE)
        tighten(fd)
        # A file made again after a rotation, or by a forked child, is added to, never emptied.
        self._flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        return open(fd, "wb", buffering=0)

    def _empty_before_fork(self) -> None:
        # The file is emptied once, before a child can write to it: emptied at the parent's
        # first export, it lost every line the children had written by then (each of them
        # emptying it too), while each reported its spans exported.
        # Only a file that can be emptied: opening a FIFO waits for its reader, and the fork
        # would wait with it.
        emptying = self._flags & os.O_TRUNC and _regular_or_missing(self._where)
        if emptying and self._lock.acquire(timeout=1.0):
            try:
                if self._file is None and not self._shutdown:
                    self._file = self._open()
            except OSError:
                pass  # the next export says why
            finally:
                self._lock.release()

    def _new_lock(self) -> None:
        # A thread of the parent may have held it at the fork; none holds it in the child.
        self._lock = threading.Lock()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Return True: every line is written when ``export`` returns."""
        return True

    def shutdown(self) -> None:
        """Close the file; later exports return ``FAILURE``."""
        with self._lock:
            self._shutdown = True
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    _logger.exception("closing span file failed", path=self._path)
                self._file = None


def encode_otlp_json(spans: Sequence[ReadableSpan]) -> str:
    """Encode ``spans`` as one compact OTLP/JSON ``ExportTraceServiceRequest`` (no newline)."""
    return json.dumps(request_json(encode_spans(spans)), separators=(",", ":"))


def request_json(message: ExportTraceServiceRequest) -> dict[str, Any]:
    """``message`` as an OTLP/JSON object: the shape this exporter writes and a replay of a
    protobuf recording reads, so one flattening serves both (ids in hex, enums as numbers)."""
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


def read_otlp_json_lines(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read an OTLP/JSON lines file into one flat list of span dicts, in file order.

    Each span keeps its keys as in the file, except that ``"attributes"`` (on the span, its
    events and its links) becomes a plain ``{key: value}`` dict, and two keys are added:
    ``"resource"`` (the resource attributes as a plain dict) and ``"scope"`` (the
    instrumentation scope name, ``""`` when absent). Values become Python values: ``intValue``
    an ``int``, ``bytesValue`` ``bytes``, ``arrayValue`` a list, ``kvlistValue`` a dict.

    Raises:
        OSError: If the file cannot be read.
        ValueError: If a non-blank line is not an OTLP/JSON object; names the line number.
    """
    spans: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                request = json.loads(line)
                spans.extend(_flatten_request(request))
            except (ValueError, TypeError, AttributeError, KeyError) as exc:
                raise ValueError(f"{os.fspath(path)}:{number}: not an OTLP/JSON line") from exc
    return spans


def _ids_to_hex(message: dict[str, Any]) -> None:
    for field in _ID_FIELDS:
        value = message.get(field)
        if value:
            message[field] = base64.b64decode(value).hex()


def _flatten_request(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The spans of a decoded request, flattened in place: the request is used up.

    Each span's key-value list is replaced, and so freed, as soon as it is read, while it is
    still in the processor's cache: freed with the whole request, after a replay has worked
    through the line's spans, it is likely out of the cache again (benchmarks/README.md,
    "Replay, seventeenth pass").
    """
    spans: list[dict[str, Any]] = []
    for resource_spans in request.get("resourceSpans", ()):
        resource = _attributes(resource_spans.get("resource", {}).get("attributes"))
        for scope_spans in resource_spans.get("scopeSpans", ()):
            scope = scope_spans.get("scope", {}).get("name", "")
            for span in scope_spans.get("spans", ()):
                span["attributes"] = _attributes(span.get("attributes"))
                for key in ("events", "links"):
                    if key in span:
                        span[key] = [
                            {**item, "attributes": _attributes(item.get("attributes"))}
                            for item in span[key]
                        ]
                span["resource"] = resource
                span["scope"] = scope
                spans.append(span)
    return spans


def _attributes(key_values: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {kv["key"]: _any_value(kv.get("value", {})) for kv in key_values or ()}


def _any_value(value: dict[str, Any]) -> Any:
    # An AnyValue holds at most one of these; an empty one (no field set) means null.
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        # float() also takes the strings "NaN", "Infinity" and "-Infinity" that JSON needs.
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [_any_value(item) for item in value["arrayValue"].get("values", ())]
    if "kvlistValue" in value:
        return _attributes(value["kvlistValue"].get("values"))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    return None


def _regular_or_missing(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _replaced(path: str, file: IO[bytes]) -> bool:
    """Whether ``path`` no longer names the file ``file`` has open."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # unknowable now (a folder on the way became unreadable): keep writing
    opened = os.fstat(file.fileno())
    return (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino)


def _write_all(file: IO[bytes], data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            # A raw file may write less than asked; finish the line rather than leave half of it.
            written = file.write(view)
            if not written:
                raise OSError(f"could not write to {getattr(file, 'name', 'file')}")
            view = view[written:]
    except OSError:
        if len(view) < len(data):
            _cut_torn_line(file, len(data) - len(view))
        raise


def _cut_torn_line(file: IO[bytes], written: int) -> None:
    """Take back the ``written`` bytes of a line that could not be finished (a full disk): a
    torn line made the whole file unreadable (``read_otlp_json_lines``, replay), and the next
    line, once there was room again, was glued to it."""
    try:
        fd = file.fileno()
        start = os.fstat(fd).st_size - written
        os.ftruncate(fd, start)
        os.lseek(fd, start, os.SEEK_SET)  # without O_APPEND the next line starts here
    except OSError:
        pass  # a pipe or a terminal: nothing to take back
