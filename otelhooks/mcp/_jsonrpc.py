"""JSON-RPC 2.0 framing for the gateway: classify a message without re-encoding it.

A :class:`Message` keeps the bytes it was read from; the gateway forwards those bytes unless a
hook changes the message, so what the peer receives is byte-for-byte what was sent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from otelhooks._json import JsonProblem, loads_bounded

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_REQUEST",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "UPSTREAM_ERROR",
    "Message",
    "encode",
    "error_response",
    "misspelled",
    "parse",
    "recover_id",
    "result_response",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602  # the MCP specification's answer to an unknown tool
INTERNAL_ERROR: Final = -32603
# Implementation-defined server errors (-32000..-32099): the upstream server is gone or failed.
UPSTREAM_ERROR: Final = -32000
REQUEST_CANCELLED: Final = -32800

Kind = Literal["request", "notification", "response", "batch", "invalid", "unreadable"]

# How much of an unreadable frame is searched for its id.
_ID_SEARCH_BYTES: Final = 4096
_ID_TOKENS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_ID_VALUE: Final = re.compile(r'\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,256}")')
# The member names a server's JSON reader may match ignoring case (Go's encoding/json does, and
# so every MCP server built on it): to such a server ``Method``, ``ID`` or ``params`` spelled
# with a long s (U+017F) is the member the gateway read as absent, so a guard would judge
# another call than the one that runs.
_MEMBERS: Final = frozenset({"jsonrpc", "id", "method", "params", "result", "error"})
_CALL_MEMBERS: Final = frozenset({"name", "arguments"})


@dataclass(slots=True)
class Message:
    """One JSON-RPC message (or batch) as received.

    Attributes:
        raw: the bytes it was read from, without the line terminator.
        data: the decoded JSON value (``None`` when ``raw`` is not JSON); values nested more
            than 64 levels deep are kept as their JSON text (see :mod:`otelhooks._json`).
        kind: ``request``, ``notification``, ``response``, ``batch``, ``invalid`` (JSON, but
            not a JSON-RPC message) or ``unreadable`` (not UTF-8 JSON that can be read).
        problem: why an ``unreadable`` message could not be read.
    """

    raw: bytes
    data: Any
    kind: Kind
    problem: str | None = None

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
    """Classify ``raw`` (one JSON value); one that cannot be read (invalid UTF-8, not JSON, an
    integer too long to convert) is ``unreadable``. Any depth is read (deep values as text).

    Example:
        >>> parse(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}').kind
        'request'
        >>> parse(b'{"id":1,"method":"tools/call","params":{"name":"w\\xff"}}').kind
        'unreadable'
    """
    try:
        data = loads_bounded(raw)
    except JsonProblem as exc:
        return Message(raw, None, "unreadable", str(exc))
    return _classify(raw, data)


def misspelled(data: Any) -> str | None:
    """The first member name of ``data`` that is a JSON-RPC member's (or, in a ``tools/call``'s
    ``params``, ``name``'s or ``arguments``') spelled with other cases, or a second spelling of
    one of the call's argument names (``cmd`` and ``CMD``: a guard reads one, a Go tool's
    struct the last); ``None`` when there is none.

    Example:
        >>> misspelled({"id": 1, "method": "tools/call", "params": {"Name": "rm"}})
        'Name'
        >>> misspelled({"id": 1, "method": "tools/call", "params": {"name": "rm"}})
    """
    if not isinstance(data, dict):
        return None
    found = _other_spelling(data, _MEMBERS)
    params = data.get("params")
    if found is None and data.get("method") == "tools/call" and isinstance(params, dict):
        found = _other_spelling(params, _CALL_MEMBERS)
        args = params.get("arguments")
        if found is None and isinstance(args, dict):
            found = _second_spelling(args)
    return found


def _other_spelling(members: dict[str, Any], names: frozenset[str]) -> str | None:
    for key in members:
        if key not in names and key.casefold() in names:
            return key
    return None


def _second_spelling(members: dict[str, Any]) -> str | None:
    seen: set[str] = set()
    for key in members:
        folded = key.casefold()
        if folded in seen:
            return key
        seen.add(folded)
    return None


def recover_id(raw: bytes) -> str | int | None:
    """The top-level ``id`` of a frame that could not be parsed, when its first bytes show it
    (what a parse error answer carries; ``None`` when it cannot be told).

    Example:
        >>> recover_id(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":\\xff}}')
        7
    """
    text = raw[:_ID_SEARCH_BYTES].decode("utf-8", "replace")
    depth = 0
    for match in _ID_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
        elif depth == 1 and token == '"id"':
            value = _ID_VALUE.match(text, match.end())
            if value is None:
                return None
            try:
                found = json.loads(value.group(1))
            except ValueError:
                return None
            return found if isinstance(found, str | int) else None
    return None


def encode(data: Any) -> bytes:
    """Compact JSON without a line terminator (stdio frames are one line each); a lone
    surrogate a peer sent as an escape is written as an escape again."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "backslashreplace"
    )


def result_response(request_id: Any, result: dict[str, Any]) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "result": result})


def error_response(request_id: Any, code: int, message: str) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
