"""Where event ids and event timestamps come from: swappable, so tests can pin them.

Payload models take their ``eventId`` and ``timestamp`` from here; ``otelhooks.testing``
swaps in sequential ids and a stepping clock for the length of a ``with`` block.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from random import getrandbits
from typing import Final

__all__ = ["SOURCES", "Sources", "random_event_id", "wall_clock_ms"]

_UUID4_CLEAR: Final = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET: Final = (0x4000 << 64) | (0x8000 << 48)


def random_event_id() -> str:
    """A random UUID v4 as 32 hex digits (what ``uuid.uuid4().hex`` gives), at a sixth of the
    cost: ``uuid4`` reads ``os.urandom`` and builds a ``UUID`` for every event. The id is a
    receiver's idempotency key, unique, not secret, so the ``random`` generator is enough (it is
    reseeded in a forked child). ``to_bytes().hex()`` is twice as fast as a ``032x`` format."""
    return ((getrandbits(128) & _UUID4_CLEAR) | _UUID4_SET).to_bytes(16).hex()


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class Sources:
    """The functions payloads call for a new event id and for "now" in epoch milliseconds."""

    event_id: Callable[[], str] = random_event_id
    now_ms: Callable[[], int] = wall_clock_ms


SOURCES: Final = Sources()
