"""The event log in PostgreSQL: one ``seq`` order shared by every instance on the store.

``append`` hands the entry to a :class:`~otelhooks._worker.BoundedWorker`, as the SQLite log
does; the worker's thread writes each batch in one transaction that first locks the log's row
in ``otelhooks_logs`` (``SELECT ... FOR UPDATE``): one call of ``otelhooks_append``
(migration 8), so one round trip. That lock orders the writers of all
instances: a transaction takes ``head + 1 ...`` only after the previous one committed, so a
reader never sees ``seq`` N+1 while N could still appear, and a ``since`` cursor means the same
on every instance. ``epoch`` is the log row's, the same for every instance and every restart.

The transaction runs ``pg_notify`` (sent at its commit); every instance's
:class:`~otelhooks._store._pg_listen.Listener` wakes its long-polls within the notification's
delivery time.

A record of a received span carries a ``dedupe`` key (a digest of the record); a batch skips
keys the log already holds, so an OTLP request retried on another instance after the first
committed it and died before answering does not store its records twice.

A batch whose transaction fails is not retried here: its records are counted in
:attr:`commit_failures` and reported lost (``count_lost_with``: ``otelhooks.dropped``, as the
SQLite log's are), and the receiver, which waits for the commit, answers ``503`` so that the
client sends them again.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from otelhooks._eventlog._model import (
    EventBatch,
    EventEntry,
    EventLog,
    EventRecord,
    LogStats,
    batch_from_rows,
)
from otelhooks._eventlog._signal import AppendSignal
from otelhooks._store._errors import StoreError
from otelhooks._worker import BoundedWorker, DropReason

if TYPE_CHECKING:
    from otelhooks._store._pg_connections import PgConnections

__all__ = ["PostgresEventLog", "dedupe_key"]

_log = structlog.get_logger("otelhooks")

_COLUMNS = (
    "seq, ts, agent, session, user_id, tool, kind, mutating, success, args_fp, detail, "
    "trace_id, span_id"
)
_HEAD = b"SELECT head, oldest FROM otelhooks_logs WHERE name = %s"
# The batch numbered after the log's head under its row lock, deduplicated, inserted, the head
# and the retention window moved, the other instances woken: the function of migration 8, so
# one round trip (the lock and the append are still two statements, run by the server).
_APPEND = b"SELECT otelhooks_append(%s, %s, %s::json)"
_READ = (
    "WITH h AS (SELECT head, oldest FROM otelhooks_logs WHERE name = %(log)s) "
    f"SELECT h.head, h.oldest, e.* FROM h LEFT JOIN LATERAL (SELECT {_COLUMNS} "
    "FROM otelhooks_events WHERE log = %(log)s AND seq > %(since)s AND seq <= h.head "
    "ORDER BY seq {order} LIMIT %(limit)s) e ON true"
)


# a JSON escape of NUL: not one of an escaped backslash followed by the text "u0000"
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def without_nul(batch: str) -> str:
    """``batch`` (JSON) with each NUL of its strings as U+FFFD, as a lone surrogate is stored:
    PostgreSQL text cannot hold NUL, and one record holding it (a client's session id) failed
    its whole batch, other sessions' records with it."""
    return _NUL_ESCAPE.sub(r"\1\\ufffd", batch) if "\\u0000" in batch else batch


def dedupe_key(entry: EventEntry) -> str | None:
    """A digest of a record that belongs to a span (``None`` for one that does not)."""
    if not entry.trace_id or not entry.span_id:
        return None
    return hashlib.blake2b(repr(tuple(entry)).encode(), digest_size=12).hexdigest()


class PostgresEventLog(EventLog):
    """One named log in a :class:`~otelhooks._store._postgres.PostgresStore`.

    Args:
        store: the store (its pool, its listener).
        name: the ``agent_events`` hook the log belongs to (its row in ``otelhooks_logs``).
        retention: records kept; older ones are deleted and reported as ``dropped_window``.
        commit_interval_s, max_queue_size, max_batch_size, on_drop: as for
            :class:`~otelhooks._eventlog._sqlite.SqliteEventLog`.

    Raises:
        StoreError: the log's row cannot be created or read.
    """

    durable = True
    blocking_stats = True  # the head is the store's: other instances move it

    def __init__(
        self,
        store: PgConnections,
        *,
        name: str = "agent_events",
        retention: int = 1_000_000,
        commit_interval_s: float = 0.005,
        max_queue_size: int = 65_536,
        max_batch_size: int = 1024,
        on_drop: Callable[[int, DropReason], None] | None = None,
    ) -> None:
        if retention <= 0:
            raise ValueError("retention must be positive")
        self.name = name
        self.retention = retention
        self.store = store
        self.signal = AppendSignal()
        self._lock = threading.Lock()
        self._written = 0
        self._failed = 0
        self._skipped = 0
        self._closed = False
        with store.transaction() as conn:
            conn.execute(
                "INSERT INTO otelhooks_logs (name, epoch) VALUES (%s, %s) "
                "ON CONFLICT (name) DO NOTHING",
                (name, uuid.uuid4().hex[:16]),
            )
            row = conn.execute(
                "SELECT epoch FROM otelhooks_logs WHERE name = %s", (name,)
            ).fetchone()
        assert row is not None
        self._epoch = str(row[0])
        store.listener().subscribe(name, self.signal.notify)
        self._worker: BoundedWorker[EventEntry] = BoundedWorker(
            f"otelhooks-eventlog-{name}",
            self._write,
            max_queue_size=max_queue_size,
            max_batch_size=min(max_batch_size, max_queue_size),
            schedule_delay_s=commit_interval_s,
            on_drop=on_drop,
        )

    @property
    def epoch(self) -> str:
        return self._epoch

    @property
    def commit_failures(self) -> int:
        """Records whose transaction failed (never stored; the receiver answered 503)."""
        return self._failed

    @property
    def duplicates_skipped(self) -> int:
        """Records not stored again because the log already held them (a retried request)."""
        return self._skipped

    def append(self, entry: EventEntry) -> bool:
        """Queue ``entry`` for the writer. O(1); False (and counted) when the queue is full."""
        return self._worker.submit(entry)

    def _write(self, batch: list[EventEntry]) -> None:
        keyed = [(*entry, dedupe_key(entry)) for entry in batch]
        # a batch whose every record carries its dedupe key stores nothing twice if run again
        again = all(row[-1] is not None for row in keyed)
        params = (self.name, self.retention, without_nul(json.dumps(keyed)))
        try:
            written = self.store.statement(_APPEND, params, idempotent=again)
        except StoreError as exc:
            with self._lock:
                self._failed += len(batch)
            _log.error("event log commit failed", log=self.name, records=len(batch), error=str(exc))
            self._report_lost(len(batch))
            return
        fresh = int(written[0][0])
        with self._lock:
            self._written += fresh
            self._skipped += len(batch) - fresh
        self.signal.notify()  # this instance's waiters need not wait for the round trip

    def read(self, since: int, limit: int, *, newest: bool = False) -> EventBatch:
        """Records after ``since`` (see :class:`~otelhooks.EventLog`).

        Raises:
            StoreUnavailable: the store cannot be read right now.
        """
        if self._closed:
            raise RuntimeError(f"event log {self.name!r} is closed")
        query = _READ.format(order="DESC" if newest else "ASC").encode()
        # one statement: one snapshot, so the head and the records agree (no BEGIN/COMMIT)
        params = {"log": self.name, "since": since, "limit": limit}
        fetched = self.store.statement(query, params, idempotent=True)
        head = int(fetched[0][0]) if fetched else 0
        oldest = int(fetched[0][1]) if fetched else 0
        rows = [EventRecord(*r[2:]) for r in fetched if r[2] is not None]
        if newest:
            rows.reverse()
        return batch_from_rows(
            rows, since=since, head=head, oldest=oldest, epoch=self._epoch, newest=newest
        )

    def stats(self) -> LogStats:
        """Head and oldest as the store has them; counters of this instance.

        Raises:
            StoreUnavailable: the store cannot be read right now.
        """
        rows = self.store.statement(_HEAD, (self.name,), idempotent=True)
        head, oldest = (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)
        with self._lock:
            written, failed = self._written, self._failed
        return LogStats(head, oldest, written, self._worker.dropped + failed)

    @property
    def lost(self) -> int:
        with self._lock:
            return self._worker.dropped + self._failed

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every accepted entry was written (or its transaction failed)."""
        return self._worker.flush(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Commit what is queued (within ``timeout_s``). The store closes the connections."""
        self._worker.shutdown(timeout_s)
        self._closed = True
