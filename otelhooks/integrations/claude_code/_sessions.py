"""``ServerSessions``: the Claude Code sessions of one ``otelhooks serve``, kept in the server.

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
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from otelhooks.integrations.claude_code._state import _SCHEMA, BridgeState, OpenOperation, OpenTool

__all__ = ["ServerSessions"]

_MEMORY = ":memory:"


class ServerSessions(BridgeState):
    """Open turns and tool uses of every Claude Code session a server sees.

    Args:
        path: a SQLite file that keeps the sessions across restarts; ``None`` keeps them in
            memory.
        remember: how many ended tool uses keep their span id for joining (oldest forgotten).

    Example:
        >>> sessions = ServerSessions()
        >>> op = sessions.current_operation("s-1")
        >>> sessions.start_tool(op, "toolu_1", "Bash", {}).tool_use_id
        'toolu_1'
        >>> _ = sessions.end_tool("s-1", "toolu_1")
        >>> sessions.tool_span("s-1", "toolu_1") is not None
        True
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, remember: int = 65_536):
        # BridgeState.__init__ is not called: it prepares a file for per-transaction connections.
        self.path = Path(path).expanduser() if path is not None else Path(_MEMORY)
        if path is not None:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self._db = sqlite3.connect(
            _MEMORY if path is None else self.path,
            timeout=30.0,
            isolation_level=None,
            check_same_thread=False,
        )
        self._db.row_factory = sqlite3.Row
        if path is not None:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()
        self._remember = remember
        self._ended: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._seen: OrderedDict[str, None] = OrderedDict()

    @property
    def durable(self) -> bool:
        """Whether the sessions survive a restart (a file, not memory)."""
        return str(self.path) != _MEMORY

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        """Close the connection (the file keeps what is open for the next start)."""
        with self._lock:
            self._db.close()

    # -- joining -----------------------------------------------------------------------------------

    def _keep(self, tool: OpenTool) -> None:
        with self._lock:
            self._ended[(tool.session_id, tool.tool_use_id)] = tool.span_id
            while len(self._ended) > self._remember:
                self._ended.popitem(last=False)

    def _see(self, session_id: str) -> None:
        with self._lock:
            self._seen[session_id] = None
            self._seen.move_to_end(session_id)
            while len(self._seen) > self._remember:
                self._seen.popitem(last=False)

    def saw(self, session_id: str) -> bool:
        """Whether hook events of this session reached the store (recently, in this process)."""
        with self._lock:
            return session_id in self._seen

    def start_operation(
        self, session_id: str, prompt: str
    ) -> tuple[OpenOperation, OpenOperation | None]:
        self._see(session_id)
        return super().start_operation(session_id, prompt)

    def current_operation(self, session_id: str) -> OpenOperation:
        self._see(session_id)
        return super().current_operation(session_id)

    def tool_span(self, session_id: str, tool_use_id: str) -> int | None:
        """The span id of the ``execute_tool`` span of a tool use (open or recently ended)."""
        with self._lock:
            ended = self._ended.get((session_id, tool_use_id))
        if ended is not None:
            return ended
        with self._tx() as db:
            row = db.execute(
                "SELECT span_id FROM tools WHERE session_id = ? AND tool_use_id = ?",
                (session_id, tool_use_id),
            ).fetchone()
        return int(row[0]) if row is not None else None

    def end_tool(self, session_id: str, tool_use_id: str) -> OpenTool | None:
        tool = super().end_tool(session_id, tool_use_id)
        if tool is not None:
            self._keep(tool)
        return tool

    def end_session(self, session_id: str) -> tuple[OpenOperation | None, list[OpenTool]]:
        op, tools = super().end_session(session_id)
        for tool in tools:
            self._keep(tool)
        return op, tools
