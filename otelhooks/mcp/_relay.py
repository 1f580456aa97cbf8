"""What the gateway sends on after a message crossed a session (:class:`Relay`)."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field

__all__ = ["Relay"]


@dataclass(slots=True)
class Relay:
    """What to send after a message crossed.

    Attributes:
        to_server, to_client: frames to send now, in order.
        later: a decision still running (a hook chain); await it and send its relay too.
    """

    to_server: list[bytes] = field(default_factory=list)
    to_client: list[bytes] = field(default_factory=list)
    later: Awaitable[Relay] | None = None
