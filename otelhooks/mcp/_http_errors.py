"""What the client of the HTTP gateway gets of an upstream answer at an HTTP error status.

An SDK client surfaces such a body as the error of the request it posted: the Python SDK reads
a JSON-RPC error in it (one whose ``id`` is ``null`` as its request's), and the TypeScript SDK
(the one Claude Code and Gemini CLI use) throws ``Error POSTing to endpoint (HTTP 500): <the
body's text>`` whatever the body is, which the model then reads as the tool's error. So the body
is judged by the one rule for a tool's error (:mod:`._persist`):

- a JSON-RPC answer (``application/json``) is read as one at 200 is;
- any other body (``text/plain``, an HTML page, JSON that is no JSON-RPC answer, an event
  stream) is, for each posted call a ``tool_result_persist`` hook filters, a JSON-RPC error
  whose message is the body's text (read as UTF-8, as the TypeScript SDK reads it). Left alone
  by the hooks, the body passes as it came; rewritten or blocked, the client gets the JSON-RPC
  answers the hooks made, at the upstream's status, and never the body. A body the hooks could
  not read exactly as a client may (not UTF-8, or another ``charset`` declared) is never passed
  as it came to a filtered call: the answers made from what the hooks read are sent instead.

:func:`frames` is what the client gets of any server frame over HTTP (the gateway's own answer
to a request of the server is posted upstream), :func:`merge` one body of several answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import structlog

from otelhooks._json import loads_bounded
from otelhooks.mcp._calls import request_key
from otelhooks.mcp._jsonrpc import UPSTREAM_ERROR, Message, encode, error_response, parse
from otelhooks.mcp._persist import filters

if TYPE_CHECKING:
    from otelhooks.mcp._gateway import McpSession

__all__ = ["error_answer", "frames", "merge"]

_log = structlog.get_logger("otelhooks.mcp")

_JSON: Final = "application/json"
# charsets under which the body's bytes are the UTF-8 text the hooks judged
_UTF8: Final = frozenset({"", "utf-8", "utf8", "us-ascii", "ascii"})


async def error_answer(
    session: McpSession,
    body: bytes,
    content: bytes,
    headers: dict[str, str],
    *,
    reason: str,
    error_type: str,
) -> tuple[bytes, dict[str, str]]:
    """The body and headers the client gets for the upstream's answer ``content`` (with
    ``headers``) to the posted ``body`` at an HTTP error status (see the module doc); the
    requests it leaves waiting are failed with ``reason``."""
    kind, charset = _content_type(headers)
    msg = parse(content) if kind == _JSON else None
    if msg is not None and msg.kind in ("response", "batch"):
        answered = await _json_answer(session, body, msg, content)
        session.fail(body, reason, error_type=error_type)
        return answered, headers
    sent = parse(body)
    engine = session.gateway.engine
    calls = [
        item
        for item in sent.items()
        if item.kind == "request"
        and filters(engine, session.requests.from_client.get(request_key(item.id)), item)
    ]
    if not calls or not content.strip():
        session.fail(body, reason, error_type=error_type)
        return content, headers
    try:
        text, exact = content.decode("utf-8"), charset in _UTF8
    except UnicodeDecodeError:
        text, exact = content.decode("utf-8", "replace"), False
    made = [error_response(item.id, UPSTREAM_ERROR, text) for item in calls]
    judged = [await frames(session, frame) for frame in made]
    rest = session.fail(body, reason, error_type=error_type)  # the calls no hook filters
    if exact and all(out == [frame] for out, frame in zip(judged, made, strict=True)):
        return content, headers  # left alone: as it came
    answers = [frame for out in judged for frame in out] + rest
    kept = {k: v for k, v in headers.items() if k.lower() != "content-type"}
    return merge(answers), {**kept, "content-type": _JSON}


async def _json_answer(session: McpSession, body: bytes, msg: Message, content: bytes) -> bytes:
    """A JSON-RPC answer at an error status, read as one at 200 is (one whose ``id`` is
    ``null`` as the answer of the request posted, as the Python SDK reads it)."""
    sent = parse(body)
    if msg.kind == "response" and msg.id is None and sent.kind == "request":
        content = encode({**msg.data, "id": sent.id})
    out = await frames(session, content)
    return merge(out) if out else b""


async def frames(session: McpSession, data: bytes) -> list[bytes]:
    """What the client gets of the server frame ``data`` once the session read it; what the
    gateway answers the server itself (a request of the server it could not judge) is posted
    upstream."""
    relay = session.from_server(data)
    out, back = list(relay.to_client), list(relay.to_server)
    if relay.later is not None:
        done = await relay.later
        out = [*(f for f in out if f != data), *done.to_client]
        back += done.to_server
    for frame in back:
        await _answer_server(session, frame)
    return out


async def _answer_server(session: McpSession, frame: bytes) -> None:
    """Post the gateway's answer ``frame`` to a request of the server (logged when it cannot
    reach it: the server then waits, as for a client that never answers)."""
    if session.to_server is None:
        _log.error("the gateway's answer to a request of the server has no way upstream")
        return
    try:
        await session.to_server(frame)
    except Exception as exc:
        _log.error("the gateway's answer to a request of the server was lost", error=str(exc))


def merge(frames: list[bytes]) -> bytes:
    """One body of ``frames``: the frame itself, or a batch of them all."""
    if len(frames) == 1:
        return frames[0]
    items: list[Any] = []
    for frame in frames:
        value = loads_bounded(frame)
        items.extend(value if isinstance(value, list) else [value])
    return encode(items)


def _content_type(headers: dict[str, str]) -> tuple[str, str]:
    """The media type and the ``charset`` (lower case, ``""`` when none) of ``headers``."""
    value = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    kind, *params = (part.strip() for part in value.split(";"))
    charset = ""
    for param in params:
        name, _, given = param.partition("=")
        if name.strip().lower() == "charset":
            charset = given.strip().strip('"').lower()
    return kind.lower(), charset
