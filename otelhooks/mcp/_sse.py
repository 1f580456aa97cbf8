"""Server-sent events, incrementally: split a stream into events without re-encoding them.

Each event keeps its bytes (passed through as they came) and its ``data`` (the JSON-RPC frame
the gateway reads). An event whose frame a hook changed is written anew by :func:`with_data`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final

__all__ = ["SseEvent", "events", "frame_event", "with_data"]

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


async def events(chunks: AsyncIterator[bytes]) -> AsyncIterator[SseEvent]:
    """The events of a byte stream, each as soon as its blank line arrives."""
    buffer = b""
    async for chunk in chunks:
        buffer += chunk
        while (match := _BOUNDARY.search(buffer)) is not None:
            raw, buffer = buffer[: match.end()], buffer[match.end() :]
            yield _parse(raw)
    if buffer.strip():
        yield _parse(buffer + b"\n\n")


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
