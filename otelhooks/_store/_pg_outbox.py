"""The webhook outbox in PostgreSQL: every instance pumps, each delivery is done by one.

A row is inserted (and committed) before ``put`` returns, as in the SQLite outbox. A pump
claims due rows with ``SELECT ... FOR UPDATE SKIP LOCKED`` and marks them leased
(``leased_until``, ``leased_by``) in one short transaction, then delivers them outside any
transaction. Two instances never claim the same row: the second skips the locked ones and
then sees the lease. An instance that dies holding a lease (``kill -9``) delays its rows by
``lease_s``, after which any live instance claims them. Times are the database's clock, so the
instances' clocks need not agree.

Delivery stays at-least-once: a death between the HTTP response and the delete repeats a
delivery after the lease, with the same ``Idempotency-Key``; the backoff and the drop rules
are the SQLite outbox's.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import structlog

from otelhooks._actions._outbox import Report, attempt
from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._actions._webhook_http import Delivery
from otelhooks._store._errors import StoreError, StoreUnavailable

if TYPE_CHECKING:
    from otelhooks._store._pg_connections import PgConnections

__all__ = ["PostgresOutbox"]

_log = structlog.get_logger("otelhooks")

_NOW: Final = "EXTRACT(EPOCH FROM clock_timestamp())"
_CLAIM: Final = f"""
UPDATE otelhooks_outbox SET leased_until = {_NOW} + %(lease)s, leased_by = %(me)s
WHERE id IN (
    SELECT id FROM otelhooks_outbox
    WHERE next_at <= {_NOW} AND leased_until <= {_NOW}
    ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
RETURNING id, hook_id, event_id, event, config, body, attempts, deadline_at - {_NOW}
"""


@dataclass(frozen=True, slots=True)
class _Row:
    id: int
    hook_id: str
    event_id: str
    event: str
    config: str
    body: bytes
    attempts: int
    deadline_in: float  # seconds left before the retry deadline, by the database's clock


class PostgresOutbox:
    """The durable queue of ``delivery: queue`` webhooks, shared by a fleet.

    Args:
        store: the PostgreSQL store.
        retry_deadline_s: how long a row may keep failing before it is dropped.
        lease_s: how long a claimed row is this instance's; past it another may take it.
        poll_s: how often the pump looks for due rows when not woken.
        report: told of every delivered or dropped row.
    """

    def __init__(
        self,
        store: PgConnections,
        *,
        retry_deadline_s: float = 3600.0,
        lease_s: float = 30.0,
        poll_s: float = 0.2,
        report: Report | None = None,
    ) -> None:
        self.store = store
        self.retry_deadline_s = retry_deadline_s
        self.lease_s = lease_s
        self.instance = uuid.uuid4().hex[:12]
        self._poll_s = poll_s
        self._report = report
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def put(
        self, hook_id: str, event_id: str, config: WebhookConfig, body: bytes, *, event: str = ""
    ) -> None:
        """Store one delivery durably (committed when this returns) and wake the pump.

        Raises:
            StoreError: the row could not be committed (the caller falls back or fails).
        """
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO otelhooks_outbox (hook_id, event_id, event, config, body, next_at, "
                f"deadline_at) VALUES (%s, %s, %s, %s, %s, {_NOW}, {_NOW} + %s)",
                (hook_id, event_id, event, json.dumps(config.persisted()), body,
                 self.retry_deadline_s),
            )  # fmt: skip
        self.start()

    def pending(self) -> int:
        """Rows in the outbox, whoever holds them."""
        with self.store.transaction() as conn:
            row = conn.execute("SELECT COUNT(*) FROM otelhooks_outbox").fetchone()
        return int(row[0]) if row else 0  # type: ignore[call-overload]

    def start(self) -> None:
        """Start (or wake) the pump: it also delivers what other instances left behind."""
        with self._start_lock:
            if not self._stop.is_set() and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(
                    target=self._pump, name="otelhooks-outbox", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until no row is due or leased (rows waiting for a later retry do not count)."""
        deadline = time.monotonic() + timeout_s
        self.start()
        while time.monotonic() < deadline:
            try:
                with self.store.transaction() as conn:
                    row = conn.execute(
                        f"SELECT COUNT(*) FROM otelhooks_outbox WHERE next_at <= {_NOW}"
                    ).fetchone()
                if row is not None and row[0] == 0:
                    return True
            except StoreUnavailable:
                # The rows are durable in the store: another instance, or this one after a
                # restart, delivers them. Waiting out the timeout would only delay a shutdown.
                return False
            except StoreError:
                pass
            time.sleep(0.02)
        return False

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the pump (a delivery in flight finishes; its lease covers a cut-off one)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def claim(self, limit: int = 16) -> list[_Row]:
        """Lease up to ``limit`` due rows for this instance."""
        with self.store.transaction() as conn:
            rows = conn.execute(
                _CLAIM, {"lease": self.lease_s, "me": self.instance, "limit": limit}
            ).fetchall()
        return [_Row(*r) for r in rows]  # type: ignore[arg-type]

    def _pump(self) -> None:
        while not self._stop.is_set():
            try:
                rows = self.claim()
            except StoreError as exc:
                _log.warning("outbox cannot claim rows", store=self.store.name, error=str(exc))
                rows = []
            if not rows:
                self._wake.wait(self._poll_s)
                self._wake.clear()
                continue
            for row in rows:
                if self._stop.is_set():
                    return  # the rest keep their lease until it runs out
                try:
                    self._deliver(row)
                except StoreError as exc:
                    # The delivery happened or not; the lease runs out and a retry follows.
                    _log.warning("outbox row not settled", store=self.store.name, error=str(exc))

    def _finish(self, row: _Row, outcome: str, delivery: Delivery | None, reason: str) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "DELETE FROM otelhooks_outbox WHERE id = %s AND leased_by = %s",
                (row.id, self.instance),
            )
        if self._report is not None:
            self._report(row.hook_id, row.event, outcome, delivery, reason)

    def _deliver(self, row: _Row) -> None:
        result = attempt(
            row.hook_id, row.config, bytes(row.body), row.event_id, row.attempts, row.deadline_in
        )
        if result.outcome != "retry":
            self._finish(row, result.outcome, result.delivery, result.reason)
            return
        with self.store.transaction() as conn:
            conn.execute(
                f"UPDATE otelhooks_outbox SET attempts = attempts + 1, next_at = {_NOW} + %s, "
                "leased_until = 0, leased_by = NULL, last_error = %s "
                "WHERE id = %s AND leased_by = %s",
                (result.retry_in_s, result.reason, row.id, self.instance),
            )
