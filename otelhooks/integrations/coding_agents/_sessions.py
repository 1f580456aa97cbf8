"""``ServerSessions``: the coding-agent sessions of one ``otelhooks serve`` (or bridge daemon).

The command bridge carries open turns and tool uses across hook processes in a SQLite file,
opened and closed by every process. Under ``serve`` every event reaches one process, so the same
tables live on **one** connection held for the server's life: in memory by default, or in a
file (WAL) when the sessions must survive a restart. Each read-and-change is still one
transaction, serialized by a lock, so the bridge logic (:class:`BridgeState`'s methods) is the
same code in both forms.

The store also remembers, for a bounded number of recently ended tool uses, which
``execute_tool`` span each ``tool_use_id`` became: Claude Code exports its own telemetry at
exit, after the hook events, and :class:`~otelhooks.integrations.claude_code.ClaudeTelemetry`
links its tool spans to ours through it.

Bounds (a client chooses session ids, tool use ids and tool inputs): every session the store
holds is accounted in count and bytes, and expires. A session idle longer than ``ttl_s``, the
oldest one past ``max_sessions`` or past ``max_bytes`` (ids and tool inputs it keeps), and the
oldest open tool use of a session past ``max_tools_per_session`` are forgotten: their rows are
deleted (their spans are never ended) and each is counted by ``on_drop`` (``otelhooks.dropped``,
source ``claude_code_sessions``, reason ``expired``, ``too_many_sessions``, ``too_many_bytes``
or ``too_many_tools``). A turn that names more distinct tools than ``max_tools_per_session``
(or their names more bytes than ``max_bytes``) loses the counts of its other tools, which
restart at 1 (LobeHub's ``callIndex`` of that turn is then wrong; reason ``too_many_tools``).
The join memory (ended tool uses, recently seen sessions) is bounded the same way, by count
and bytes, oldest first (reason ``join_forgotten``).

Under ``serve`` the store also keeps each session's spend (Claude Code's own ``cost_usd``, from
its telemetry), which a budget guard reads on ``PreToolUse``: kept where the sessions are, it
survives a restart as they do (a file) and is the fleet's (PostgreSQL). A ``SessionEnd`` does
not end it (a resumed session goes on spending); it is keyed by :func:`session_key` and
forgotten when no call was added to it for ``ttl_s`` (wall clock: it outlives the process) or
past the ``max_sessions`` most recently added to.

The bounds' accounting (what each session holds, what is past a bound) is ``_session_bounds``'s:
this module holds the tables and deletes what that accounting names.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from otelhooks._instrument._spend import CALL_WINDOW_S, CALLS_KEPT, Spend, session_key
from otelhooks._store._errors import StoreError
from otelhooks.integrations.coding_agents._session_bounds import (
    ROW_BYTES,
    Holdings,
    Recent,
    tool_bytes,
)
from otelhooks.integrations.coding_agents._state import BridgeState
from otelhooks.integrations.coding_agents._state_rows import (
    UNCOUNTED,
    OpenOperation,
    OpenTool,
    connect,
)

__all__ = ["ServerSessions"]

_MEMORY = ":memory:"
_SPEND_SCHEMA = """
CREATE TABLE IF NOT EXISTS spend (
    key            BLOB PRIMARY KEY,
    cost_usd       REAL NOT NULL,
    input_tokens   INTEGER NOT NULL,
    output_tokens  INTEGER NOT NULL,
    calls          INTEGER NOT NULL,
    unpriced_calls INTEGER NOT NULL,
    at             REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS spend_at ON spend (at);
CREATE TABLE IF NOT EXISTS spend_calls (key BLOB PRIMARY KEY, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS spend_calls_at ON spend_calls (at);
"""
# One model call added to a session's total; the total after it.
_ADD_SPEND = (
    "INSERT INTO spend VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT(key) DO UPDATE SET "
    "cost_usd = cost_usd + excluded.cost_usd, input_tokens = input_tokens + "
    "excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, "
    "calls = calls + 1, unpriced_calls = unpriced_calls + excluded.unpriced_calls, "
    "at = excluded.at RETURNING cost_usd, input_tokens, output_tokens, calls, unpriced_calls"
)
# After a new session's first call: the totals idle past the ttl, and the oldest past the count.
_FORGET_SPEND = (
    "DELETE FROM spend WHERE at < ? OR key IN "
    "(SELECT key FROM spend ORDER BY at DESC LIMIT -1 OFFSET ?)"
)
# A keyed call: nothing when it was added already (see CALL_WINDOW_S).
_NEW_CALL = "INSERT INTO spend_calls VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING 1"
_FORGET_CALLS = (
    "DELETE FROM spend_calls WHERE at < ? OR key IN "
    "(SELECT key FROM spend_calls ORDER BY at DESC LIMIT -1 OFFSET ?)"
)
_READ_SPEND = (
    "SELECT cost_usd, input_tokens, output_tokens, calls, unpriced_calls FROM spend WHERE key = ?"
)
DropCounter = Callable[[int, str], None]


def _no_drop(count: int, reason: str) -> None:
    pass


class ServerSessions(BridgeState):
    """Open turns and tool uses of every coding-agent session a server (or daemon) sees.

    Args:
        path: a SQLite file that keeps the sessions across restarts; ``None`` keeps them in
            memory.
        remember: how many ended tool uses keep their span id for joining (oldest forgotten).
        ttl_s: a session unused this long is forgotten.
        max_sessions: sessions held at most (oldest forgotten).
        max_tools_per_session: open tool uses of one session at most (oldest forgotten).
        max_bytes: bytes of ids and tool inputs held at most, all sessions (oldest forgotten);
            the join memory may hold as much again.
        on_drop: ``(count, reason)`` for each session or tool use forgotten.
        exclusive: the file is this process's alone (a server's sessions, not the command
            bridge's state file that hook processes share): its lock is held while it is open
            (see :func:`~otelhooks.integrations.coding_agents._state_rows.connect`).

    Example:
        >>> sessions = ServerSessions()
        >>> sessions.begin_tool("s-1", "toolu_1", "Bash", {}).tool_use_id
        'toolu_1'
        >>> _ = sessions.end_tool("s-1", "toolu_1")
        >>> sessions.tool_span("s-1", "toolu_1") is not None
        True
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        remember: int = 65_536,
        ttl_s: float = 24 * 3600.0,
        max_sessions: int = 10_000,
        max_tools_per_session: int = 1_024,
        max_bytes: int = 64 * 1024 * 1024,
        on_drop: DropCounter | None = None,
        exclusive: bool = False,
    ):
        super().__init__(_MEMORY if path is None else path)
        self.exclusive = exclusive
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self.max_calls = CALLS_KEPT  # keys of keyed model calls kept (see add_spend)
        self.max_tools_per_session = max_tools_per_session
        self.max_bytes = max_bytes
        self.on_drop = on_drop or _no_drop
        # what this process keeps in memory (the join memory, the bounds' accounting) has a lock
        # of its own: the connection's is held for a whole transaction, and an event's notes
        # and counts never wait for another thread's statements
        self._memory = threading.Lock()
        self._ended = Recent(remember, max_bytes // 2, self._forgot)
        self._seen = Recent(remember, max_bytes // 2, self._forgot)
        self._holdings = Holdings(self)  # the bounds' accounting, under the memory lock
        if path is not None:
            self._count_kept()

    @property
    def durable(self) -> bool:
        """Whether the sessions survive a restart (a file, not memory)."""
        return str(self.path) != _MEMORY

    @property
    def shared(self) -> bool:
        """Whether other processes open the file: a bridge daemon's state file, which its hook
        processes share, not a server's own."""
        return self.durable and not self.exclusive

    @property
    def on_file(self) -> bool:
        """Whether the sessions are in a file: a server's own file that cannot be written (a
        full disk) makes its events' session changes in memory, as a shared file's neighbour
        problems do; a guard's decision never waits on it (before, the route answered 500)."""
        return self.durable

    def _new_scratch(self) -> sqlite3.Connection:
        db = super()._new_scratch()
        db.executescript(_SPEND_SCHEMA)  # a budget guard reads the spend there meanwhile
        return db

    def _open(self) -> sqlite3.Connection:
        if not self.durable:
            db = connect(_MEMORY)
        elif self.shared:
            db = super()._open()
        else:
            self._make_file()
            db = connect(self.path, exclusive=True)
        db.executescript(_SPEND_SCHEMA)
        return db

    @property
    def local(self) -> bool:
        """Whether every change is made in this process (memory, or a file only this server
        opens), never waiting for another process or a network: then a change may be made
        on the server's event loop."""
        return True

    def _forgot(self) -> None:
        self.on_drop(1, "join_forgotten")

    # -- joining -----------------------------------------------------------------------------------

    def _keep(self, tool: OpenTool) -> None:
        self.remember_tool(tool.session_id, tool.tool_use_id, tool.span_id)

    def remember_tool(self, session_id: str, tool_use_id: str, span_id: int) -> None:
        """Remember the ``execute_tool`` span of a tool use another process traced (the command
        bridge's, received as OTLP), for :meth:`tool_span` (bounded as the join memory is)."""
        size = len(session_id) + len(tool_use_id) + ROW_BYTES
        with self._memory:
            self._ended.put((session_id, tool_use_id), span_id, size)

    def _see(self, session_id: str) -> None:
        with self._memory:
            self._seen.put(session_id, 0, len(session_id) + ROW_BYTES)

    def note(self, session_id: str) -> None:
        """Remember that a hook event of ``session_id`` arrived (see :meth:`saw`)."""
        self._see(session_id)

    def saw(self, session_id: str) -> bool:
        """Whether hook events of this session reached the store (recently, in this process)."""
        with self._memory:
            return session_id in self._seen.items

    # -- spend -------------------------------------------------------------------------------------

    def add_spend(
        self,
        session_id: str,
        cost_usd: float | None,
        input_tokens: int,
        output_tokens: int,
        call: bytes | None = None,
    ) -> Spend | None:
        """Add one model call (unpriced when ``cost_usd`` is None) to the session's total;
        the total after it, or None when the call keyed ``call`` was added already (a
        client's retry; remembered for ``CALL_WINDOW_S``).

        Raises:
            StoreError: the store cannot add it (a full disk, a store that is down).
        """
        params = (
            session_key(session_id),
            cost_usd or 0.0,
            input_tokens,
            output_tokens,
            int(cost_usd is None),
            time.time(),
        )

        def body(db: sqlite3.Connection) -> Spend | None:
            now = params[-1]
            if call is not None and db.execute(_NEW_CALL, (call, now)).fetchone() is None:
                return None
            total = Spend(*db.execute(_ADD_SPEND, params).fetchone())
            if total.calls == 1:  # a session new to the store: the bounds may be passed now
                db.execute(_FORGET_SPEND, (now - self.ttl_s, self.max_sessions))
            if call is not None and total.calls % 256 == 1:
                db.execute(_FORGET_CALLS, (now - CALL_WINDOW_S, self.max_calls))
            return total

        try:
            return self._tx(body)
        except sqlite3.Error as exc:
            raise StoreError(self.store_name, f"{type(exc).__name__}: {exc}") from None

    def spend_of(self, session_id: str) -> Spend:
        """The session's total (an empty one for a session with none).

        Raises:
            StoreError: the store cannot be read (a budget guard then fails).
        """
        try:
            row = self._one(_READ_SPEND, (session_key(session_id),))
        except sqlite3.Error as exc:
            raise StoreError(self.store_name, f"{type(exc).__name__}: {exc}") from None
        return Spend(*row) if row is not None else Spend()

    # -- bounds ------------------------------------------------------------------------------------

    @property
    def held(self) -> tuple[int, int]:
        """Sessions held and the bytes of ids and tool inputs they hold (see the class doc)."""
        with self._memory:
            return len(self._holdings.sessions), self._holdings.bytes

    def held_sessions(self) -> list[str]:
        """The sessions held (those no ``SessionEnd`` ended yet), oldest used first."""
        with self._memory:
            return list(self._holdings.sessions)

    def _hold(self, session_id: str, tool: tuple[str, int] | None = None) -> None:
        """Account a use of ``session_id`` (and an open tool of ``size`` bytes); then forget
        what is past a bound."""
        now = time.monotonic()
        with self._memory:
            drops = self._holdings.hold(session_id, now, tool)
        for what, reason in drops:
            if isinstance(what, tuple):
                super().end_tool(*what)
                self.on_drop(1, reason)
            elif self._forget_session(what, reason):
                self.on_drop(1, reason)

    def _forget_session(self, session_id: str, reason: str) -> bool:
        """Delete a session past a bound; whether it was deleted (a shared store keeps one
        another instance still uses)."""
        super().end_session(session_id)
        return True

    def _count_kept(self) -> None:
        """Account what a durable file kept from an earlier run (its clock restarts now)."""
        now = time.monotonic()

        def read(db: sqlite3.Connection) -> tuple[list[sqlite3.Row], list[sqlite3.Row]]:
            tools = db.execute(
                "SELECT session_id, tool_use_id, length(tool_name), length(tool_input) "
                "FROM tools ORDER BY start_ns"
            ).fetchall()
            return tools, db.execute("SELECT session_id FROM operations").fetchall()

        rows, sessions = self._tx(read)
        self._holdings.count_kept(rows, sessions, now)

    def _release_tool(self, session_id: str, tool_use_id: str) -> None:
        with self._memory:
            self._holdings.release_tool(session_id, tool_use_id)

    def _count_name(self, session_id: str, tool_name: str) -> None:
        """Account the turn-count row of ``tool_name``; past a bound, the turn's counts go."""
        with self._memory:
            past = self._holdings.count_name(session_id, tool_name)
        if past:  # the other names' counts go; this one's (just taken) stays
            self._one(
                "DELETE FROM tool_turns WHERE session_id = ? AND tool_name <> ?",
                (session_id, tool_name),
            )
            self._new_turn(session_id, keep=tool_name)
            self.on_drop(1, "too_many_tools")

    def _new_turn(self, session_id: str, keep: str | None = None) -> None:
        """Forget the accounting of a session's turn counts (their rows were deleted), but
        ``keep``'s."""
        with self._memory:
            self._holdings.new_turn(session_id, keep)

    def _release(self, session_id: str) -> None:
        with self._memory:
            self._holdings.release(session_id)

    def has_open_tool(self, session_id: str, tool_use_id: str) -> bool:
        """Whether ``tool_use_id`` was started in ``session_id`` and has not ended."""
        row = self._one(
            "SELECT 1 FROM tools WHERE session_id = ? AND tool_use_id = ?",
            (session_id, tool_use_id),
        )
        return row is not None

    def start_operation(
        self, session_id: str, prompt: str
    ) -> tuple[OpenOperation, OpenOperation | None]:
        self._see(session_id)
        self._hold(session_id)
        started = super().start_operation(session_id, prompt)
        self._new_turn(session_id)
        return started

    def end_operation(self, session_id: str) -> OpenOperation | None:
        ended = super().end_operation(session_id)
        self._new_turn(session_id)
        return ended

    def current_operation(self, session_id: str) -> OpenOperation:
        self._see(session_id)
        self._hold(session_id)
        return super().current_operation(session_id)

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
        tool = super().begin_tool(
            session_id, tool_use_id, tool_name, tool_input, counted=counted, attributes=attributes
        )
        self._held_tool(tool, len(json.dumps(tool_input, default=str)) if tool_input else 2)
        return tool

    def _held_tool(self, tool: OpenTool, stored: int) -> None:
        """Account a use of the session and the tool use just started (its stored input
        ``stored`` bytes long): one ``_hold`` for both."""
        size = tool_bytes(tool.session_id, tool.tool_use_id, tool.tool_name, stored)
        self._hold(tool.session_id, (tool.tool_use_id, size))
        if tool.call_index != UNCOUNTED:
            self._count_name(tool.session_id, tool.tool_name)

    def tool_span(self, session_id: str, tool_use_id: str) -> int | None:
        """The span id of the ``execute_tool`` span of a tool use (open or recently ended)."""
        with self._memory:
            ended = self._ended.items.get((session_id, tool_use_id))
        if ended is not None:
            return ended
        row = self._one(
            "SELECT span_id FROM tools WHERE session_id = ? AND tool_use_id = ?",
            (session_id, tool_use_id),
        )
        return int(row[0]) if row is not None else None

    def end_tool(self, session_id: str, tool_use_id: str) -> OpenTool | None:
        tool = super().end_tool(session_id, tool_use_id)
        if tool is not None:
            self._release_tool(session_id, tool_use_id)
            self._keep(tool)
        return tool

    def end_turn(self, session_id: str) -> tuple[OpenOperation | None, list[OpenTool]]:
        op, tools = super().end_turn(session_id)
        for tool in tools:
            self._release_tool(session_id, tool.tool_use_id)
            self._keep(tool)
        self._new_turn(session_id)
        return op, tools

    def end_session(self, session_id: str) -> tuple[OpenOperation | None, list[OpenTool]]:
        op, tools = super().end_session(session_id)
        self._release(session_id)
        for tool in tools:
            self._keep(tool)
        return op, tools
