"""Server-sent events, incrementally: split a stream into events without re-encoding them.

Each event keeps its bytes (passed through as they came) and its ``data`` (the JSON-RPC frame
the gateway reads). An event whose frame a hook changed is written anew by :func:`with_data`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final

__all__ = ["EVENT_LIMIT", "EventTooLarge", "SseEvent", "events", "frame_event", "with_data"]

# One event carries one JSON-RPC frame: the same limit as a stdio line.
EVENT_LIMIT: Final = 64 * 1024 * 1024
_BOUNDARY: Final = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE: Final = re.compile(rb"\r\n|\n|\r")


@dataclass(slots=True)
class SseEvent:
    """One event: ``raw`` (including its terminating blank line) and its ``data`` lines joined
    by ``\\n`` (``None`` for an event without data, such as a comment or a retry hint)."""

    raw: bytes
    data: bytes | None


def _parse(raw: bytes) -> SseEvent:
    data: list[bytes] = []
    for line in _LINE.split(raw):
        if line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
        elif line == b"data":
            data.append(b"")
    return SseEvent(raw, b"\n".join(data) if data else None)


class EventTooLarge(ValueError):
    """An event grew past the limit without ending (the stream cannot be trusted further)."""


async def events(
    chunks: AsyncIterator[bytes], *, limit: int = EVENT_LIMIT
) -> AsyncIterator[SseEvent]:
    """The events of a byte stream, each as soon as its blank line arrives.

    Each byte is scanned once (a search resumes where the last one stopped), and an event is
    held only up to ``limit`` bytes.

    Raises:
        EventTooLarge: an event passed ``limit`` bytes.
    """
    buffer = bytearray()
    scanned = 0  # no boundary starts before this offset
    async for chunk in chunks:
        buffer += chunk
        while (match := _BOUNDARY.search(buffer, scanned)) is not None:
            raw = bytes(buffer[: match.end()])
            del buffer[: match.end()]
            scanned = 0
            yield _parse(raw)
        if len(buffer) > limit:
            raise EventTooLarge(f"a server-sent event longer than {limit} bytes")
        # a boundary is at most 4 bytes: the next search starts just before the new data
        scanned = max(0, len(buffer) - 3)
    if bytes(buffer).strip():
        yield _parse(bytes(buffer) + b"\n\n")


def with_data(event: SseEvent, data: bytes) -> bytes:
    """``event`` with its data replaced by ``data`` (its ``event:`` and ``id:`` lines kept)."""
    kept = [
        line
        for line in _LINE.split(_BOUNDARY.sub(b"", event.raw))
        if line and not line.startswith(b"data")
    ]
    return b"\n".join([*kept, b"data: " + data]) + b"\n\n"


def frame_event(data: bytes) -> bytes:
    """A new ``message`` event carrying ``data``."""
    return b"event: message\ndata: " + data + b"\n\n"
