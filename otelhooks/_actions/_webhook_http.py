"""One webhook HTTP request, sync or async, with the limits the seed sets; outcomes as values.

Error classes (LobeHub's): ``configuration`` (bad URL base, unset header variable),
``http_error`` (any status the caller does not accept, including redirects, which are refused),
``network_error``, ``timeout``, ``invalid_response``, ``response_too_large`` (a body read beyond
``limit``). Requests carry ``Idempotency-Key`` (the event's stable id) so receivers can
de-duplicate at-least-once deliveries. httpx errors are translated here, at one boundary.

Limits that hold whatever the endpoint does:

- **One deadline** (``timeout``) covers connect, response headers and body together: the request
  runs as a task that is cancelled at the deadline (httpx's own timeouts restart with every
  read, so a peer that drips its headers a byte a second would hold it forever). A sync caller
  waits on the process's webhook I/O loop (one daemon thread, recreated after a fork), so no
  thread of the agent is ever held past the deadline.
- **Bytes, not decoded bytes**: requests say ``Accept-Encoding: identity`` and the body is read
  raw, so ``limit`` counts exactly what is kept in memory. An answer with any other
  ``Content-Encoding`` (gzip, zstd, br, ``gzip, gzip``: a compression bomb is a few KB on the
  wire and gigabytes decoded) is never decoded: it is an ``invalid_response`` ("encoded answer
  refused"), with its status (a notification's 2xx still counts as delivered: its answer is
  ignored anyway).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import re
import socket
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final, Literal, TypeVar

import httpx

from otelhooks._actions._webhook_config import WebhookConfig, resolve_headers
from otelhooks._fork_guard import ONCE
from otelhooks._tls import tls_context
from otelhooks._worker import at_fork

__all__ = [
    "CONTROL_RESPONSE_LIMIT",
    "Delivery",
    "ErrorClass",
    "Prepared",
    "async_client",
    "failure_reason",
    "io_client",
    "prepare",
    "run_on_io_loop",
    "send",
    "send_async",
    "start_io_loop",
]

ErrorClass = Literal[
    "configuration", "http_error", "network_error", "timeout", "invalid_response",
    "response_too_large",
]  # fmt: skip
CONTROL_RESPONSE_LIMIT: Final = 64 * 1024
USER_AGENT: Final = "otelhooks-webhook/1"
# A header value the HTTP client will send: visible ASCII, inner spaces and tabs, no CR/LF.
_HEADER_VALUE: Final = re.compile(r"(?:[!-~]+(?:[ \t]+[!-~]+)*)?")


@dataclass(frozen=True, slots=True)
class Delivery:
    """What one request did. ``ok`` means a status the caller accepts was received."""

    ok: bool
    status: int | None = None
    error_class: ErrorClass | None = None
    message: str = ""
    body: bytes = b""
    duration_s: float = 0.0

    @property
    def delivered(self) -> bool:
        """A notification's success: any 2xx. Its answer is ignored, so a body too large or too
        slow to read in full does not make an accepted delivery fail (or be sent again)."""
        return self.ok or (self.status is not None and 200 <= self.status < 300)

    @property
    def retryable(self) -> bool:
        """The written retry rule: network errors, timeouts, 5xx, 408 and 429 are retried;
        other 4xx, configuration and response errors are not."""
        if self.ok or self.error_class in ("configuration", "invalid_response"):
            return False
        if self.error_class in ("network_error", "timeout"):
            return True
        return self.status is not None and (self.status >= 500 or self.status in (408, 429))


@dataclass(frozen=True, slots=True)
class Prepared:
    url: str
    headers: dict[str, str]
    content: bytes


def prepare(config: WebhookConfig, content: bytes, idempotency_key: str) -> Prepared | Delivery:
    """Resolve the URL and header templates now (send time). A failure is a Delivery."""
    try:
        url = config.absolute_url()
        headers = resolve_headers(config)
    except LookupError as exc:
        return Delivery(False, error_class="configuration", message=str(exc))
    for name, value in headers.items():
        if not _HEADER_VALUE.fullmatch(value):
            # Never quote the value (httpx's own error would): it comes from the environment.
            message = f"header {name!r} is not a valid HTTP header value once resolved"
            return Delivery(False, error_class="configuration", message=message)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Accept-Encoding": "identity",
        "Idempotency-Key": idempotency_key,
        **headers,
    }
    return Prepared(url, headers, content)


_T = TypeVar("_T")


class _IoLoop:
    """The process's webhook I/O loop: a daemon thread running an event loop, with one pooled
    async client (keep-alive) for sync callers. Recreated after a fork."""

    def __init__(self) -> None:
        self._forget()
        at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        # Also the fork hook: a child has no thread running its parent's loop, and the lock may
        # have been held by a parent's thread at the fork (a child's delivery then waited on it
        # forever)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx.AsyncClient | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._client = None
                self._loop = start_io_loop("otelhooks-webhook-sync-io")
            return self._loop

    def client(self) -> httpx.AsyncClient:
        """The loop's client (call on the loop)."""
        if self._client is None:
            self._client = async_client(max_connections=64)
        return self._client


def start_io_loop(name: str) -> asyncio.AbstractEventLoop:
    """A new event loop for our HTTP clients, run by a daemon thread called ``name``.

    A process's first loop makes one request of its own, under the fork guard
    (:data:`otelhooks._fork_guard.ONCE`): httpx, httpcore and anyio import modules at their first
    request, and a child forked during such an import inherits that module's lock held, by a
    thread it does not have (its every request then waited forever). Callers' coroutines run on
    the loop meanwhile, on its thread and so under the same guard.
    """
    loop = asyncio.new_event_loop()
    threading.Thread(target=_run_io_loop, args=(loop,), name=name, daemon=True).start()
    return loop


_first_request_made = False


def _run_io_loop(loop: asyncio.AbstractEventLoop) -> None:
    global _first_request_made
    with ONCE:
        if not _first_request_made:
            try:
                loop.run_until_complete(_first_request())
            except asyncio.CancelledError:
                # a shutdown that came first cancelled every task of the loop, this one too:
                # the loop must still run, to finish that shutdown
                pass
            else:
                _first_request_made = True  # a forked child inherits the modules it imported
    loop.run_forever()


async def _first_request() -> None:
    """One request to a throwaway server of our own on the loopback: the whole path a delivery
    takes, from connect to the answer. The server is a thread, not a task of this loop: a
    shutdown that comes first cancels every task of the loop, and asyncio logs a traceback for
    a connection handler cancelled before it ran."""
    try:
        listener = socket.create_server(("127.0.0.1", 0))
    except OSError:
        return  # no loopback to listen on: the first delivery meets the path itself
    listener.settimeout(2.0)
    port = listener.getsockname()[1]
    threading.Thread(
        target=_answer_once, args=(listener,), name="otelhooks-warm-up", daemon=True
    ).start()
    try:
        async with async_client(max_connections=2) as client:
            await client.get(f"http://127.0.0.1:{port}/", timeout=2.0)
    except httpx.HTTPError:
        pass


def _answer_once(listener: socket.socket) -> None:
    with listener, contextlib.suppress(OSError):
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(2.0)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            conn.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")


_IO = _IoLoop()


def io_client() -> httpx.AsyncClient:
    """The webhook I/O loop's pooled client (call it on that loop)."""
    return _IO.client()


def run_on_io_loop(coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
    """Run ``coro`` on the process's webhook I/O loop; the caller waits on the future."""
    return asyncio.run_coroutine_threadsafe(coro, _IO.loop())


def async_client(*, max_connections: int = 128) -> httpx.AsyncClient:
    """A new pooled async client; the caller owns it (one per event loop)."""
    return httpx.AsyncClient(
        follow_redirects=False,
        limits=httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections // 2
        ),
        trust_env=False,
        verify=tls_context(trust_env=False),
    )


def _refused(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _translate(exc: Exception) -> tuple[ErrorClass, str]:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout", f"timed out ({type(exc).__name__})"
    if _refused(exc):
        # The async client says "All connection attempts failed"; the cause says why.
        return "network_error", "connection refused"
    if isinstance(exc, httpx.TransportError):
        return "network_error", f"{type(exc).__name__}: {exc}"
    return "network_error", f"{type(exc).__name__}: {exc}"


def _classify(status: int, body: bytes, accept: tuple[int, ...], started: float) -> Delivery:
    duration = time.perf_counter() - started
    if status in accept:
        return Delivery(True, status, body=body, duration_s=duration)
    kind = "redirect refused" if 300 <= status < 400 else "unexpected status"
    return Delivery(False, status, "http_error", f"{kind} {status}", body, duration)


class _Body:
    """Reads a response body within the limits: shared by the sync and async senders."""

    __slots__ = ("accept", "data", "limit", "started", "status", "timeout")

    def __init__(
        self, status: int, *, accept: tuple[int, ...], limit: int, timeout: float, started: float
    ) -> None:
        self.status = status
        self.accept = accept
        self.limit = limit
        self.timeout = timeout
        self.started = started
        self.data = b""

    def add(self, chunk: bytes) -> Delivery | None:
        """Take one chunk; a Delivery when reading must stop (too slow or too large)."""
        elapsed = time.perf_counter() - self.started
        if elapsed > self.timeout:
            # httpx's read timeout restarts with every chunk: a dripping peer is cut here.
            return Delivery(False, self.status, "timeout", "response slower than the timeout",
                            duration_s=elapsed)  # fmt: skip
        self.data += chunk
        if len(self.data) > self.limit:
            return Delivery(False, self.status, "response_too_large",
                            f"response over {self.limit} bytes", duration_s=elapsed)  # fmt: skip
        return None

    def done(self) -> Delivery:
        return _classify(self.status, self.data, self.accept, self.started)


def _failed(exc: httpx.HTTPError, started: float) -> Delivery:
    error_class, message = _translate(exc)
    return Delivery(False, None, error_class, message, duration_s=time.perf_counter() - started)


def send(
    config: WebhookConfig, prepared: Prepared, *, accept: tuple[int, ...], limit: int
) -> Delivery:
    """POST ``prepared`` on the webhook I/O loop and wait for the outcome: at most ``limit`` bytes
    of the answer, all of it within ``config.timeout`` (the calling thread is free by then)."""

    async def on_loop() -> Delivery:
        return await send_async(io_client(), config, prepared, accept=accept, limit=limit)

    future = run_on_io_loop(on_loop())
    try:
        # send_async ends itself at the deadline; the grace covers a loop busy with others.
        return future.result(timeout=config.timeout + 1.0)
    except concurrent.futures.TimeoutError:
        future.cancel()
        return Delivery(False, None, "timeout", _DEADLINE_MESSAGE, duration_s=config.timeout)


_DEADLINE_MESSAGE: Final = "no whole answer within the timeout (connect, headers and body)"


class _Progress:
    """What a request got before its deadline: the status, once the headers are in."""

    __slots__ = ("status",)

    def __init__(self) -> None:
        self.status: int | None = None


async def send_async(
    client: httpx.AsyncClient,
    config: WebhookConfig,
    prepared: Prepared,
    *,
    accept: tuple[int, ...],
    limit: int,
) -> Delivery:
    """POST ``prepared``; read at most ``limit`` raw bytes of the answer; all within one
    deadline of ``config.timeout`` seconds that covers connect, headers and body."""
    started = time.perf_counter()
    progress = _Progress()
    try:
        return await asyncio.wait_for(
            _exchange(client, config, prepared, accept, limit, started, progress),
            config.timeout,
        )
    except TimeoutError:
        return Delivery(
            False, progress.status, "timeout", _DEADLINE_MESSAGE,
            duration_s=time.perf_counter() - started,
        )  # fmt: skip


async def _exchange(
    client: httpx.AsyncClient,
    config: WebhookConfig,
    prepared: Prepared,
    accept: tuple[int, ...],
    limit: int,
    started: float,
    progress: _Progress,
) -> Delivery:
    try:
        async with client.stream(
            "POST", prepared.url, content=prepared.content, headers=prepared.headers,
            timeout=config.timeout,
        ) as response:  # fmt: skip
            progress.status = response.status_code
            encoding = response.headers.get("content-encoding", "").strip().lower()
            if encoding not in ("", "identity"):
                return Delivery(
                    False, response.status_code, "invalid_response",
                    f"encoded answer refused (Content-Encoding: {encoding[:40]}); "
                    "the request asked for identity",
                    duration_s=time.perf_counter() - started,
                )  # fmt: skip
            body = _Body(
                response.status_code,
                accept=accept,
                limit=limit,
                timeout=config.timeout,
                started=started,
            )
            async for chunk in response.aiter_raw():
                if (stop := body.add(chunk)) is not None:
                    return stop
            return body.done()
    except httpx.HTTPError as exc:
        return _failed(exc, started)


def failure_reason(delivery: Delivery) -> tuple[str, bool]:
    """A short reason for a failed delivery ("connection refused", "401 Unauthorized"), and
    whether the endpoint did not answer at all (refused, unreachable, timed out)."""
    if delivery.status is not None:
        try:
            phrase = HTTPStatus(delivery.status).phrase
        except ValueError:
            phrase = ""
        return f"{delivery.status} {phrase}".strip(), False
    message = delivery.message
    if delivery.error_class == "timeout":
        return "no answer (timed out)", True
    if "refused" in message.lower() or "Errno 111" in message:
        return "connection refused", True
    dead = delivery.error_class == "network_error"
    return message or (delivery.error_class or "failed"), dead
