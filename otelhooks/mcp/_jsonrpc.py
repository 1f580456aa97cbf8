"""JSON-RPC 2.0 framing for the gateway: classify a message without re-encoding it.

A :class:`Message` keeps the bytes it was read from; the gateway forwards those bytes unless a
hook changes the message, so what the peer receives is byte-for-byte what was sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "INTERNAL_ERROR",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "UPSTREAM_ERROR",
    "Message",
    "encode",
    "error_response",
    "parse",
    "result_response",
]

PARSE_ERROR: Final = -32700
INTERNAL_ERROR: Final = -32603
# Implementation-defined server errors (-32000..-32099): the upstream server is gone or failed.
UPSTREAM_ERROR: Final = -32000
REQUEST_CANCELLED: Final = -32800

Kind = Literal["request", "notification", "response", "batch", "invalid"]


@dataclass(slots=True)
class Message:
    """One JSON-RPC message (or batch) as received.

    Attributes:
        raw: the bytes it was read from, without the line terminator.
        data: the decoded JSON value (``None`` when ``raw`` is not JSON).
        kind: ``request``, ``notification``, ``response``, ``batch`` or ``invalid``.
    """

    raw: bytes
    data: Any
    kind: Kind

    @property
    def method(self) -> str | None:
        method = self.data.get("method") if isinstance(self.data, dict) else None
        return method if isinstance(method, str) else None

    @property
    def id(self) -> Any:
        """The request or response id (``None`` for notifications)."""
        return self.data.get("id") if isinstance(self.data, dict) else None

    @property
    def params(self) -> dict[str, Any]:
        params = self.data.get("params") if isinstance(self.data, dict) else None
        return params if isinstance(params, dict) else {}

    def items(self) -> list[Message]:
        """The messages of a batch (each re-encoded: a batch has no bytes per element)."""
        if self.kind != "batch":
            return [self]
        return [_classify(encode(item), item) for item in self.data]


def _classify(raw: bytes, data: Any) -> Message:
    if isinstance(data, list):
        return Message(raw, data, "batch" if data else "invalid")
    if not isinstance(data, dict):
        return Message(raw, data, "invalid")
    if isinstance(data.get("method"), str):
        return Message(raw, data, "request" if "id" in data else "notification")
    if "id" in data and ("result" in data or "error" in data):
        return Message(raw, data, "response")
    return Message(raw, data, "invalid")


def parse(raw: bytes) -> Message:
    """Classify ``raw`` (one JSON value); a message that is not JSON is ``invalid``.

    Example:
        >>> parse(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}').kind
        'request'
    """
    try:
        data = json.loads(raw)
    except ValueError:
        return Message(raw, None, "invalid")
    return _classify(raw, data)


def encode(data: Any) -> bytes:
    """Compact JSON without a line terminator (stdio frames are one line each)."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def result_response(request_id: Any, result: dict[str, Any]) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "result": result})


def error_response(request_id: Any, code: int, message: str) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
