"""The few ASGI and HTTP pieces the gateway's HTTP side needs: types, headers, bounded
bodies, bearer auth and plain answers."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

__all__ = [
    "Receive",
    "Scope",
    "Send",
    "raw_headers",
    "read_body",
    "read_upstream",
    "request_headers",
    "respond",
    "too_large",
    "unauthorized",
    "until_disconnect",
]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def until_disconnect(stream: Awaitable[None], receive: Receive) -> None:
    reader = asyncio.ensure_future(stream)

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    await asyncio.wait({reader, watcher}, return_when=asyncio.FIRST_COMPLETED)
    for task in (reader, watcher):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def request_headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def raw_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body; ``None`` as soon as it passes ``limit`` bytes (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def read_upstream(response: httpx.Response, limit: int) -> bytes | None:
    """The upstream's answer; ``None`` as soon as it passes ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def unauthorized(value: str | None, token: bytes) -> tuple[int, bytes, dict[str, str]] | None:
    """``None`` for ``Bearer <token>``; else 401 (no bearer token) or 403 (another one)."""
    scheme, _, credential = (value or "").partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential:
        return (
            401,
            b"a bearer token is required\n",
            {
                "content-type": "text/plain",
                "www-authenticate": 'Bearer realm="otelhooks"',
            },
        )
    if not hmac.compare_digest(credential.encode(), token):
        return 403, b"the token is not valid\n", {"content-type": "text/plain"}
    return None


async def too_large(send: Send, limit: int) -> None:
    text = f"the request body is longer than {limit} bytes\n".encode()
    await respond(send, 413, text, {"content-type": "text/plain", "connection": "close"})


async def respond(send: Send, status: int, body: bytes, headers: Mapping[str, str]) -> None:
    out = dict(headers)
    out["content-length"] = str(len(body))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers(out)})
    await send({"type": "http.response.body", "body": body, "more_body": False})
