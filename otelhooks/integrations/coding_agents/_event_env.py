"""The environment each event brings to the bridge daemon, read from its ``POST /bridge``.

A daemon is started by one session's hook client and keeps that session's environment as its
own; a command hook run with it judged every other session by it (a guard reading ``$STRICT``).
So the hook client sends its own environment first, as the body's first line (a JSON object of
strings), and the daemon runs the event's command hooks within
:func:`~otelhooks._actions._command_env.event_environment` of it. This module's one job is to
read that body into the environment and the event; it is apart from :mod:`._daemon`, which
serves the socket and runs the bridge, so that the rule for a body without an environment
(refused: its guards would run with another one) stands in one place.
"""

from __future__ import annotations

import json
from typing import Final

from otelhooks._eventlog._asgi import Receive, read_body

__all__ = ["BODY_LIMIT", "NO_ENVIRONMENT", "environment_and_event", "read_event"]

BODY_LIMIT: Final = 64 * 1024 * 1024
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


async def read_event(receive: Receive) -> tuple[dict[str, str] | None, bytes]:
    """Read one ``POST /bridge`` body (at most :data:`BODY_LIMIT` bytes) and split it as
    :func:`environment_and_event` does."""
    return environment_and_event(await read_body(receive, BODY_LIMIT) or b"")
