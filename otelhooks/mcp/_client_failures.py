"""What the client gets for a frame of its own the gateway will not, or cannot, pass on.

Nothing of such a frame reaches the server: a frame that cannot be read is answered with a
JSON-RPC parse error (:func:`refuse`), one a server could read as another message with an
invalid-request error (:func:`invalid`), and one the gateway itself failed on, at once or while
its hooks decided, with an internal error to each of its requests (:class:`ClientFailures`),
logged: a request it had started ends there, its id free again.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import structlog

from otelhooks.mcp._calls import request_key
from otelhooks.mcp._jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    Message,
    encode,
    error_response,
    parse,
    recover_id,
)
from otelhooks.mcp._relay import Relay

if TYPE_CHECKING:
    from otelhooks.mcp._requests import OpenRequests

__all__ = ["ClientFailures", "failed_itself", "invalid", "refuse"]

_log = structlog.get_logger("otelhooks.mcp")


def refuse(raw: bytes, problem: str) -> Relay:
    """Answer an unreadable client frame (``problem``: why) with a parse error, unforwarded."""
    _log.warning("a client frame could not be read; answered with a parse error", problem=problem)
    return Relay(
        to_client=[error_response(recover_id(raw), PARSE_ERROR, f"Parse error: {problem}")]
    )


def invalid(msg: Message, problem: str) -> Relay:
    """Answer a client message a server could misread (``problem``) with -32600, unsent."""
    _log.warning("a client frame was refused as an invalid request", problem=problem)
    return Relay(to_client=[error_response(msg.id, INVALID_REQUEST, f"Invalid request: {problem}")])


def failed_itself(request_id: Any, exc: Exception) -> bytes:
    """The answer to a client request the gateway itself failed on (logged): an internal error,
    the request never forwarded."""
    _log.error("the gateway failed on a client frame; answered with an error", error=str(exc))
    return error_response(request_id, INTERNAL_ERROR, f"otelhooks: gateway failed: {exc}")


class ClientFailures:
    """The client frames of a session the gateway failed on (its open ``requests``)."""

    def __init__(self, requests: OpenRequests) -> None:
        self.requests = requests

    async def guarded(self, raw: bytes, later: Awaitable[Relay]) -> Relay:
        """``later``, the decision still running on the client frame ``raw``, or what
        :meth:`failed` says when the gateway fails in it."""
        try:
            return await later
        except Exception as exc:
            return self.failed(raw, exc, None)

    def failed(self, raw: bytes, exc: Exception, since: float | None) -> Relay:
        """The client frame ``raw`` the gateway failed on: each of its requests is answered
        with an internal error, nothing forwarded; one it had started (``since``: in this
        call; ``None``: its decision was running) ends there, its id free again."""
        try:
            msg = parse(raw)
        except Exception:
            return Relay(to_client=[failed_itself(recover_id(raw), exc)])
        answers = []
        for item in msg.items() if msg.kind in ("request", "batch") else []:
            if item.kind != "request":
                continue
            answer = failed_itself(item.id, exc)
            if since is None:  # answered before the decision failed, or still deciding
                if self.requests.gateway_failed(item.id, answer):
                    answers.append(answer)
                continue
            pending = self.requests.from_client.get(request_key(item.id))
            if pending is not None and pending.started >= since:  # not an earlier one's
                self.requests.gateway_failed(item.id, answer)
            answers.append(answer)
        if msg.kind == "batch" and answers:
            return Relay(to_client=[encode([json.loads(a) for a in answers])])
        if not answers and since is not None:  # a notification or answer: as before
            answers = [failed_itself(recover_id(raw), exc)]
        return Relay(to_client=answers)
