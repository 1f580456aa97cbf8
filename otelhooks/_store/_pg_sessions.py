"""Claude Code session state in PostgreSQL: a ``PreToolUse`` answered by one instance and its
``PostToolUse`` by another end the same ``execute_tool`` span.

:class:`SharedSessions` is :class:`~otelhooks.integrations.coding_agents._sessions.ServerSessions`
with one change: its transactions run on the store (the tables ``operations``, ``tools``,
``counters`` and ``tool_turns`` of the ``otelhooks_claude_code`` schema, the bridge's own, made
the transaction's ``search_path``), so the bridge logic is the same code. Each transaction
first takes one advisory lock, which serializes the fleet's session changes as
``BEGIN IMMEDIATE`` serializes them in SQLite (the lock and the path in one round trip).

The per-tool-use changes of every ``PreToolUse`` and ``PostToolUse`` (the tool use started in
its turn, found or opened; its verdict kept; ended) are one statement each instead:
a single statement is atomic, so it needs no advisory lock, and it commits alone
(:meth:`PostgresStore.statement`: one round trip, where a transaction takes ``BEGIN``, the lock,
its statements and ``COMMIT``). A statement that loses a race to another instance inserting the
same key finds nothing (its snapshot predates the other's row) and runs again. A turn opened
(``UserPromptSubmit``) or closed (``Stop``) is several statements under the lock: the server
runs them, one call of a function of migration 7 (one round trip instead of five or six).

Expiry reads the database, not one instance's memory: every turn opened or found records the
session's last use in ``touched`` (the database's clock), and a session an instance would forget
(idle past ``ttl_s`` in its memory, or past its count or byte bounds) is deleted only when no
instance used it within ``ttl_s``; the same statement deletes every session idle that long,
whoever held it.

Each session's spend (:meth:`add_spend`, :meth:`spend_of`) is one statement each too, on the
store only: a total kept in a scratch would be this instance's alone, and a budget guard reading
it would allow there what the fleet denies. So a cost the store cannot add is logged and lost
(the guard sees the session's total without it), and a total it cannot read is no total: the
``PreToolUse``'s budget guard fails and its ``on_error`` decides (``block`` denies).

What stays per instance: the bounds' accounting (sessions held, bytes) counts what this
instance started, and the join memory of recently ended tool uses (Claude Code's own
telemetry joins its tool spans on the instance that ended them, or finds them open).

A guard's decision does not need the shared state (it only joins a ``PreToolUse`` to its
``PostToolUse`` in one span), and Claude Code runs the tool when a hook answers anything but
2xx: so, as the command bridge's state file does (:class:`BridgeState`), a change the store
cannot make (down, restarting, locked past its lock timeout, the pool exhausted, or a value it
refuses: text with a NUL byte) is made in a scratch :class:`ServerSessions` in memory instead,
and the hooks still decide. The problem is logged; after the store was unavailable it is left
alone for its ``Retry-After`` (no event pays its connection wait again meanwhile), but not after
one change waited past its lock or statement timeout (:class:`StoreBusy`): that is the change's
own trouble, and every other session's changes and spend reads still go to the store. What the
scratch holds is this instance's alone, bounded as any :class:`ServerSessions`: a tool use
started there ends there, also once the store is back; one started on the store and ended
while it cannot be read is judged by its hooks as any, without a span. Every statement here but
the one that opens a turn stores nothing twice, so it runs again on another connection when a
pooled one was dropped (the server restarted, ``pg_terminate_backend``): a restart sends no tool use
to the scratch.

The statements themselves, and the reading of their rows, are ``_pg_session_sql``'s: this module
holds when each is sent and what is done when the store cannot take it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, Final, ParamSpec, TypeVar

import structlog

from otelhooks._instrument._spend import CALL_WINDOW_S, Spend, session_key
from otelhooks._store._errors import StoreBusy, StoreError, StoreUnavailable
from otelhooks._store._pg_schema import SESSIONS_LOCK
from otelhooks._store._pg_session_sql import (
    ADD_CALL,
    ADD_SPEND,
    BEGIN_TOOL,
    BEGIN_UNCOUNTED,
    CURRENT_OPERATION,
    END_OPERATION,
    END_TOOL,
    FORGET,
    FORGET_CALLS,
    FORGET_SPEND,
    HAS_TOOL,
    PEEK_OPERATION,
    READ_SPEND,
    SESSIONS_SCHEMA,
    SET_ATTRIBUTES,
    START_OPERATION,
    TOOL_SPAN,
    read_operation,
    read_tool,
)
from otelhooks.integrations.coding_agents._sessions import DropCounter, ServerSessions
from otelhooks.integrations.coding_agents._state_rows import (
    OpenOperation,
    OpenTool,
    new_span_id,
    stored_attributes,
)

if TYPE_CHECKING:
    import psycopg

    from otelhooks._store._pg_connections import PgConnections

T = TypeVar("T")
P = ParamSpec("P")
_log = structlog.get_logger("otelhooks")

__all__ = ["SharedSessions"]

# A race lost to another instance inserting the same key is run again, this many times at most.
_RACES: Final = 3


class _Row(tuple[Any, ...]):
    """A row read by position or by column name, as ``sqlite3.Row`` is."""

    names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names[key])
        return tuple.__getitem__(self, key)


def _rows(cursor: psycopg.Cursor[Any]) -> Callable[[Sequence[Any]], _Row]:
    names = {c.name: i for i, c in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> _Row:
        row = _Row(values)
        row.names = names
        return row

    return make


class _Transaction:
    """The part of ``sqlite3.Connection`` the bridge's SQL uses, on a PostgreSQL transaction:
    ``?`` placeholders become ``%s`` (the bridge's statements hold no ``?`` in literals)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[_Row]:
        cursor = self._conn.cursor(row_factory=_rows)
        cursor.execute(sql.replace("?", "%s").encode(), params)
        return cursor


def _or_scratch(
    method: Callable[Concatenate[SharedSessions, P], T],
) -> Callable[Concatenate[SharedSessions, P], T]:
    """``method`` on the store, or the same call on the scratch sessions when the store cannot
    make it (see the module doc)."""
    name = method.__name__

    def call(self: SharedSessions, /, *args: P.args, **kwargs: P.kwargs) -> T:
        if time.monotonic() >= self._store_retry_at:
            try:
                result = method(self, *args, **kwargs)
            except StoreError as exc:
                self._cannot(name, exc)
            else:
                return result
        scratch: Callable[P, T] = getattr(self._scratch_sessions(), name)
        return scratch(*args, **kwargs)

    return call


class SharedSessions(ServerSessions):
    """Claude Code sessions shared by every ``serve`` instance on a PostgreSQL store.

    Args:
        store: the store (its schema holds the session tables).
        on_drop, and the bounds: as for ``ServerSessions`` (accounted per instance).
    """

    def __init__(
        self, store: PgConnections, *, on_drop: DropCounter | None = None, **bounds: Any
    ) -> None:
        super().__init__(None, on_drop=on_drop, **bounds)  # the in-memory tables stay empty
        self.store = store
        self._bounds = bounds
        self._fallback: ServerSessions | None = None  # the scratch (see the module doc)
        self._fallback_lock = threading.Lock()
        self._store_retry_at = 0.0  # while the monotonic clock is before it, the store is skipped

    @property
    def durable(self) -> bool:
        return True

    @property
    def local(self) -> bool:
        return False  # every change is a round trip to the database

    @property
    def store_name(self) -> str:
        return self.store.name

    def _scratch_sessions(self) -> ServerSessions:
        with self._fallback_lock:
            if self._fallback is None:
                self._fallback = ServerSessions(on_drop=self.on_drop, **self._bounds)
            return self._fallback

    def _cannot(self, change: str, exc: StoreError) -> None:
        """Log why a change is made in the scratch; an unavailable store is left alone a while
        (not for one change that waited too long: the store answers the others)."""
        down = isinstance(exc, StoreUnavailable) and not isinstance(exc, StoreBusy)
        retry_s = StoreUnavailable.retry_after_s if down else 0
        _log.error(
            "the store cannot keep this claude-code session change: made without it (the hooks "
            "still decide; the span is not joined across the fleet)",
            store=self.store.name,
            change=change,
            problem=str(exc),
            retry_in_s=retry_s,
        )
        if retry_s:
            self._store_retry_at = time.monotonic() + retry_s

    def _tx(self, body: Callable[[Any], T]) -> T:
        with self.store.transaction() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s), set_config('search_path', %s, true)",
                (SESSIONS_LOCK, SESSIONS_SCHEMA),
            )
            return body(_Transaction(conn))

    def _one(self, sql: str, params: tuple[Any, ...]) -> Any:
        # the bridge's single statements, on the store
        return self._tx(lambda db: db.execute(sql, params).fetchone())

    # -- the per-tool-use changes, one statement each (see the module doc) ------------------------

    @_or_scratch
    def peek_operation(self, session_id: str) -> OpenOperation | None:
        rows = self.store.statement(PEEK_OPERATION, (session_id,), idempotent=True)
        return read_operation(rows[0]) if rows else None

    @_or_scratch
    def current_operation(self, session_id: str) -> OpenOperation:
        self._see(session_id)
        self._hold(session_id)
        for _ in range(_RACES):
            params = {
                "s": session_id,
                "op": f"op_{uuid.uuid4().hex[:16]}",
                "span": new_span_id(),
            }
            rows = self.store.statement(CURRENT_OPERATION, params, idempotent=True)
            if rows:
                return read_operation(rows[0])
        return super().current_operation(session_id)  # still contended: the locked way

    @_or_scratch
    def begin_tool(
        self,
        session_id: str,
        tool_use_id: str,
        tool_name: str,
        tool_input: dict[str, Any],
        *,
        counted: bool = True,
        attributes: dict[str, Any] | None = None,
    ) -> OpenTool:
        self._see(session_id)  # held with its tool once recorded (_held_tool)
        stored = json.dumps(tool_input, default=str)
        kept = json.dumps(attributes) if attributes else "{}"
        for _ in range(_RACES):
            params = {
                "s": session_id,
                "op": f"op_{uuid.uuid4().hex[:16]}",
                "opspan": new_span_id(),
                "u": tool_use_id,
                "span": new_span_id(),
                "name": tool_name,
                "input": stored,
                "attrs": kept,
            }
            rows = self.store.statement(
                BEGIN_TOOL if counted else BEGIN_UNCOUNTED, params, idempotent=True
            )
            if rows:
                tool = read_tool(rows[0])
                break
        else:  # still contended: the locked way
            tool = super(ServerSessions, self).begin_tool(
                session_id,
                tool_use_id,
                tool_name,
                tool_input,
                counted=counted,
                attributes=attributes,
            )
        self._held_tool(tool, len(stored))
        return tool

    @_or_scratch
    def start_operation(
        self, session_id: str, prompt: str
    ) -> tuple[OpenOperation, OpenOperation | None]:
        self._see(session_id)
        self._hold(session_id)
        new = OpenOperation(
            session_id, f"op_{uuid.uuid4().hex[:16]}", new_span_id(), time.time_ns(), prompt
        )
        params = (session_id, new.operation_id, new.span_id, prompt)
        rows = self.store.statement(START_OPERATION, params)
        self._new_turn(session_id)
        return new, read_operation(rows[0]) if rows else None

    @_or_scratch
    def end_operation(self, session_id: str) -> OpenOperation | None:
        rows = self.store.statement(END_OPERATION, (session_id,), idempotent=True)
        self._new_turn(session_id)
        return read_operation(rows[0]) if rows else None

    def _forget_session(self, session_id: str, reason: str) -> bool:
        params = {"s": session_id, "ttl": self.ttl_s}
        gone = {str(r[0]) for r in self.store.statement(FORGET, params, idempotent=True)}
        others = len(gone - {session_id})
        if others:
            self.on_drop(others, "expired")
        return session_id in gone

    @_or_scratch
    def set_tool_attributes(self, tool: OpenTool, attributes: dict[str, Any]) -> None:
        params = (stored_attributes(tool, attributes), tool.session_id, tool.tool_use_id)
        self.store.statement(SET_ATTRIBUTES, params, idempotent=True)

    @_or_scratch
    def has_open_tool(self, session_id: str, tool_use_id: str) -> bool:
        return bool(self.store.statement(HAS_TOOL, (session_id, tool_use_id), idempotent=True))

    @_or_scratch
    def tool_span(self, session_id: str, tool_use_id: str) -> int | None:
        with self._memory:
            ended = self._ended.items.get((session_id, tool_use_id))
        if ended is not None:
            return ended
        rows = self.store.statement(TOOL_SPAN, (session_id, tool_use_id), idempotent=True)
        return int(rows[0][0]) if rows else None

    @_or_scratch
    def end_tool(self, session_id: str, tool_use_id: str) -> OpenTool | None:
        # run again, it deletes nothing: the end answered as if the store never had it
        rows = self.store.statement(END_TOOL, (session_id, tool_use_id), idempotent=True)
        if not rows:  # or started in the scratch while the store could not keep it
            scratch = self._fallback
            return scratch.end_tool(session_id, tool_use_id) if scratch is not None else None
        tool = read_tool(rows[0])
        self._release_tool(session_id, tool_use_id)
        self._keep(tool)
        return tool

    end_turn = _or_scratch(ServerSessions.end_turn)
    end_session = _or_scratch(ServerSessions.end_session)

    # -- spend: on the store only (see the module doc) ---------------------------------------------

    def add_spend(
        self,
        session_id: str,
        cost_usd: float | None,
        input_tokens: int,
        output_tokens: int,
        call: bytes | None = None,
    ) -> Spend | None:
        params = {
            "k": session_key(session_id),
            "c": cost_usd or 0.0,
            "i": input_tokens,
            "o": output_tokens,
            "u": int(cost_usd is None),
            "r": call,
        }
        rows = self.store.statement(ADD_SPEND if call is None else ADD_CALL, params)
        if not rows:
            return None
        total = Spend(*rows[0])
        if total.calls == 1:  # a session new to the store: the bounds may be passed now
            bounds = {"ttl": self.ttl_s, "max": self.max_sessions}
            self.store.statement(FORGET_SPEND, bounds, idempotent=True)
        if call is not None and total.calls % 256 == 1:
            forget = {"window": CALL_WINDOW_S, "max": self.max_calls}
            self.store.statement(FORGET_CALLS, forget, idempotent=True)
        return total

    def spend_of(self, session_id: str) -> Spend:
        if time.monotonic() < self._store_retry_at:
            raise StoreUnavailable(self.store.name, "unavailable a moment ago: not asked again yet")
        rows = self.store.statement(READ_SPEND, (session_key(session_id),), idempotent=True)
        return Spend(*rows[0]) if rows else Spend()
