"""Server-sent events, incrementally: split a stream into events without re-encoding them.

Each event keeps its bytes (passed through as they came) and its ``data`` (the JSON-RPC frame
the gateway reads). An event whose frame a hook changed is written anew by :func:`with_data`.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final

__all__ = [
    "EVENT_LIMIT",
    "EventIds",
    "EventTooLarge",
    "SseEvent",
    "events",
    "frame_event",
    "with_data",
]

# One event carries one JSON-RPC frame: the same limit as a stdio line.
EVENT_LIMIT: Final = 64 * 1024 * 1024
# The event ids a session's streams carried that a client may resume after: the last ones
# (a client resumes from the last id it read), each of a bounded length.
MAX_EVENT_IDS: Final = 1024
MAX_EVENT_ID_BYTES: Final = 256
# An event ends at a blank line: two line ends in a row, each CRLF, LF or CR (a CR followed by
# LF is one), as clients split them (``\n\r\n`` too: read otherwise, a server could hide an
# event the client reads inside one the hooks read as another).
_BOUNDARY: Final = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")
_LINE: Final = re.compile(rb"\r\n|\n|\r")
# A stream may start with a UTF-8 byte order mark, which clients skip: so does the gateway (a
# first line read as ``\ufeffdata:`` would be no data to it, the client's message to them).
_BOM: Final = b"\xef\xbb\xbf"


@dataclass(slots=True)
class SseEvent:
    """One event: ``raw`` (including its terminating blank line), its ``data`` lines joined
    by ``\\n`` (``None`` for an event without data, such as a comment or a retry hint), and its
    ``id`` (``None`` when it sets none)."""

    raw: bytes
    data: bytes | None
    id: bytes | None = None


def _parse(raw: bytes) -> SseEvent:
    data: list[bytes] = []
    event_id: bytes | None = None
    for line in _LINE.split(raw):
        if line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
        elif line == b"data":
            data.append(b"")
        elif line.startswith(b"id:") and b"\0" not in line:  # the SSE rule: an id with NUL is none
            value = line[3:]
            event_id = value[1:] if value.startswith(b" ") else value
    return SseEvent(raw, b"\n".join(data) if data else None, event_id)


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
    started = False  # past the stream's first bytes (a byte order mark, dropped)
    async for chunk in chunks:
        buffer += chunk
        if not started:
            if len(buffer) < len(_BOM) and _BOM.startswith(bytes(buffer)):
                continue  # the first bytes may still be a byte order mark
            started = True
            if buffer.startswith(_BOM):
                del buffer[: len(_BOM)]
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


class EventIds:
    """The event ids the streams of one session carried to its client: a ``Last-Event-ID``
    the client resumes after must be one of them (the last :data:`MAX_EVENT_IDS`)."""

    def __init__(self) -> None:
        self._ids: OrderedDict[bytes, None] = OrderedDict()

    def add(self, event_id: bytes) -> None:
        """The client was sent an event with ``event_id``."""
        if len(event_id) > MAX_EVENT_ID_BYTES:
            return  # never held: resuming after it is refused, as after any id not held
        self._ids[event_id] = None
        self._ids.move_to_end(event_id)
        while len(self._ids) > MAX_EVENT_IDS:
            self._ids.popitem(last=False)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids
