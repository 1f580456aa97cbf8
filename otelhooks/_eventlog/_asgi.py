"""The few ASGI pieces the app needs: types, headers, bearer auth and responses."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any

from otelhooks._eventlog._otlp_status import PROTOBUF, otlp_error

__all__ = [
    "Message",
    "Receive",
    "Scope",
    "Send",
    "check_auth",
    "disconnected",
    "header",
    "otlp_request_format",
    "read_body",
    "respond",
    "send_json",
    "send_otlp_error",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lowercase), or ``None``."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def check_auth(value: str | None, token: bytes) -> tuple[int, dict[str, Any]] | None:
    """``None`` when ``value`` is ``Bearer <token>``; else the 401 (none or another scheme) or
    403 (wrong token) answer. Constant-time comparison."""
    scheme, _, credential = (value or "").partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential:
        return 401, {"error": "unauthorized", "message": "a bearer token is required"}
    if not hmac.compare_digest(credential.encode(), token):
        return 403, {"error": "forbidden", "message": "the token is not valid"}
    return None


async def send_json(
    send: Send, status: int, body: Mapping[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    await respond(send, status, json.dumps(body).encode(), b"application/json", headers)


async def send_otlp_error(
    send: Send,
    status: int,
    content_type: str,
    reason: str,
    message: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """An OTLP/HTTP failure: a ``google.rpc.Status`` encoded as ``content_type``."""
    body = otlp_error(content_type, status, reason, message)
    await respond(send, status, body, content_type.encode(), headers)


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    head = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *headers,
    ]
    if status == 401:
        head.append((b"www-authenticate", b'Bearer realm="otelhooks"'))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


async def disconnected(receive: Receive) -> None:
    """Return once the client closed its connection (what is left of its body is dropped): a
    client waiting for a long answer (a person's) may give up first."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def read_body(receive: Receive, limit: int, head: list[bytes] | None = None) -> bytes | None:
    """The request body (chunked or not), ``None`` past ``limit`` bytes (then ``head``, when
    given, gets what was read: the body's start, for a caller that must tell what it was);
    empty when the client went away."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            if head is not None:
                head[:] = [b"".join(chunks)[: 1 << 20]]
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def otlp_request_format(
    scope: Scope, send: Send, content_types: Sequence[str]
) -> tuple[str, str] | None:
    """(content type, content encoding) of an OTLP request; ``None`` once a 415 was sent for
    a type not in ``content_types`` or an encoding other than gzip or none."""
    ctype = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
    answer = PROTOBUF if ctype == PROTOBUF else "application/json"
    if ctype not in content_types:
        wanted = " or ".join(content_types)
        await send_otlp_error(send, 415, answer, "unsupported_media_type", f"use {wanted}")
        return None
    encoding = (header(scope, b"content-encoding") or "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        message = "use gzip or no encoding"
        await send_otlp_error(send, 415, answer, "unsupported_encoding", message)
        return None
    return ctype, encoding
