"""The environment each event brings to the bridge daemon, read from its ``POST /bridge``.

A daemon is started by one session's hook client and keeps that session's environment as its
own; a command hook run with it judged every other session by it (a guard reading ``$STRICT``).
So the hook client sends its own environment first, as the body's first line (a JSON object of
strings), and the daemon runs the event's command hooks within
:func:`~otelhooks._actions._command_env.event_environment` of it. This module's one job is to
read that body into the environment and the event; it is apart from :mod:`._daemon`, which
serves the socket and runs the bridge, so that the rule for a body without an environment
(refused: its guards would run with another one) stands in one place, and so does the rule for
a body past :data:`BODY_LIMIT` (:class:`TooLarge`: refused saying its size, after the rest of it
is read and dropped, so that the hook client, still sending, hears the refusal).
"""

from __future__ import annotations

import json
from typing import Final

from otelhooks._eventlog._asgi import Receive

__all__ = ["BODY_LIMIT", "NO_ENVIRONMENT", "TooLarge", "environment_and_event", "read_event"]

BODY_LIMIT: Final = 64 * 1024 * 1024
# past this, the rest of a body too large is no longer read (the client's send then fails, and
# it answers with the one-process bridge): draining it only lets the refusal be heard
_DRAIN_LIMIT: Final = 1 << 30
# how much of a body too large is kept: its start names the event and the tool
_HEAD: Final = 1 << 20
# the problem an event answers with when its body carries no environment: it is not our hook
# client's, and its guards would run with another environment than its own
NO_ENVIRONMENT: Final = "the hook client sent no environment"


def environment_and_event(body: bytes) -> tuple[dict[str, str] | None, bytes]:
    """The hook client's environment (the body's first line, a JSON object) and its event;
    ``None`` and the whole body when the first line is not an environment."""
    head, _, event = body.partition(b"\n")
    try:
        env = json.loads(head)
    except ValueError:
        return None, body
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        return None, body
    return env, event


class TooLarge(Exception):
    """A ``POST /bridge`` body past :data:`BODY_LIMIT`: ``size`` bytes (at least), of which
    ``head`` is the event's start (after the environment line), which names its event."""

    def __init__(self, size: int, head: bytes) -> None:
        self.size = size
        self.head = head
        super().__init__(
            f"the hook input is {size} bytes with the hook client's environment, over the "
            f"bridge daemon's limit of {BODY_LIMIT} bytes"
        )


async def read_event(receive: Receive) -> tuple[dict[str, str] | None, bytes]:
    """Read one ``POST /bridge`` body and split it as :func:`environment_and_event` does; an
    empty event when the client went away.

    Raises:
        TooLarge: the body is past :data:`BODY_LIMIT` bytes (the rest of it read and dropped,
            up to 1 GiB).
    """
    kept: list[bytes] = []
    head = b""
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None, b""
        chunk = message.get("body", b"")
        if size <= BODY_LIMIT < size + len(chunk):  # past it now: only the event's start kept
            _, event = environment_and_event(b"".join([*kept, chunk]))
            head, kept = event[:_HEAD], []
        elif size + len(chunk) <= BODY_LIMIT:
            kept.append(chunk)
        size += len(chunk)
        more = message.get("more_body", False)
        if size > BODY_LIMIT and (not more or size > _DRAIN_LIMIT):
            raise TooLarge(size, head)
        if not more:
            return environment_and_event(b"".join(kept))
