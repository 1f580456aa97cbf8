"""The durable outbox of ``delivery: queue`` webhooks: SQLite in WAL mode.

A row is inserted (and committed) before ``enqueue`` returns, so a process killed right after an
event still delivers it after a restart. A pump thread delivers due rows, deletes them on success,
reschedules retryable failures with exponential backoff and full jitter, and drops (counting) rows
whose deadline passed or that failed for good. Delivery is at-least-once: a crash between the
HTTP response and the delete repeats a delivery; every request carries the event's id as
``Idempotency-Key`` (and ``eventId`` in the body) so receivers de-duplicate.

Several processes may share one outbox file (a ``fork``ed worker inherits its parent's, and every
process configured with the same ``outbox_path`` opens it): the pump leases each row it takes, in
a write transaction (SQLite lets one writer in at a time), by moving its ``next_at`` past what
its delivery may take (its webhook's ``timeout``) and ``lease_s``, so no other process takes it
meanwhile. A process that dies holding a lease delays that one row by as much, as the PostgreSQL
outbox does (:mod:`otelhooks._store._pg_outbox`).

Another process may also hold the file's write lock for long (a backup tool, a ``sqlite3`` shell
left in a transaction). The pump then waits it out: its own connection gives up on the lock
quickly, so flush and close keep their deadlines, and it tries again with a bounded backoff,
saying so once; what it leased stays leased, what is due is delivered when the lock is released.
An enqueue runs on its caller's thread (the agent's, or serve's event loop for a hook that only
records): it waits for the outbox at most :data:`PUT_WAIT_S` in all (this process's lock and the
file's write lock), and not at all while the pump finds the store failing, then raises, and the
hook's ``fallback`` applies (a warning and in-memory delivery, or the critical error).

Only the serializable part of a hook is stored: its webhook config (header templates, never
resolved values) and the JSON body. It is re-validated when a row is loaded.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

import structlog
from pydantic import ValidationError

from otelhooks._actions._webhook_config import WebhookConfig
from otelhooks._actions._webhook_http import Delivery, prepare, send
from otelhooks._private_files import private_file
from otelhooks._worker import at_fork

__all__ = ["PUT_WAIT_S", "Attempt", "DurableQueue", "Outbox", "Report", "attempt", "backoff_s"]

_log = structlog.get_logger("otelhooks")

_T = TypeVar("_T")
# The pump's own connection gives up on another process's write lock this soon, then backs off:
# it never holds this process's lock (which flush and close wait for) through a long busy wait.
_PUMP_BUSY_S: Final = 0.25
_STORE_PAUSE_MAX_S: Final = 2.0
# The longest an enqueue waits for the outbox: it runs on the agent's thread (SQLite's own 5 s
# busy timeout, per enqueue and one after the other across sessions, stalled every agent).
PUT_WAIT_S: Final = 0.25

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    hook_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    event TEXT NOT NULL DEFAULT '',
    config TEXT NOT NULL,
    body BLOB NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL,
    deadline_at REAL NOT NULL,
    last_error TEXT
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (next_at);
"""


def backoff_s(attempt: int, *, base: float = 0.5, cap: float = 30.0) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**attempt)]."""
    return random.uniform(0, min(cap, base * 2**attempt))


@dataclass(frozen=True, slots=True)
class _Row:
    id: int
    hook_id: str
    event_id: str
    event: str
    config: str
    body: bytes
    attempts: int
    deadline_at: float


Report = Callable[[str, str, str, Delivery | None, str], None]
"""(hook id, event, outcome, last delivery, reason) for every row that finished."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one delivery attempt of an outbox row leads to: ``ok``, ``dropped`` or ``retry``.

    ``reason`` is why a row was dropped, or the error a retried row keeps as its last.
    """

    outcome: str
    delivery: Delivery | None
    reason: str = ""
    retry_in_s: float = 0.0


def attempt(
    hook_id: str, config: str, body: bytes, event_id: str, attempts: int, time_left_s: float
) -> Attempt:
    """Deliver one stored row once and say what follows, for every store's outbox alike.

    A row retries while its error is retryable and the next try (after :func:`backoff_s`) still
    falls before its deadline, ``time_left_s`` from now; otherwise it is dropped with a reason.
    """
    try:
        webhook = WebhookConfig.model_validate(json.loads(config))
    except (ValidationError, ValueError) as exc:
        _log.warning("outbox row has an invalid webhook config", hook_id=hook_id, error=str(exc))
        return Attempt("dropped", None, "invalid_config")
    prepared = prepare(webhook, body, event_id)
    delivery = (
        prepared
        if isinstance(prepared, Delivery)
        else send(webhook, prepared, accept=tuple(range(200, 300)), limit=65536)
    )
    if delivery.delivered:
        return Attempt("ok", delivery)
    retry_in = backoff_s(attempts)
    if delivery.retryable and retry_in <= time_left_s:
        return Attempt("retry", delivery, delivery.error_class or str(delivery.status), retry_in)
    reason = "retry_deadline" if delivery.retryable else (delivery.error_class or "error")
    _log.warning(
        "webhook delivery dropped",
        hook_id=hook_id,
        error_class=delivery.error_class,
        status=delivery.status,
        attempts=attempts + 1,
    )
    return Attempt("dropped", delivery, reason)


def _attempt_s(config: str) -> float:
    """How long one delivery of a stored row may take: its webhook's ``timeout``."""
    try:
        timeout = json.loads(config).get("timeout", 30.0)
    except (ValueError, AttributeError):
        return 30.0
    return float(timeout) if isinstance(timeout, int | float) else 30.0


class DurableQueue(Protocol):
    """What a deliverer needs of an outbox: this SQLite one, or a shared store's."""

    def put(
        self, hook_id: str, event_id: str, config: WebhookConfig, body: bytes, *, event: str = ""
    ) -> None: ...

    def pending(self) -> int: ...

    def start(self) -> None: ...

    def flush(self, timeout_s: float = 30.0) -> bool: ...

    def close(self, timeout_s: float = 5.0) -> None: ...


class Outbox:
    """A durable queue of webhook deliveries with its own pump thread.

    Args:
        path: the SQLite file (created ``0600`` with its folder, ``0700``).
        retry_deadline_s: how long a row may keep failing before it is dropped.
        report: told of every delivered or dropped row (metrics and logs hang off it).
        lease_s: how long past its webhook's ``timeout`` a row taken by this process stays its
            own (another process sharing the file takes it after that).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retry_deadline_s: float = 3600.0,
        poll_s: float = 0.2,
        report: Report | None = None,
        lease_s: float = 5.0,
    ) -> None:
        self.path = private_file(path)  # 0600 in a 0700 folder: payloads are at rest here
        self.retry_deadline_s = retry_deadline_s
        self.lease_s = lease_s
        self._poll_s = poll_s
        self._report = report
        self._inherited: list[sqlite3.Connection] = []
        self.store_error: str | None = None  # what the pump last met, while the store fails
        self._waiting = 0  # rows in the outbox when the pump last met that error
        self._left: tuple[int, str] | None = None  # what stayed queued at close, and why
        self._open()
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(outbox)")}
        if "event" not in columns:  # an outbox written by an earlier version
            self._db.execute("ALTER TABLE outbox ADD COLUMN event TEXT NOT NULL DEFAULT ''")
        at_fork(after_in_child=self._reopen_in_child)

    def _open(self) -> None:
        self._lock = threading.Lock()
        # opened lazily by the first enqueue, on the agent's thread: bounded like an enqueue
        self._db = sqlite3.connect(
            self.path, timeout=PUT_WAIT_S, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._pump_db = sqlite3.connect(
            self.path, timeout=_PUMP_BUSY_S, check_same_thread=False, isolation_level=None
        )
        self._leased = 0  # rows this process's pump has taken and not finished
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _reopen_in_child(self) -> None:
        # SQLite forbids using a connection opened before fork in the child, closing it included
        # (it could undo the parent's locks or journal): it is kept, unused, and a new one opened;
        # the parent's pump thread and locks do not exist here either
        self._inherited += [self._db, self._pump_db]
        self._open()

    def put(
        self, hook_id: str, event_id: str, config: WebhookConfig, body: bytes, *, event: str = ""
    ) -> None:
        """Store one delivery durably (committed when this returns) and wake the pump.

        Raises:
            sqlite3.OperationalError: not stored within :data:`PUT_WAIT_S` (another process
                holds the file's write lock), or at once while the pump finds the store failing.
        """
        now = time.time()
        failing = self.store_error
        wait_s = 0.0 if failing is not None else PUT_WAIT_S
        deadline = time.monotonic() + wait_s
        if not self._lock.acquire(timeout=wait_s):
            raise sqlite3.OperationalError(
                failing or f"the outbox stayed busy in this process past {PUT_WAIT_S} s"
            )
        try:
            left_ms = int(max(0.0, deadline - time.monotonic()) * 1000)
            self._db.execute(f"PRAGMA busy_timeout = {left_ms}")
            self._db.execute(
                "INSERT INTO outbox (hook_id, event_id, event, config, body, next_at, deadline_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (hook_id, event_id, event, json.dumps(config.persisted()), body, now,
                 now + self.retry_deadline_s),
            )  # fmt: skip
        finally:
            self._lock.release()
        self._start()
        self._wake.set()

    def pending(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM outbox").fetchone()
        return int(row[0])

    def start(self) -> None:
        """Start delivering what earlier processes left behind."""
        self._start()
        self._wake.set()

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until no row is due or being delivered by this process (rows waiting for a
        retry later, or leased by another process, do not count)."""
        deadline = time.monotonic() + timeout_s
        self._start()
        self._wake.set()
        while time.monotonic() < deadline:
            # an enqueue waiting on another process's write lock holds this lock: never past
            # the deadline
            if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                return False
            try:
                due = self._db.execute(
                    "SELECT 1 FROM outbox WHERE next_at <= ? LIMIT 1", (time.time(),)
                ).fetchone()
                if due is None and self._leased == 0:
                    return True
            finally:
                self._lock.release()
            time.sleep(0.01)
        return False

    def stalled(self) -> tuple[int, str] | None:
        """While the store fails (another process holds its write lock), or if it failed when
        :meth:`close` ran: how many rows wait in it, and the error. ``None`` otherwise."""
        if self._left is not None or self._stop.is_set():
            return self._left
        error = self.store_error
        return None if error is None else (self._waiting, error)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the pump (waiting at most ``timeout_s`` for it) and close the file."""
        deadline = time.monotonic() + timeout_s
        self._left = self.stalled()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        # past the deadline (the pump still in a busy wait), the connections are left to the
        # garbage collector: the pump stops at its next step
        if self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            try:
                self._db.close()
                self._pump_db.close()
            finally:
                self._lock.release()

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._pump, name="otelhooks-outbox", daemon=True)
            self._thread.start()

    def _lease(self, now: float) -> _Row | None:
        """Take the oldest due row for this process, for as long as its delivery may take."""
        db = self._pump_db
        with self._lock:
            db.execute("BEGIN IMMEDIATE")  # the one writer: no other process takes it
            try:
                found = db.execute(
                    "SELECT id, hook_id, event_id, event, config, body, attempts, deadline_at "
                    "FROM outbox WHERE next_at <= ? ORDER BY id LIMIT 1",
                    (now,),
                ).fetchone()
                if found is not None:
                    row = _Row(*found)
                    db.execute(
                        "UPDATE outbox SET next_at = ? WHERE id = ?",
                        (now + _attempt_s(row.config) + self.lease_s, row.id),
                    )
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            if found is None:
                return None
            self._leased += 1
        return row

    def _store(self, op: Callable[[], _T]) -> tuple[bool, _T | None]:
        """Run one store operation of the pump until it succeeds: ``(True, its result)``, or
        ``(False, None)`` when the outbox closes first. A failing store (another process holding
        the write lock past the busy timeout, a full disk) is said once and tried again with a
        bounded backoff; the pump never dies of it."""
        failures = 0
        while True:
            try:
                result = op()
            except sqlite3.Error as exc:
                if self._stop.is_set():
                    return False, None  # closing (its connection may be closed already)
                failures += 1
                if self.store_error is None:
                    _log.warning(
                        "outbox store unavailable, deliveries wait",
                        path=str(self.path),
                        error=str(exc),
                    )
                self.store_error = str(exc)
                self._waiting = self._count(self._waiting)
                if self._stop.wait(min(_STORE_PAUSE_MAX_S, 0.05 * 2**failures)):
                    return False, None
                continue
            if self.store_error is not None:
                _log.info("outbox store available again", path=str(self.path))
                self.store_error = None
            return True, result

    def _count(self, otherwise: int) -> int:
        """The rows in the outbox (a read: another process's write lock does not stop it in
        WAL mode), or ``otherwise`` when even that fails."""
        try:
            return int(self._pump_db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0])
        except sqlite3.Error:
            return otherwise

    def _pump(self) -> None:
        while not self._stop.is_set():
            ok, row = self._store(lambda: self._lease(time.time()))
            if not ok:
                return
            if row is None:
                self._wake.wait(self._poll_s)
                self._wake.clear()
                continue
            try:
                self._deliver(row)
            except Exception as exc:  # a report callback that raises: the pump goes on
                _log.warning("outbox delivery crashed", hook_id=row.hook_id, error=str(exc))
            finally:
                with self._lock:
                    self._leased -= 1

    def _write(self, sql: str, args: tuple[object, ...]) -> bool:
        """One write of the pump, waited out while the store fails; False when closing first
        (the row stays leased, and is delivered again after its lease: at-least-once)."""

        def run() -> None:
            with self._lock:
                self._pump_db.execute(sql, args)

        return self._store(run)[0]

    def _finish(self, row: _Row, outcome: str, delivery: Delivery | None, reason: str) -> None:
        self._write("DELETE FROM outbox WHERE id = ?", (row.id,))
        if self._report is not None:
            self._report(row.hook_id, row.event, outcome, delivery, reason)

    def _deliver(self, row: _Row) -> None:
        now = time.time()
        result = attempt(
            row.hook_id, row.config, row.body, row.event_id, row.attempts, row.deadline_at - now
        )
        if result.outcome != "retry":
            self._finish(row, result.outcome, result.delivery, result.reason)
            return
        self._write(
            "UPDATE outbox SET attempts = attempts + 1, next_at = ?, last_error = ? WHERE id = ?",
            (now + result.retry_in_s, result.reason, row.id),
        )
