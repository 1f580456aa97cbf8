"""What one coding agent's hook process leaves for the next: open turns and open tool uses.

Claude Code, Codex CLI and Gemini CLI start a new process for every hook event, so a span that
begins at ``PreToolUse`` and ends at ``PostToolUse`` is carried across processes in a small
SQLite file (WAL mode). Every read-and-change is one ``BEGIN IMMEDIATE`` transaction, so
concurrent hook processes (an agent runs the hooks of parallel tool calls at the same time)
never lose or double an entry; a busy database is waited for (30 s), not failed. A hook event
makes one transaction for each change it must make before or after its hooks run
(``PreToolUse``: the tool use started in its turn, then its verdict kept; ``PostToolUse``: the
tool use ended), on one connection a process opens once: opening one costs more than the
transaction, and closing the last connection to the file checkpoints its log to disk.
This module holds the file (where it is, how it is opened, what is done when it cannot be
used); the rows and the statements that read and write them are ``_state_rows``'s, shared with
the server's sessions.

Data at rest: the file is created ``0600`` (SQLite gives its ``-wal`` and ``-shm`` files the same
mode) and missing folders ``0700``; the default folder ``~/.otelhooks`` is kept ``0700``. Prompts
and tool arguments are written only when content capture is on (the bridge decides).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import structlog

from otelhooks._private_files import FILE_MODE, tighten
from otelhooks._semconv import TOOL_ARGS_FINGERPRINT
from otelhooks.integrations.coding_agents._state_rows import (
    OpenOperation,
    OpenTool,
    begin_tool_in,
    connect,
    current_operation_in,
    new_span_id,
    read_operation,
    read_tool,
    stored_attributes,
)

__all__ = [
    "DEFAULT_STATE_PATH",
    "RENAMED_ENV",
    "STATE_ENV",
    "STATE_WAIT_S",
    "BridgeState",
    "env_value",
]

STATE_ENV = "OTELHOOKS_BRIDGE_STATE"
#: The bridge's variables by their earlier names (from when it served Claude Code alone), still
#: read, deprecated: the new name wins when both are set.
RENAMED_ENV = {
    STATE_ENV: "OTELHOOKS_CLAUDE_STATE",
    "OTELHOOKS_BRIDGE_DAEMON_IDLE": "OTELHOOKS_CLAUDE_DAEMON_IDLE",
    "OTELHOOKS_BRIDGE_DAEMON_ANSWER_S": "OTELHOOKS_CLAUDE_DAEMON_ANSWER_S",
}
DEFAULT_STATE_PATH = Path("~/.otelhooks/claude-code.sqlite3")
#: How long a hook process waits for another's transaction on the state file before it goes on
#: without the file (:class:`BridgeState`): far past any real transaction (milliseconds), well
#: inside the time a hook has to answer (25 s), so a stopped neighbour cannot silence a guard.
STATE_WAIT_S = 5.0

T = TypeVar("T")
_log = structlog.get_logger("otelhooks")
_MEMORY = ":memory:"


def _file_problem(exc: BaseException) -> bool:
    """Whether ``exc`` is the file's problem, not the calling code's: the file locked past the
    wait, full, unreadable, not a database or not of this version's tables, its folder not
    writable (every database error but a misuse of the connection, and every OS error)."""
    if isinstance(exc, sqlite3.ProgrammingError):
        return False
    return isinstance(exc, sqlite3.DatabaseError | OSError)


def _transaction(db: sqlite3.Connection, body: Callable[[sqlite3.Connection], T]) -> T:
    db.execute("BEGIN IMMEDIATE")
    try:
        result = body(db)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return result


def env_value(values: Mapping[str, str], name: str) -> str | None:
    """The variable ``name`` of ``values`` (an environment, export settings), or its earlier
    name's (:data:`RENAMED_ENV`); ``None`` (or empty) when neither is set.

    Example:
        >>> env_value({"OTELHOOKS_CLAUDE_STATE": "/tmp/s.sqlite3"}, STATE_ENV)
        '/tmp/s.sqlite3'
    """
    return values.get(name) or values.get(RENAMED_ENV.get(name, ""))


class BridgeState:
    """The state file. Each method is one transaction; no transaction is held between calls.

    The file is shared by every hook process of the machine, so a neighbour can make it
    unusable: a process stopped while it holds the write lock, a full disk, a file that is not
    a database, a folder that cannot be written. None of that may keep a guard from answering
    (its decision does not need the file): a transaction that cannot be made in the file within
    ``wait_s`` is made in a scratch database in memory instead, the problem is logged, and the
    file is tried again ``wait_s`` later (the scratch is dropped once the file works). What the
    scratch holds is this process's alone: a tool use started there ends, in another process,
    as a tool use whose start was missed (a zero-length span).

    Args:
        path: the SQLite file (created with its folder); ``$OTELHOOKS_BRIDGE_STATE`` or
            ``~/.otelhooks/claude-code.sqlite3`` when omitted.
        wait_s: how long to wait for another process's transaction, and how long the file is
            then left alone.

    Example:
        >>> state = BridgeState("/tmp/otelhooks-doc-state.sqlite3")
        >>> tool = state.begin_tool("s-doc", "toolu_1", "Bash", {"command": "ls"})
        >>> state.end_tool("s-doc", "toolu_1") == tool
        True
        >>> state.close()
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, wait_s: float = STATE_WAIT_S
    ) -> None:
        chosen = path or env_value(os.environ, STATE_ENV) or DEFAULT_STATE_PATH
        self.path = Path(chosen).expanduser()
        self.wait_s = wait_s
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._scratch: sqlite3.Connection | None = None
        self._retry_at = 0.0  # while the monotonic clock is before it, the file is not tried
        self._closed = False

    @property
    def store_name(self) -> str:
        """What an error names the store by (the file)."""
        return str(self.path)

    @property
    def shared(self) -> bool:
        """Whether other processes open the file (then its problems are a neighbour's, and a
        transaction falls back to the scratch database)."""
        return True

    @property
    def on_file(self) -> bool:
        """Whether the state is in a file, which a full disk or a bad sector can refuse: a
        transaction the file refuses is made in the scratch database (memory cannot fail so)."""
        return True

    def _new_scratch(self) -> sqlite3.Connection:
        """The scratch database, the file's tables in memory."""
        return connect(_MEMORY)

    def _open(self) -> sqlite3.Connection:
        """The file's connection (:meth:`_run` opens it on first use)."""
        self._make_file()
        return connect(self.path, wait_s=self.wait_s)

    def _make_file(self) -> None:
        """The file and its folder, made owner-only if missing."""
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if folder == DEFAULT_STATE_PATH.expanduser().parent:
            folder.chmod(0o700)  # our own folder: tighten one an older version left open
        # create the file owner-only before SQLite opens it (it keeps an existing file's mode)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            tighten(fd)
        finally:
            os.close(fd)

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` on the file's connection; on the scratch one if the file cannot be used."""
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError(f"the state {self.store_name} is closed")
            if not self.on_file:
                if self._db is None:
                    self._db = self._open()
                return work(self._db)
            if time.monotonic() >= self._retry_at:
                try:
                    if self._db is None:
                        self._db = self._open()
                    result = work(self._db)
                except (sqlite3.Error, OSError) as exc:
                    if not _file_problem(exc):
                        raise
                    self._unusable(exc)
                else:
                    self._drop_scratch()  # the file is back: what the scratch held ends here
                    return result
            if self._scratch is None:
                self._scratch = self._new_scratch()
            return work(self._scratch)

    def _unusable(self, exc: BaseException) -> None:
        _log.error(
            "the state file cannot be used: this process's events are handled without it "
            "(their hooks still decide; what they change of their sessions is kept in memory "
            "only, lost to a restart, and their spans are not joined to the session's others)",
            state_file=str(self.path),
            problem=f"{type(exc).__name__}: {exc}",
            retry_in_s=self.wait_s,
        )
        self._retry_at = time.monotonic() + self.wait_s
        if self._db is None:
            return
        if self.shared:
            self._db.close()  # opened again on the next try: the problem may be the connection's
            self._db = None
        elif self._db.in_transaction:
            # a file of this process's alone stays open (its connection holds the file's lock),
            # out of the transaction the refused write left open
            with contextlib.suppress(sqlite3.Error):
                self._db.rollback()

    def _drop_scratch(self) -> None:
        if self._scratch is not None:
            self._scratch.close()
            self._scratch = None

    def _tx(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """``body`` in one ``BEGIN IMMEDIATE`` … ``COMMIT`` transaction, rolled back if it
        raises (``body`` may run again, on the scratch database: it only uses ``db``)."""
        return self._run(lambda db: _transaction(db, body))

    def _one(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Row | None:
        """One statement in a transaction of its own (autocommit: a single statement is
        atomic, so it needs no ``BEGIN`` and ``COMMIT`` around it); its first row."""
        row: sqlite3.Row | None = self._run(lambda db: db.execute(sql, params).fetchone())
        return row

    def close(self) -> None:
        """Close the connection (a call after this one fails)."""
        with self._lock:
            self._closed = True
            if self._db is not None:
                self._db.close()
            self._drop_scratch()

    # -- turns -------------------------------------------------------------------------------------

    def start_operation(
        self, session_id: str, prompt: str
    ) -> tuple[OpenOperation, OpenOperation | None]:
        """Open a new turn; returns it and the turn it replaces (one that never saw ``Stop``)."""
        new = OpenOperation(
            session_id, f"op_{uuid.uuid4().hex[:16]}", new_span_id(), time.time_ns(), prompt
        )

        def body(db: sqlite3.Connection) -> sqlite3.Row | None:
            row: sqlite3.Row | None = db.execute(
                "DELETE FROM operations WHERE session_id = ? RETURNING *", (session_id,)
            ).fetchone()
            db.execute(
                "INSERT INTO operations VALUES (?, ?, ?, ?, ?)",
                (new.session_id, new.operation_id, new.span_id, new.start_ns, new.prompt),
            )
            # the turn's counts start again (the counters of another turn restart anyway: this
            # keeps a session's rows to the tool names of one turn)
            db.execute("DELETE FROM tool_turns WHERE session_id = ?", (session_id,))
            return row

        row = self._tx(body)
        return new, read_operation(row) if row is not None else None

    def current_operation(self, session_id: str) -> OpenOperation:
        """The open turn, opened now if there is none (hooks installed mid-session)."""
        return self._tx(lambda db: current_operation_in(db, session_id))

    def peek_operation(self, session_id: str) -> OpenOperation | None:
        """The open turn, or ``None`` (nothing is opened)."""
        row = self._one("SELECT * FROM operations WHERE session_id = ?", (session_id,))
        return read_operation(row) if row is not None else None

    def end_operation(self, session_id: str) -> OpenOperation | None:
        """Close the open turn (``Stop``); ``None`` if there was none."""

        def body(db: sqlite3.Connection) -> sqlite3.Row | None:
            row: sqlite3.Row | None = db.execute(
                "DELETE FROM operations WHERE session_id = ? RETURNING *", (session_id,)
            ).fetchone()
            db.execute("DELETE FROM tool_turns WHERE session_id = ?", (session_id,))
            return row

        row = self._tx(body)
        return read_operation(row) if row is not None else None

    # -- tool uses ---------------------------------------------------------------------------------

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
        """Record a tool use as it starts, in the open turn (opened now if there is none); a
        repeated ``PreToolUse`` gets the first record. ``attributes`` are kept with a new
        record (what :meth:`set_tool_attributes` would keep, known before the hooks ran).

        ``counted=False`` records an open call that is not a tool use (a model call): it takes
        no ``call_index`` (its index is ``-1``), so the session's tool uses stay numbered
        0, 1, 2 ... whatever runs between them, and no ``turn_index`` (0). A counted one also
        takes its tool's number in the turn (``turn_index``, from 1).
        """
        kept = dict(attributes) if attributes else {}

        def body(db: sqlite3.Connection) -> OpenTool:
            op = current_operation_in(db, session_id)
            return begin_tool_in(db, op, tool_use_id, tool_name, tool_input, counted, kept)

        return self._tx(body)

    def set_tool_attributes(self, tool: OpenTool, attributes: dict[str, Any]) -> None:
        """Keep the attributes decided at ``PreToolUse`` (hook verdict) for the span's end."""
        self._one(
            "UPDATE tools SET attributes = ? WHERE session_id = ? AND tool_use_id = ?",
            (stored_attributes(tool, attributes), tool.session_id, tool.tool_use_id),
        )

    def asked_tool(self, session_id: str, tool_name: str, fingerprint: str) -> str | None:
        """The id of the oldest open use of ``tool_name`` whose arguments' fingerprint
        (``otelhooks.tool.args_fp``) is ``fingerprint``: the call a ``PermissionRequest``, which
        names no tool use id, asks about."""
        row = self._one(
            "SELECT tool_use_id FROM tools WHERE session_id = ? AND tool_name = ? "
            "AND json_extract(attributes, ?) = ? ORDER BY start_ns LIMIT 1",
            (session_id, tool_name, f'$."{TOOL_ARGS_FINGERPRINT}"', fingerprint),
        )
        return str(row[0]) if row is not None else None

    def end_tool(self, session_id: str, tool_use_id: str) -> OpenTool | None:
        """Remove and return the open tool use (``PostToolUse`` / ``PostToolUseFailure``)."""
        row = self._one(
            "DELETE FROM tools WHERE session_id = ? AND tool_use_id = ? RETURNING *",
            (session_id, tool_use_id),
        )
        return read_tool(row) if row is not None else None

    def end_turn(self, session_id: str) -> tuple[OpenOperation | None, list[OpenTool]]:
        """Close the open turn and every open tool use of the session (``Interrupt``: Claude
        Code sends no ``PostToolUse`` for a call it stopped); the session goes on."""
        return self._end(session_id, whole_session=False)

    def end_session(self, session_id: str) -> tuple[OpenOperation | None, list[OpenTool]]:
        """Remove everything of a session (``SessionEnd``): the open turn and tool uses."""
        return self._end(session_id, whole_session=True)

    def _end(
        self, session_id: str, *, whole_session: bool
    ) -> tuple[OpenOperation | None, list[OpenTool]]:
        def body(db: sqlite3.Connection) -> tuple[sqlite3.Row | None, list[sqlite3.Row]]:
            op = db.execute(
                "DELETE FROM operations WHERE session_id = ? RETURNING *", (session_id,)
            ).fetchone()
            tools = db.execute(
                "DELETE FROM tools WHERE session_id = ? RETURNING *", (session_id,)
            ).fetchall()
            if whole_session:  # the session's tool uses are numbered on across its turns
                db.execute("DELETE FROM counters WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM tool_turns WHERE session_id = ?", (session_id,))
            return op, tools

        op, tools = self._tx(body)
        return (read_operation(op) if op is not None else None), [read_tool(t) for t in tools]
