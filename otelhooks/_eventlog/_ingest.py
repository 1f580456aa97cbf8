"""``POST /v1/traces``: an OTLP/HTTP trace receiver that feeds span processors.

The body (``application/x-protobuf`` or ``application/json``, optionally
``Content-Encoding: gzip``) is bounded before and after inflating, decoded on a worker thread,
and each span is handed to ``on_end`` of every processor in order, each processor's failure
logged and isolated. Answers follow OTLP/HTTP: 200 with an ``ExportTraceServiceResponse``
(``partialSuccess`` when spans were rejected), 400 for an undecodable body, 413 past the size
bound, 415 for another media type or encoding.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Sequence

import structlog
from opentelemetry.sdk.trace import SpanProcessor

from otelhooks._eventlog._asgi import Receive, Scope, Send, header, respond, send_json
from otelhooks._eventlog._otlp import JSON, PROTOBUF, OtlpDecodeError, decode_traces
from otelhooks._eventlog._otlp import encode_response as otlp_response

__all__ = ["DEFAULT_MAX_BODY_BYTES", "OtlpIngest"]

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024

_log = structlog.get_logger("otelhooks")


class OtlpIngest:
    """Receives OTLP trace requests and runs ``span_processors`` on their spans."""

    def __init__(
        self,
        span_processors: Sequence[SpanProcessor],
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self.span_processors = tuple(span_processors)
        self.max_body_bytes = max_body_bytes

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        ctype = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if ctype not in (PROTOBUF, JSON):
            body = {"error": "unsupported_media_type", "message": f"use {PROTOBUF} or {JSON}"}
            await send_json(send, 415, body)
            return
        encoding = (header(scope, b"content-encoding") or "identity").strip().lower()
        if encoding not in ("identity", "gzip"):
            body = {"error": "unsupported_encoding", "message": "use gzip or no encoding"}
            await send_json(send, 415, body)
            return
        limit = self.max_body_bytes
        data = await _body(receive, limit)
        try:
            if data and encoding == "gzip":
                data = _gunzip(data, limit)
            if data is None:
                body = {"error": "too_large", "message": f"at most {limit} bytes"}
                await send_json(send, 413, body)
                return
            rejected = await asyncio.to_thread(self.ingest, data, ctype)
        except (OtlpDecodeError, zlib.error) as exc:
            await send_json(send, 400, {"error": "bad_request", "message": str(exc)})
            return
        message = "span or parent ids of the wrong length" if rejected else ""
        await respond(send, 200, otlp_response(ctype, rejected, message), ctype.encode())

    def ingest(self, body: bytes, content_type: str) -> int:
        """Decode ``body`` and run the processors on its spans; returns the rejected count."""
        spans, rejected = decode_traces(body, content_type)
        for span in spans:
            for processor in self.span_processors:
                try:
                    processor.on_end(span)
                except Exception:
                    _log.exception("span processor failed on a received span", span=span.name)
        return rejected


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The request body, ``None`` past ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _gunzip(data: bytes, limit: int) -> bytes | None:
    """The inflated body, ``None`` past ``limit`` bytes; raises ``zlib.error`` if not gzip."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, limit + 1)  # bounded: a small bomb cannot inflate freely
    if len(out) > limit:
        return None
    if not inflater.eof:
        raise zlib.error("truncated gzip body")
    return out
