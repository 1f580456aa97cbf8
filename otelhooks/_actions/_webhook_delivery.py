"""Notification webhooks, delivered off the agent's path.

``enqueue`` is all the agent pays: the event goes into a bounded queue (a full queue drops and
counts). A worker thread builds bodies and hands them to a private event loop where one pooled
``httpx.AsyncClient`` (keep-alive) sends them with bounded concurrency. The retry rule, written
once (:attr:`Delivery.retryable`): network errors, timeouts, 5xx, 408 and 429 are retried with
exponential backoff and full jitter until ``retry_deadline_s``; other 4xx and bad configuration
are not. Whatever is given up on is counted in ``otelhooks.dropped{source="webhook"}``.
Notifications ignore the response content; any 2xx (204 included) is a success.

``delivery: queue`` hooks go to the durable :class:`~otelhooks._actions._outbox.Outbox` instead:
the insert is committed before ``enqueue`` returns, so they survive a restart.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import structlog

from otelhooks import _semconv as sc
from otelhooks._actions._outbox import DurableQueue, Outbox, Report, backoff_s
from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._actions._webhook_http import (
    Delivery,
    async_client,
    failure_reason,
    prepare,
    send_async,
    start_io_loop,
)
from otelhooks._actions._webhook_payload import PayloadBuilder
from otelhooks._encoding import dumps
from otelhooks._events import HookEvent
from otelhooks._export._report import DeliveryTracker, DestinationReport
from otelhooks._metrics import AgentMetrics
from otelhooks._redact import scrub
from otelhooks._worker import BoundedWorker, at_fork

__all__ = ["WebhookDeliverer"]

_log = structlog.get_logger("otelhooks")
_SUCCESS = tuple(range(200, 300))
# An outbox file another process held locked when it was first opened is opened again no sooner
# than this: meanwhile an enqueue follows its fallback without waiting (as the pump's backoff).
_OUTBOX_RETRY_S = 2.0


@dataclass(slots=True)
class _Item:
    hook_id: str
    hook_type: str
    event: str
    config: WebhookConfig
    payload: HookEvent


@dataclass(slots=True)
class _Send:
    """One HTTP request: a single event's body, or a JSON array of a batching hook's bodies."""

    items: list[_Item]
    bodies: list[bytes]

    def content(self) -> tuple[bytes, str]:
        """The request body and its idempotency key (the event id; for a batch, of all ids)."""
        if len(self.items) == 1 and self.items[0].config.batch_size <= 1:
            return self.bodies[0], self.items[0].payload.eventId
        key = hashlib.sha256("|".join(i.payload.eventId for i in self.items).encode()).hexdigest()
        return b"[" + b",".join(self.bodies) + b"]", f"batch-{key[:32]}"


class WebhookDeliverer:
    """Delivers notification webhooks in the background. One per process is usual.

    Args:
        metrics: where invocations, latency and drops are counted.
        builder: the payload builder (redaction, email enrichment).
        max_queue_size: bound of the in-memory queue. Each waiting event holds its payload
            (~3.5 KB), so the default of 4,096 keeps a dead endpoint's backlog near 14 MB.
        concurrency: requests in flight at most.
        retry_deadline_s: how long a failing delivery is retried (fetch mode).
        outbox_path: SQLite file of the durable queue for ``delivery: queue`` hooks.
        outbox_factory: builds the durable queue instead (given the report callback), e.g. a
            PostgreSQL store's outbox shared by a fleet of ``serve`` instances.
        fail_fast: do not retry a refused connection or a timeout, and skip a URL that failed
            that way (short-lived commands; every deliverer turns fail-fast at shutdown).
    """

    def __init__(
        self,
        *,
        metrics: AgentMetrics | None = None,
        builder: PayloadBuilder | None = None,
        max_queue_size: int = 4_096,
        concurrency: int = 8,
        retry_deadline_s: float = 60.0,
        outbox_path: str | os.PathLike[str] | None = None,
        outbox_factory: Callable[[Report], DurableQueue] | None = None,
        fail_fast: bool = False,
    ) -> None:
        self.metrics = metrics or AgentMetrics()
        self.fail_fast = fail_fast
        self._shutting_down = False
        # One tracker per URL (without query string), for the delivery report.
        self._trackers: dict[str, DeliveryTracker] = {}
        self.builder = builder or PayloadBuilder()
        self.retry_deadline_s = retry_deadline_s
        self._concurrency = concurrency
        self._closed = False
        self._start_io()
        at_fork(after_in_child=self._start_io)
        self._outbox_path = outbox_path
        self._outbox_factory = outbox_factory
        self._outbox: DurableQueue | None = None
        # an outbox file that could not be opened (locked) is tried again this late, not by
        # every enqueue on the agent's thread: (when, why)
        self._outbox_retry: tuple[float, str] = (0.0, "")
        # One drop recorder for the queue and for deliveries given up on (attributes built once).
        self._count_dropped = self.metrics.drop_counter("webhook")
        self._worker: BoundedWorker[_Item] = BoundedWorker(
            "otelhooks-webhooks",
            self._handle_batch,
            max_queue_size=max_queue_size,
            max_batch_size=min(256, max_queue_size),
            schedule_delay_s=0.05,
            on_drop=self._count_dropped,
        )

    # -- the agent's side -------------------------------------------------------------------------

    def enqueue(
        self, hook_id: str, hook_type: str, config: WebhookConfig, payload: HookEvent
    ) -> bool:
        """Queue one notification. Never blocks on the network; False when it was dropped."""
        item = _Item(hook_id, hook_type, payload.event, config, payload)
        if config.delivery == "queue":
            return self._enqueue_durable(item)
        tracker = self._tracker(config)
        tracker.sent()
        queued = self._worker.submit(item)
        if not queued:
            tracker.dropped(1, "queue full")
        return queued

    def _tracker(self, config: WebhookConfig) -> DeliveryTracker:
        from otelhooks._export._report import public_url

        key = public_url(config.url)
        tracker = self._trackers.get(key)
        if tracker is None:
            tracker = self._trackers.setdefault(
                key, DeliveryTracker("webhooks", key, fail_fast=self.fail_fast)
            )
        return tracker

    def reports(self) -> list[DestinationReport]:
        """What reached each webhook URL so far. ``delivery: queue`` hooks are not included
        (their events wait in the outbox) unless the outbox's store fails (another process holds
        its write lock): then one line for the outbox file says how many wait, and why."""
        reports = [tracker.report() for tracker in list(self._trackers.values())]
        stalled = self._outbox.stalled() if isinstance(self._outbox, Outbox) else None
        if stalled is not None:
            left, error = stalled
            assert isinstance(self._outbox, Outbox)
            reason = f"{left} still queued in the outbox ({error})"
            if self._closed:
                reason += "; delivered at the next start"
            reports.append(
                DestinationReport(
                    "webhooks", str(self._outbox.path), left, 0, 0, left, reason, None
                )
            )
        return reports

    def _enqueue_durable(self, item: _Item) -> bool:
        body = self._body(item)
        if body is None:
            return False
        try:
            self.outbox().put(
                item.hook_id, item.payload.eventId, item.config, body, event=item.event
            )
            return True
        except Exception as exc:
            if item.config.fallback == "none":
                raise
            _log.warning(
                "outbox unavailable, falling back to fetch",
                hook_id=item.hook_id,
                error=scrub(str(exc)),
            )
            return self._worker.submit(item)

    def outbox(self) -> DurableQueue:
        """The durable queue of ``delivery: queue`` hooks, opened at the first use.

        Raises:
            sqlite3.Error: the outbox file could not be opened (another process holds it
                locked); for 2 s after that, at once with the same error.
        """
        if self._outbox is None:
            if self._outbox_factory is not None:
                self._outbox = self._outbox_factory(self._report_outbox)
            else:
                retry_at, why = self._outbox_retry
                if time.monotonic() < retry_at:
                    raise sqlite3.OperationalError(why)
                path = self._outbox_path or Path.home() / ".otelhooks" / "outbox.sqlite3"
                try:
                    self._outbox = Outbox(path, report=self._report_outbox)
                except sqlite3.Error as exc:
                    self._outbox_retry = (time.monotonic() + _OUTBOX_RETRY_S, str(exc))
                    raise
        return self._outbox

    # -- the worker's side ------------------------------------------------------------------------

    def _start_io(self) -> None:
        # Also the fork hook: a child has none of its parent's deliveries in flight, nor the
        # thread of its event loop (which still says it runs: a child's deliveries and its
        # shutdown waited on it forever), so it starts its own at its first delivery.
        self._slots = threading.BoundedSemaphore(self._concurrency)
        self._in_flight = 0
        # Items taken off the queue and not yet settled (waiting for a slot or in flight):
        # shutdown counts them as dropped, so nothing is given up on uncounted.
        self._held = 0
        self._idle = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx.AsyncClient | None = None
        self._loop_lock = threading.Lock()

    def _body(self, item: _Item) -> bytes | None:
        data = self.builder.build(item.hook_id, item.hook_type, item.config, item.payload)
        if data is None:
            return None  # cancelled (email lookup): the delivery stops
        return dumps(data).encode()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = start_io_loop("otelhooks-webhook-io")
                self._client = None
            return self._loop

    def _handle_batch(self, batch: list[_Item]) -> None:
        loop = self._ensure_loop()
        with self._idle:
            self._held += len(batch)
        sends = self._group(batch)
        self._release(len(batch) - sum(len(send.items) for send in sends))  # settled in _group
        for send in sends:
            self._slots.acquire()  # bounded concurrency: back-pressure onto the bounded queue
            with self._idle:
                if self._closed:
                    return  # shutdown counted what is still held
                self._in_flight += 1
            asyncio.run_coroutine_threadsafe(self._deliver(send), loop)

    def _release(self, count: int) -> bool:
        """Settle ``count`` held items; False when shutdown already counted them as dropped."""
        with self._idle:
            if self._closed:
                return False
            self._held -= count
            return True

    def _group(self, batch: list[_Item]) -> list[_Send]:
        """One send per item, or per ``batchSize`` items of one hook when it batches."""
        sends: list[_Send] = []
        open_batches: dict[int, _Send] = {}
        for item in batch:
            try:
                body = self._body(item)
            except Exception as exc:
                # a redactor or email resolver that raises: the notification is lost, and said
                # so where every other lost one is (the dropped count, the delivery report)
                _log.warning("webhook payload failed", hook_id=item.hook_id, error=scrub(str(exc)))
                self._record(item, "error", 0.0)
                self._count_dropped(1, "payload_error")
                self._tracker(item.config).dropped(1, "its body could not be built")
                continue
            if body is None:
                continue
            size = item.config.batch_size
            if size <= 1:
                sends.append(_Send([item], [body]))
                continue
            current = open_batches.get(id(item.config))
            if current is None or len(current.items) >= size:
                current = _Send([], [])
                open_batches[id(item.config)] = current
                sends.append(current)
            current.items.append(item)
            current.bodies.append(body)
        return sends

    async def _deliver(self, send: _Send) -> None:
        started = time.perf_counter()
        try:
            delivery = await self._attempts(send)
            duration = time.perf_counter() - started
            if self._release(len(send.items)):
                for item in send.items:
                    self._settle(item, delivery, duration)
        except Exception as exc:  # never let one delivery kill the loop
            _log.warning(
                "webhook delivery crashed", hook_id=send.items[0].hook_id, error=scrub(str(exc))
            )
            if self._release(len(send.items)):
                self._count_dropped(len(send.items), "error")
        finally:
            # Released only after the outcome is recorded, so flush() sees the metrics.
            self._slots.release()
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    async def _attempts(self, send: _Send) -> Delivery:
        """Send until success, a failure the retry rule does not retry, or the deadline."""
        if self._client is None:
            self._client = async_client()
        config = send.items[0].config
        content, key = send.content()
        deadline = time.monotonic() + self.retry_deadline_s
        tracker = self._tracker(config)
        attempt = 0
        while True:
            if tracker.dead:
                # Refused or silent once while fail-fast: known to be down, not tried again.
                return Delivery(False, error_class="network_error", message=tracker.reason or "")
            prepared = prepare(config, content, key)
            if isinstance(prepared, Delivery):
                tracker.error(prepared.message or "configuration error")
                return prepared
            delivery = await send_async(
                self._client, config, prepared, accept=_SUCCESS, limit=65536
            )
            if not delivery.delivered:
                reason, dead = failure_reason(delivery)
                tracker.error(reason, status=delivery.status, dead=dead)
            if delivery.delivered or not delivery.retryable:
                return delivery
            if tracker.fail_fast:
                return delivery
            pause = backoff_s(attempt)
            if time.monotonic() + pause > deadline:
                return delivery
            attempt += 1
            await asyncio.sleep(pause)

    def _settle(self, item: _Item, delivery: Delivery, duration_s: float) -> None:
        tracker = self._tracker(item.config)
        if delivery.delivered:
            tracker.delivered()
            self._record(item, "ok", duration_s)
            return
        tracker.failed(1)
        reason: str
        if not delivery.retryable:
            reason = delivery.error_class or "error"
        elif self._shutting_down:
            reason = "shutdown"  # given up on because the process is exiting
        else:
            reason = "endpoint_down" if tracker.fail_fast else "retry_deadline"
        if not tracker.fail_fast:
            # Fail-fast (a command, or shutdown): the delivery report says it once per URL.
            _log.warning(
                "webhook delivery failed",
                hook_id=item.hook_id,
                lifecycle_event=item.event,
                error_class=delivery.error_class,
                status=delivery.status,
                reason=reason,
            )
        self._record(item, "error", duration_s)
        self._count_dropped(1, reason)

    def _record(self, item: _Item, outcome: str, duration_s: float) -> None:
        attrs = {
            sc.ATTR_HOOK_ID: item.hook_id,
            sc.ATTR_HOOK_EVENT: item.event,
            sc.ATTR_HOOK_KIND: "webhook",
            sc.ATTR_OUTCOME: outcome,
        }
        self.metrics.hook_run.record(duration_s, attrs)

    def _report_outbox(
        self, hook_id: str, event: str, outcome: str, delivery: Delivery | None, reason: str
    ) -> None:
        attrs: dict[str, Any] = {
            sc.ATTR_HOOK_ID: hook_id,
            sc.ATTR_HOOK_EVENT: event,
            sc.ATTR_HOOK_KIND: "webhook",
            sc.ATTR_OUTCOME: "ok" if outcome == "ok" else "error",
        }
        self.metrics.hook_invocations.add(1, attrs)
        if delivery is not None:
            self.metrics.hook_duration.record(delivery.duration_s, attrs)
        if outcome != "ok":
            self.metrics.dropped.add(
                1, {sc.ATTR_DROP_SOURCE: "outbox", sc.ATTR_DROP_REASON: reason}
            )

    # -- lifecycle --------------------------------------------------------------------------------

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every queued notification was delivered or given up on."""
        deadline = time.monotonic() + timeout_s
        ok = self._worker.flush(timeout_s)
        with self._idle:
            ok = (
                self._idle.wait_for(
                    lambda: self._in_flight == 0, max(0.0, deadline - time.monotonic())
                )
                and ok
            )
        if self._outbox is not None:
            ok = self._outbox.flush(max(0.0, deadline - time.monotonic())) and ok
        return ok

    def start_shutdown(self, deadline: float) -> None:
        """Fail fast from now on: a refused or silent URL is not retried (``deadline`` is on
        the monotonic clock)."""
        self.fail_fast = True
        self._shutting_down = True
        for tracker in list(self._trackers.values()):
            tracker.start_shutdown(deadline)

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Deliver what can be delivered within ``timeout_s``, count the rest as dropped, stop.
        Calling it again does nothing."""
        with self._idle:
            if self._closed:
                return
        deadline = time.monotonic() + timeout_s
        self.start_shutdown(deadline)
        self.flush(timeout_s)
        self._worker.shutdown(0.1)
        with self._idle:
            self._closed = True
            held, self._held = self._held, 0
        if held:
            # Waiting for a slot or still retrying: given up on now, so counted now.
            self._count_dropped(held, "shutdown")
        loop = self._loop
        if loop is not None and loop.is_running():
            # Deliveries still running past the deadline (a slow endpoint) were counted above;
            # cancel them so none is left pending on a stopped loop.
            try:
                asyncio.run_coroutine_threadsafe(_cancel_other_tasks(), loop).result(5)
                if self._client is not None:
                    asyncio.run_coroutine_threadsafe(self._client.aclose(), loop).result(5)
            except TimeoutError:
                # what was queued is counted above; a loop that does not answer must not turn
                # a shutdown (a command's exit) into a traceback
                _log.warning("the webhook I/O loop did not stop within 5 s: left running")
            loop.call_soon_threadsafe(loop.stop)
        if self._outbox is not None:
            self._outbox.close(max(0.0, deadline - time.monotonic()))


async def _cancel_other_tasks() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
