"""What the client of one MCP session was answered: the answer a server sends again is the one
the gateway recorded, and an answer for no request of the session never reaches the client.

Over Streamable HTTP a server with an event store sends a stream's events again after the
client's ``Last-Event-ID`` (a client whose connection broke resumes the stream), answers
included. The gateway recorded and filtered each answer when it first crossed
(``tool_result_persist`` may have blocked or rewritten it, a hook may have denied the call):
passing the server's answer on again would give the client what the hooks never let through,
with no span and no observer. So each answer the client was given is remembered (the last
:data:`MAX_ANSWERS` of a session: its digest, and its bytes while they are small), and an answer
for a request no longer waiting is:

- the recorded answer, when the gateway holds its bytes (logged when the server's differs);
- the server's answer, when it is byte for byte the one the client was given (its digest);
- else a JSON-RPC error saying the answer is no longer held;
- dropped when the request was cancelled (the client stopped waiting);
- dropped, logged and counted (``otelhooks.dropped``, source ``mcp_answers``) when the
  session never made that request, or answered it too long ago to be remembered.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Final, NamedTuple

import structlog

from otelhooks.mcp._calls import request_key
from otelhooks.mcp._jsonrpc import UPSTREAM_ERROR, Message, error_response

__all__ = ["MAX_ANSWERS", "MAX_ANSWER_BYTES", "MAX_HELD_BYTES", "Answered"]

_log = structlog.get_logger("otelhooks.mcp")

# Answers remembered per session, and the bytes held for them: a client resumes within seconds,
# and a session must not grow the gateway by what its tools return (a larger answer is known by
# its digest alone).
MAX_ANSWERS: Final = 256
MAX_HELD_BYTES: Final = 1024 * 1024
MAX_ANSWER_BYTES: Final = 64 * 1024


class _Answer(NamedTuple):
    """What the client was sent: its bytes while small, else their digest (neither: nothing,
    the client cancelled)."""

    frame: bytes | None
    digest: bytes | None


def _digest(frame: bytes) -> bytes:
    return hashlib.sha256(frame).digest()


class Answered:
    """The answers the client of a session was given, by request id (most recent last)."""

    def __init__(self, count_drop: Callable[[int, str], None]) -> None:
        self._answers: OrderedDict[Hashable, _Answer] = OrderedDict()
        self._held = 0
        self._count_drop = count_drop

    def record(self, request_id: object, frame: bytes | None) -> None:
        """The client's request ``request_id`` was answered with ``frame`` (``None``: the
        client was sent no answer because it cancelled the request)."""
        key = request_key(request_id)
        self._forget(key)
        if frame is None:
            self._answers[key] = _Answer(None, None)
        elif len(frame) <= MAX_ANSWER_BYTES:
            self._answers[key] = _Answer(frame, None)
            self._held += len(frame)
        else:
            self._answers[key] = _Answer(None, _digest(frame))
        while len(self._answers) > MAX_ANSWERS or self._held > MAX_HELD_BYTES:
            self._forget(next(iter(self._answers)))

    def given(self, request_id: object) -> bool:
        """Whether the client was given an answer to ``request_id`` that is remembered (a
        cancelled request was given none)."""
        recorded = self._answers.get(request_key(request_id))
        return recorded is not None and (recorded.frame, recorded.digest) != (None, None)

    def _forget(self, key: Hashable) -> None:
        old = self._answers.pop(key, None)
        if old is not None:
            self._held -= len(old.frame or b"")

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
        if recorded.frame is None and recorded.digest is None:
            _log.info("an answer to a cancelled request was dropped", request_id=repr(msg.id))
            return None
        if recorded.digest is not None and recorded.digest == _digest(msg.raw):
            return msg.raw  # byte for byte what the client was given
        if recorded.frame is None:
            _log.warning(
                "the MCP server answered a request again; its first answer is no longer held",
                request_id=repr(msg.id),
            )
            return error_response(
                msg.id,
                UPSTREAM_ERROR,
                "otelhooks: the MCP server sent this answer again, other than the client was "
                f"given, and the gateway no longer holds that one (larger than "
                f"{MAX_ANSWER_BYTES} bytes)",
            )
        if recorded.frame != msg.raw:
            _log.warning(
                "the MCP server answered a request again; the client gets the recorded answer",
                request_id=repr(msg.id),
            )
        return recorded.frame
