"""What the client of one MCP session was answered: the answer a server sends again is the one
the gateway recorded, and an answer for no request of the session never reaches the client.

Over Streamable HTTP a server with an event store sends a stream's events again after the
client's ``Last-Event-ID`` (a client whose connection broke resumes the stream), answers
included. The gateway recorded and filtered each answer when it first crossed
(``tool_result_persist`` may have blocked or rewritten it, a hook may have denied the call):
passing the server's answer on again would give the client what the hooks never let through,
with no span and no observer. So each answer the client was given is kept (a bounded number
and size per session), and an answer for a request no longer waiting is:

- the recorded answer, when the gateway holds it (logged when the server's differs);
- a JSON-RPC error saying the answer is no longer held, when it was too large to keep;
- dropped when the request was cancelled (the client stopped waiting);
- dropped, logged and counted (``otelhooks.dropped``, source ``mcp_answers``) when the
  session never made that request, or answered it too long ago to be remembered.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Final

import structlog

from otelhooks.mcp._calls import request_key
from otelhooks.mcp._jsonrpc import UPSTREAM_ERROR, Message, error_response

__all__ = ["MAX_ANSWERS", "MAX_ANSWER_BYTES", "MAX_HELD_BYTES", "Answered"]

_log = structlog.get_logger("otelhooks.mcp")

# Answers remembered per session, and the bytes held for them: a client that resumes does so
# within seconds, and a session must not grow the gateway by what its tools return.
MAX_ANSWERS: Final = 256
MAX_HELD_BYTES: Final = 4 * 1024 * 1024
MAX_ANSWER_BYTES: Final = 1024 * 1024
_CANCELLED: Final = b""  # the client stopped waiting: nothing was answered


class Answered:
    """The answers the client of a session was given, by request id (most recent last)."""

    def __init__(self, count_drop: Callable[[int, str], None]) -> None:
        self._answers: OrderedDict[Hashable, bytes | None] = OrderedDict()
        self._held = 0
        self._count_drop = count_drop

    def record(self, request_id: object, frame: bytes | None) -> None:
        """The client's request ``request_id`` was answered with ``frame`` (``None``: the
        client was sent no answer because it cancelled the request)."""
        key = request_key(request_id)
        self._forget(key)
        kept = _CANCELLED if frame is None else frame
        if len(kept) > MAX_ANSWER_BYTES:
            self._answers[key] = None  # known as answered, its bytes not held
        else:
            self._answers[key] = kept
            self._held += len(kept)
        while len(self._answers) > MAX_ANSWERS or self._held > MAX_HELD_BYTES:
            self._forget(next(iter(self._answers)))

    def _forget(self, key: Hashable) -> None:
        old = self._answers.pop(key, None)
        if old is not None:
            self._held -= len(old)

    def again(self, msg: Message) -> bytes | None:
        """What the client gets for ``msg``, a server's answer to no request still waiting
        (``None``: nothing)."""
        key = request_key(msg.id)
        if key not in self._answers:
            _log.error(
                "the MCP server answered a request this session is not waiting for; dropped",
                request_id=repr(msg.id),
            )
            self._count_drop(1, "unknown_request")
            return None
        recorded = self._answers[key]
        if recorded == _CANCELLED:
            _log.info("an answer to a cancelled request was dropped", request_id=repr(msg.id))
            return None
        if recorded is None:
            _log.warning(
                "the MCP server answered a request again; its first answer is no longer held",
                request_id=repr(msg.id),
            )
            return error_response(
                msg.id,
                UPSTREAM_ERROR,
                "otelhooks: the MCP server sent this answer again, and the gateway no longer "
                f"holds the one it gave (larger than {MAX_ANSWER_BYTES} bytes)",
            )
        if recorded != msg.raw:
            _log.warning(
                "the MCP server answered a request again; the client gets the recorded answer",
                request_id=repr(msg.id),
            )
        return recorded
