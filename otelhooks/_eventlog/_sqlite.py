"""The durable log: the same records in SQLite (WAL mode), kept up to a retention bound.

``append`` only hands the entry to a :class:`~otelhooks._worker.BoundedWorker`; the worker's
thread gives each batch its ``seq`` numbers and writes it in one transaction, so the caller
never waits for the disk and the numbering has no gaps. A record becomes readable (and wakes
the long-polls) once its transaction has committed, so a consumer never sees a ``seq`` that a
crash could take back. A full writer queue drops the new entry and counts it.

Schema (``events`` keyed by ``seq``; ``meta`` holds ``epoch`` and ``head``)::

    CREATE TABLE events (seq INTEGER PRIMARY KEY, ts INTEGER, agent TEXT, session TEXT,
                         user_id TEXT, tool TEXT, kind TEXT, mutating INTEGER,
                         success INTEGER, args_fp TEXT, detail TEXT, trace_id TEXT,
                         span_id TEXT)
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)

``head`` in ``meta`` keeps the numbering going across restarts even if rows were deleted, and
``epoch`` stays the same for the life of the file, so consumers keep their cursors.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable

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
from otelhooks._private_files import private_file
from otelhooks._worker import (
    BoundedWorker,
    DropReason,
    at_fork,
    at_multiprocessing_child_exit,
)

__all__ = ["EventLogInUse", "SqliteEventLog"]

_log = structlog.get_logger("otelhooks")

_COLUMNS = (
    "seq, ts, agent, session, user_id, tool, kind, mutating, success, args_fp, detail, "
    "trace_id, span_id"
)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, ts INTEGER, agent TEXT, "
    "session TEXT, user_id TEXT, tool TEXT, kind TEXT, mutating INTEGER, success INTEGER, "
    "args_fp TEXT, detail TEXT, trace_id TEXT, span_id TEXT)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
)
_INSERT = f"INSERT INTO events ({_COLUMNS}) VALUES ({', '.join('?' * 13)})"
_SELECT = f"SELECT {_COLUMNS} FROM events WHERE seq > ? AND seq <= ?"


class EventLogInUse(OSError):
    """Another writer holds the durable log's file (a second ``otelhooks serve`` on it)."""


def _lock_writer(path: str) -> int:
    """Take the writer lock of ``path`` (``<path>.lock``, ``flock``); the fd holds it until
    closed, and the kernel releases it when the process dies (``kill -9`` included).

    Raises:
        EventLogInUse: another process (or another log in this one) writes the file.
    """
    lock_path = private_file(f"{path}.lock")
    fd = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        opener = os.read(fd, 32).decode(errors="replace").strip() or "?"
        holders = _holders(fd)
        os.close(fd)
        # A fork child shares the lock (a flock belongs to the open file) and keeps it after
        # the process that opened the log exited: naming only that process sent the user
        # looking for a pid that no longer ran.
        holder = ", ".join(map(str, holders)) or opener
        if holders and opener not in map(str, holders):
            holder += f", forked from pid {opener} that opened it"
        raise EventLogInUse(
            f"{path} is already written by another event log (pid {holder}): one writer per "
            "durable file; stop the other `otelhooks serve` or give this one its own path"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def _holders(fd: int) -> list[int]:
    """The other processes that have ``fd``'s file open (Linux's ``/proc``; elsewhere none)."""
    wanted = os.fstat(fd)
    found = []
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for pid in sorted(pids):
        if pid == os.getpid():
            continue
        try:
            for link in os.listdir(f"/proc/{pid}/fd"):
                seen = os.stat(f"/proc/{pid}/fd/{link}")
                if (seen.st_dev, seen.st_ino) == (wanted.st_dev, wanted.st_ino):
                    found.append(pid)
                    break
        except OSError:  # gone, or another user's
            continue
    return found


class SqliteEventLog(EventLog):
    """Records in a SQLite file, the newest ``retention`` of them; survives restarts.

    Args:
        path: the SQLite file (created ``0600`` with its directory, ``0700``, if missing).
            One writer per file: ``<path>.lock`` holds an exclusive ``flock`` while the log
            is open, and a second log on the same file raises :class:`EventLogInUse`.
        retention: records kept; older ones are deleted and reported as ``dropped_window``.
        name: the ``agent_events`` hook the log belongs to.
        commit_interval_s: longest a record waits for its transaction (the worker commits
            sooner when a batch of ``max_batch_size`` is ready).
        max_queue_size: entries waiting for the writer at most; beyond it appends are dropped.
        on_drop: called with ``(count, reason)`` for every dropped entry.
    """

    durable = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retention: int = 1_000_000,
        name: str = "agent_events",
        commit_interval_s: float = 0.005,
        max_queue_size: int = 65_536,
        max_batch_size: int = 1024,
        on_drop: Callable[[int, DropReason], None] | None = None,
    ) -> None:
        if retention <= 0:
            raise ValueError("retention must be positive")
        self.name = name
        self.path = os.fspath(path)
        self.retention = retention
        self.signal = AppendSignal()
        self._lock = threading.Lock()
        self._readers: list[sqlite3.Connection] = []
        self._local = threading.local()
        self._closed = False
        self._written = 0
        self._failed = 0
        # One writer per file: a second one would fail every write (and drop what it acked).
        self._lock_fd = _lock_writer(self.path)
        try:
            private_file(self.path)  # 0600 in a 0700 folder, before SQLite creates it
            conn = self._connect()
        except BaseException:
            os.close(self._lock_fd)
            raise
        self._conn: sqlite3.Connection | None = conn
        try:
            self._epoch, self._head, self._oldest = self._open_file(conn)
        except BaseException:
            conn.close()
            os.close(self._lock_fd)
            raise
        self._worker: BoundedWorker[EventEntry] = BoundedWorker(
            f"otelhooks-eventlog-{name}",
            self._write,
            max_queue_size=max_queue_size,
            max_batch_size=min(max_batch_size, max_queue_size),
            schedule_delay_s=commit_interval_s,
            on_drop=on_drop,
        )
        self._inherited: list[sqlite3.Connection] = []
        at_fork(after_in_child=self._reopen_in_child)
        self._close_at_child_exit()

    def _reopen_in_child(self) -> None:
        # A fork child writes the file too, under the writer lock it shares with its parent (a
        # flock belongs to the open file). SQLite forbids using a connection opened before the
        # fork, closing it included (it could undo the parent's locks): they are kept, unused,
        # and the child opens its own at its first write (a child that execs or never writes
        # opens nothing). Each write takes the next seq from the file's head.
        if self._conn is not None:
            self._inherited.append(self._conn)
        self._inherited += self._readers
        self._lock = threading.Lock()
        self._readers = []
        self._local = threading.local()
        self._conn = None
        self._close_at_child_exit()

    def _close_at_child_exit(self) -> None:
        # after the pipeline's shutdown (priority 0), whose observers append the last records
        at_multiprocessing_child_exit(self, SqliteEventLog.close, exitpriority=-1)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=5000")
        return conn

    def _open_file(self, conn: sqlite3.Connection) -> tuple[str, int, int]:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # in WAL: durable across process crashes
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                conn.execute(statement)
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            epoch = meta.get("epoch") or uuid.uuid4().hex[:16]
            low, high = conn.execute("SELECT MIN(seq), MAX(seq) FROM events").fetchone()
            head = max(int(meta.get("head", 0)), high or 0)
            cutoff = head - self.retention
            if low is not None and low <= cutoff:
                conn.execute("DELETE FROM events WHERE seq <= ?", (cutoff,))
                low = cutoff + 1
            conn.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [("epoch", epoch), ("head", str(head))],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return epoch, head, (low or 0)

    @property
    def epoch(self) -> str:
        return self._epoch

    def append(self, entry: EventEntry) -> bool:
        """Queue ``entry`` for the writer. O(1); False (and counted) when the queue is full."""
        return self._worker.submit(entry)

    def _write(self, batch: list[EventEntry]) -> None:
        # Runs on the worker thread only, so _head changes nowhere else in this process; the
        # numbering goes on from the file's head, which a fork child (or its parent) may have
        # moved since.
        if self._conn is None:
            self._conn = self._connect()
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            (stored,) = conn.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()
            start = int(stored)
            rows = [(start + i, *entry) for i, entry in enumerate(batch, start=1)]
            head = start + len(rows)
            cutoff = head - self.retention
            conn.executemany(_INSERT, rows)
            if cutoff >= max(self._oldest, 1):
                conn.execute("DELETE FROM events WHERE seq <= ?", (cutoff,))
            conn.execute("UPDATE meta SET value = ? WHERE key = 'head'", (str(head),))
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._failed += len(batch)  # counted in stats().dropped
            _log.exception("event log write failed", log=self.name, records=len(batch))
            self._report_lost(len(batch))
            return
        with self._lock:
            self._head = head
            self._oldest = max(self._oldest or 1, cutoff + 1)
            self._written += len(rows)
        self.signal.notify()

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._readers.append(conn)
        return conn

    def read(self, since: int, limit: int, *, newest: bool = False) -> EventBatch:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"event log {self.name!r} is closed")
            head, oldest = self._head, self._oldest
        order = "DESC" if newest else "ASC"
        query = f"{_SELECT} ORDER BY seq {order} LIMIT ?"
        fetched = self._reader().execute(query, (since, head, limit)).fetchall()
        if newest:
            fetched.reverse()
        rows = [
            EventRecord(s, ts, a, ses, u, t, k, bool(m), bool(ok), fp, d, tr, sp)
            for s, ts, a, ses, u, t, k, m, ok, fp, d, tr, sp in fetched
        ]
        return batch_from_rows(
            rows, since=since, head=head, oldest=oldest, epoch=self._epoch, newest=newest
        )

    def stats(self) -> LogStats:
        with self._lock:
            head, oldest, written = self._head, self._oldest, self._written
        return LogStats(head, oldest, written, self._worker.dropped + self._failed)

    @property
    def commit_failures(self) -> int:
        return self._failed

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every accepted entry is committed and readable."""
        return self._worker.flush(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Commit what is queued (within ``timeout_s``), then close the file. Idempotent."""
        self._worker.shutdown(timeout_s)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            readers, self._readers = self._readers, []
        if self._conn is not None:
            readers.append(self._conn)
        for conn in readers:
            try:
                conn.close()
            except sqlite3.Error:
                _log.exception("closing event log failed", log=self.name)
        os.close(self._lock_fd)  # releases the writer lock
