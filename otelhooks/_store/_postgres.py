"""The PostgreSQL store: a bounded connection pool, the schema and its version table.

Every connection runs with ``statement_timeout`` (and ``lock_timeout``), so no query waits for
ever, and with ``idle_in_transaction_session_timeout`` at twice it, so no transaction of an
instance frozen inside it holds its locks for ever; taking a connection from the pool waits at
most ``pool_timeout_s``. Those timeouts are
the server's: a server that stops answering without closing (a hung host or disk, a network
path that stops forwarding) would hold a :meth:`PostgresStore.statement` for ever, and with it
a guard's decision on a Claude Code hook. So a statement not answered within the statement
timeout and a second (:class:`_Stalls`) has its connection's socket shut down: it fails as a
lost connection would. Errors are
translated here, at one boundary: a connection that cannot be had or is lost
(``OperationalError``, a pool timeout while the pool cannot open its connections) or a server
that turned read-only (a standby after a failover) is :class:`StoreUnavailable` (``503``,
retry); one change past its lock or statement timeout, or a deadlock's loser, is
:class:`StoreBusy` (``503`` too, but only that change is retried: the store answers), and so is
a pool timeout while every connection of the pool is open and lent (serve is saturated, the
server is not down: as unavailable, one busy moment turned the store off for every session);
any other database error :class:`StoreError`, also a value past the database's limits (an
index row too large), which is the value's fault; all name the store without its password.
Each is counted by its ``error`` (:meth:`PostgresStore.count_errors_with`: serve's
``otelhooks.store.errors``), so an alert tells serve saturated from the store down.

Schema migrations are numbered steps applied in one transaction under an advisory lock, so
instances starting together do not race; ``otelhooks_schema`` records each applied version.
A database with a version newer than this release knows is refused, not guessed at.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from otelhooks._config import AgentEventsConfig
from otelhooks._eventlog._model import EventLog
from otelhooks._store._base import DEFAULT_STATEMENT_TIMEOUT_S, Store
from otelhooks._store._errors import StoreBusy, StoreError, StoreUnavailable, error_reason
from otelhooks._store._pg_schema import MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from otelhooks._actions._outbox import Report
    from otelhooks._store._pg_approvals import SharedApprovalInbox
    from otelhooks._store._pg_listen import Listener
    from otelhooks._store._pg_outbox import PostgresOutbox
    from otelhooks._store._pg_sessions import SharedSessions
    from otelhooks._store._pg_webindex import SharedTraceIndex
    from otelhooks.integrations.coding_agents._sessions import DropCounter

__all__ = ["PostgresStore", "store_name"]

_log = structlog.get_logger("otelhooks")


# how much longer than the statement timeout a statement may go unanswered before it is stalled
_STALL_GRACE_S = 1.0
_STALL_TICK_S = 0.25


class _Stalls:
    """Statements in flight; one unanswered past ``limit_s`` has its socket shut down (the
    server's own timeouts cannot end it: see the module doc), checked every 0.25 s."""

    def __init__(self, limit_s: float, store: str) -> None:
        self.limit_s = limit_s
        self.store = store
        self._lock = threading.Lock()
        self._due: dict[int, tuple[float, psycopg.Connection[Any]]] = {}  # id: (when stalled, it)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="otelhooks-store-stalls")
        self._thread.daemon = True
        self._thread.start()

    def start(self, conn: psycopg.Connection[Any]) -> None:
        due = time.monotonic() + self.limit_s
        with self._lock:
            self._due[id(conn)] = (due, conn)

    def end(self, conn: psycopg.Connection[Any]) -> bool:
        """Stop watching ``conn`` (before it goes back to the pool: never shut one another
        caller took); whether it was still watched, not shut for stalling."""
        with self._lock:
            return self._due.pop(id(conn), None) is not None

    def _watch(self) -> None:
        while not self._stop.wait(_STALL_TICK_S):
            now = time.monotonic()
            with self._lock:
                stalled = [k for k, (due, _) in self._due.items() if due <= now]
                for key in stalled:
                    _shut(self._due.pop(key)[1])
            if stalled:
                _log.error(
                    "store: no answer to a statement: its connection is closed",
                    store=self.store,
                    waited_s=self.limit_s,
                    statements=len(stalled),
                )

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def _shut(conn: psycopg.Connection[Any]) -> None:
    """Shut down the socket of ``conn``, leaving its descriptor to libpq: its next read ends,
    and the connection counts as lost."""
    import psycopg

    try:
        with socket.socket(fileno=os.dup(conn.pgconn.socket)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, psycopg.Error):
        pass  # closed meanwhile: nothing to end


def store_name(url: str) -> str:
    """``postgresql://user@host:port/db`` of ``url``, without a password or options."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(url)
    except Exception:
        return "postgresql://?"
    user = f"{info['user']}@" if info.get("user") else ""
    port = f":{info['port']}" if info.get("port") else ""
    return f"postgresql://{user}{info.get('host', '')}{port}/{info.get('dbname', '')}"


class PostgresStore(Store):
    """State in PostgreSQL, shared by every ``serve`` instance on the same database.

    Args:
        url: a libpq URL or conninfo string (``postgresql://user@host:5432/db``).
        max_connections: the pool's bound (each instance holds at most this many).
        statement_timeout_s: the longest any one query may run.
        pool_timeout_s: how long a caller waits for a connection: then its change is
            :class:`StoreBusy` when every pooled connection is in use, else the store is
            unavailable.
        connect_timeout_s: how long opening one connection may take.

    Raises:
        StoreError: the ``postgresql`` extra is not installed.
    """

    shared = True

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 8,
        statement_timeout_s: float = DEFAULT_STATEMENT_TIMEOUT_S,
        pool_timeout_s: float = 2.0,
        connect_timeout_s: float = 2.0,
    ) -> None:
        self.url = url
        self.name = store_name(url)
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError(
                self.name, "needs the postgresql extra: pip install 'otelhooks[postgresql]'"
            ) from None
        from otelhooks._store._pg_logging import route_psycopg_logs

        route_psycopg_logs(self.name)
        timeout_ms = int(statement_timeout_s * 1000)
        self.statement_timeout_s = statement_timeout_s
        # a transaction left open by an instance frozen inside it (SIGSTOP, a paused VM) holds
        # its locks, the approvals' head row among them, until the server ends it: every other
        # instance's approvals failed as busy for as long as the freeze lasted
        idle_ms = 2 * timeout_ms
        self.connect_kwargs: dict[str, object] = {
            "connect_timeout": max(1, round(connect_timeout_s)),
            "options": (
                f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms} "
                f"-c idle_in_transaction_session_timeout={idle_ms}"
            ),
            "application_name": "otelhooks",
        }
        self._pool: ConnectionPool[psycopg.Connection[tuple[object, ...]]] = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            timeout=pool_timeout_s,
            # transaction() says BEGIN itself; a lone statement (statement()) commits alone
            kwargs={**self.connect_kwargs, "autocommit": True},
            # A failed background reconnection is given up at once; the next caller that needs
            # a connection makes the pool try again (tests/fleet: recovery after a restart).
            reconnect_timeout=0,
            name="otelhooks",
            open=False,
        )
        self._pool.open(wait=False)
        self._stalls = _Stalls(statement_timeout_s + _STALL_GRACE_S, self.name)
        self._logs: list[EventLog] = []
        self._listener: Listener | None = None
        self._inbox: SharedApprovalInbox | None = None
        self._count_error: Callable[[str], None] = _count_nothing

    def count_errors_with(self, count: Callable[[str], None]) -> None:
        """Call ``count`` with the ``error`` (:func:`error_reason`) of each failed statement or
        transaction: ``store_busy``, ``store_unavailable`` or ``store_error``."""
        self._count_error = count

    def _failed(self, exc: psycopg.Error) -> StoreError:
        """The store's error for ``exc``, counted."""
        from psycopg_pool import PoolTimeout

        if isinstance(exc, PoolTimeout):
            error: StoreError = self._pool_timeout(exc)
        else:
            error = _translated(self.name, exc)
        self._count_error(error_reason(error))
        return error

    @contextlib.contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        """A pooled connection in a transaction, committed when the block ends.

        A pooled connection the server dropped (it restarted) fails at ``BEGIN``, before
        anything of the caller's ran: it is discarded and the block gets another, up to the
        pool's size (every pooled connection may have been dropped), at last a fresh one.

        Raises:
            StoreBusy: every pooled connection stayed in use past the pool's timeout, or the
                change waited past its lock or statement timeout.
            StoreUnavailable: no connection could be opened in time, or it was lost.
            StoreError: any other database error.
        """
        import psycopg

        try:
            with contextlib.ExitStack() as stack:
                for tries in range(self._pool.max_size, -1, -1):
                    conn = stack.enter_context(self._pool.connection())
                    try:
                        stack.enter_context(conn.transaction())
                        break
                    except psycopg.OperationalError:
                        stack.close()  # back to the pool, which drops a broken connection
                        if not (tries and conn.broken):
                            raise
                yield conn
        except psycopg.Error as exc:  # a PoolTimeout too
            raise self._failed(exc) from None

    def statement(
        self,
        sql: bytes,
        params: Mapping[str, object] | Sequence[object] = (),
        *,
        idempotent: bool = False,
    ) -> list[tuple[Any, ...]]:
        """Run one statement in a transaction of its own and return its rows: one round trip,
        where :meth:`transaction` takes ``BEGIN``, the statements and ``COMMIT``.

        Not retried: a connection lost while the statement ran may or may not have committed
        it. An ``idempotent`` one (a read, or a write that stores nothing twice) is: on a lost
        connection (pooled ones the server dropped as it restarted) it runs again on another,
        up to the pool's size, where :meth:`transaction` finds a dead one at ``BEGIN``.

        Raises:
            StoreBusy: every pooled connection stayed in use past the pool's timeout, or the
                change waited past its lock or statement timeout.
            StoreUnavailable: no connection could be opened in time, or it was lost.
            StoreError: any other database error.
        """
        import psycopg

        tries = self._pool.max_size + 1 if idempotent else 1
        pool = self._pool
        try:
            while True:
                tries -= 1
                # getconn/putconn, not pool.connection(), which also enters the connection
                # (its commit(), nothing to do after an autocommitted statement) and times
                # its use; putconn itself discards a broken connection
                conn = pool.getconn()
                self._stalls.start(conn)
                try:
                    return _rows_of(conn, sql, params)
                except psycopg.OperationalError:
                    # a pooled connection the server dropped fails at once, and the pool
                    # discards it: the next try takes another, at last a fresh one (not after
                    # a stall: the next would wait as long)
                    if not (self._stalls.end(conn) and tries and conn.broken):
                        raise
                finally:
                    self._stalls.end(conn)
                    pool.putconn(conn)
        except psycopg.Error as exc:  # a PoolTimeout too
            raise self._failed(exc) from None

    def _pool_timeout(self, exc: Exception) -> StoreUnavailable:
        """What a wait for a pooled connection past the pool's timeout means: every connection
        open and lent is serve's own saturation (:class:`StoreBusy`); fewer open means the pool
        could not open more: the server is down or refusing."""
        stats = self._pool.get_stats()
        if stats.get("pool_size", 0) >= self._pool.max_size:
            return StoreBusy(
                self.name,
                f"serve is saturated, not the store: all {self._pool.max_size} pooled "
                f"connections in use ({exc})",
            )
        return StoreUnavailable(self.name, f"no connection: {exc}")

    def version(self) -> int:
        """The schema version in the database (0 before the first migration)."""
        with self.transaction() as conn:
            found = conn.execute("SELECT to_regclass('otelhooks_schema') IS NOT NULL").fetchone()
            if not found or not found[0]:
                return 0
            row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM otelhooks_schema").fetchone()
            return int(row[0]) if row else 0  # type: ignore[call-overload]

    def migrate(self) -> int:
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS otelhooks_schema (version INTEGER PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM otelhooks_schema").fetchone()
            current = int(row[0]) if row else 0  # type: ignore[call-overload]
            if current > SCHEMA_VERSION:
                raise StoreError(
                    self.name,
                    f"schema version {current} is newer than this otelhooks knows "
                    f"({SCHEMA_VERSION}); upgrade otelhooks",
                )
            for version, sql in MIGRATIONS:
                if version > current:
                    conn.execute(sql.encode())
                    conn.execute("INSERT INTO otelhooks_schema (version) VALUES (%s)", (version,))
                    _log.info("store schema migrated", store=self.name, version=version)
        return max(current, SCHEMA_VERSION)

    def event_log(self, config: AgentEventsConfig) -> EventLog:
        from otelhooks._store._pg_eventlog import PostgresEventLog

        retention = config.retention if config.durable else config.capacity
        log = PostgresEventLog(self, name=config.name, retention=retention)
        self._logs.append(log)
        return log

    def outbox(self, report: Report) -> PostgresOutbox:
        from otelhooks._store._pg_outbox import PostgresOutbox

        return PostgresOutbox(self, report=report)

    def claude_code_sessions(self, on_drop: DropCounter | None = None) -> SharedSessions:
        from otelhooks._store._pg_sessions import SharedSessions

        return SharedSessions(self, on_drop=on_drop)

    def trace_index(self, *, capture_content: bool, **bounds: int) -> SharedTraceIndex:
        from otelhooks._store._pg_webindex import SharedTraceIndex

        return SharedTraceIndex(self, capture_content=capture_content, **bounds)

    def approval_inbox(self) -> SharedApprovalInbox:
        """The approval inbox every instance on the store lists and answers (one per store)."""
        from otelhooks._store._pg_approvals import SharedApprovalInbox

        if self._inbox is None:
            self._inbox = SharedApprovalInbox(self)
        return self._inbox

    def listener(self) -> Listener:
        """The store's one ``LISTEN`` connection (started on first use)."""
        from otelhooks._store._pg_listen import Listener

        if self._listener is None:
            self._listener = Listener(self.url, self.connect_kwargs, store=self.name)
        return self._listener

    def close(self) -> None:
        if self._inbox is not None:
            self._inbox.close()
        if self._listener is not None:
            self._listener.close()
        self._pool.close(timeout=5.0)
        self._stalls.close()


def _rows_of(
    conn: psycopg.Connection[tuple[object, ...]],
    sql: bytes,
    params: Mapping[str, object] | Sequence[object],
) -> list[tuple[Any, ...]]:
    cursor = conn.execute(sql, params)
    # rownumber, not description: the latter builds a Column per column each time
    return cursor.fetchall() if cursor.rownumber is not None else []


def _count_nothing(error: str) -> None:
    pass


def _translated(name: str, exc: psycopg.Error) -> StoreError:
    """The store's error for a database error (see the module doc)."""
    import psycopg
    from psycopg import errors

    # one change's own failure (its lock wait or statement past the timeout, a deadlock it
    # lost, a value past the database's limits: an index row of a client's megabyte id) fails
    # that change only: as the store down, every session's changes and spend reads skipped
    # the store a while, and every budget guard of the instance failed with them
    if isinstance(exc, errors.QueryCanceled | errors.LockNotAvailable | errors.TransactionRollback):
        return StoreBusy(name, _first_line(exc))
    down = psycopg.OperationalError | errors.ReadOnlySqlTransaction  # lost, or a standby now
    if isinstance(exc, down) and not isinstance(exc, errors.ProgramLimitExceeded):
        return StoreUnavailable(name, _first_line(exc))
    return StoreError(name, _first_line(exc))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
