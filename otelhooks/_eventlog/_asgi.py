"""The few ASGI pieces the app needs: types, headers, bearer auth and responses."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any

__all__ = ["Message", "Receive", "Scope", "Send", "check_auth", "header", "respond", "send_json"]

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
