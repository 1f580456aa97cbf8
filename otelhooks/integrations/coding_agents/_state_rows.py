"""The state file's tables and the records kept in them: open turns and open tool uses.

One job: the rows themselves, what a turn and a tool use look like in SQLite and the
statements that read and write them. ``BridgeState`` (one hook process's file, with its
fallback to memory) and the server's sessions (SQLite or PostgreSQL) all keep the same records,
so the records and their statements live apart from any one way of holding the file. A
function here that is handed a connection runs inside the transaction its caller opened.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from dataclasses import dataclass
from random import getrandbits
from typing import Any

__all__ = [
    "TURN_KEY",
    "UNCOUNTED",
    "OpenOperation",
    "OpenTool",
    "begin_tool_in",
    "connect",
    "current_operation_in",
    "new_span_id",
    "read_operation",
    "read_tool",
    "stored_attributes",
    "turn_index_of",
]

# the call_index of an open call that is not a tool use (``begin_tool(counted=False)``)
UNCOUNTED = -1
# Where a tool row keeps its turn index (LobeHub's ``callIndex``): inside the ``attributes``
# JSON, so the ``tools`` table of an existing state file (or database) needs no new column.
TURN_KEY = "~otelhooks.turn_index"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS operations (
    session_id   TEXT PRIMARY KEY,
    operation_id TEXT NOT NULL,
    span_id      INTEGER NOT NULL,
    start_ns     INTEGER NOT NULL,
    prompt       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tools (
    session_id     TEXT NOT NULL,
    tool_use_id    TEXT NOT NULL,
    span_id        INTEGER NOT NULL,
    parent_span_id INTEGER NOT NULL,
    operation_id   TEXT NOT NULL,
    start_ns       INTEGER NOT NULL,
    tool_name      TEXT NOT NULL,
    tool_input     TEXT NOT NULL,
    call_index     INTEGER NOT NULL,
    attributes     TEXT NOT NULL,
    PRIMARY KEY (session_id, tool_use_id)
);
CREATE TABLE IF NOT EXISTS counters (
    session_id TEXT PRIMARY KEY,
    tool_calls INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_turns (
    session_id   TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    operation_id TEXT NOT NULL,
    calls        INTEGER NOT NULL,
    PRIMARY KEY (session_id, tool_name)
);
"""
# A tool's calls in the turn, this one included: the count restarts at 1 in another turn.
_COUNT_IN_TURN = (
    "INSERT INTO tool_turns VALUES (?, ?, ?, 1) ON CONFLICT(session_id, tool_name) "
    "DO UPDATE SET calls = CASE WHEN tool_turns.operation_id = excluded.operation_id "
    "THEN tool_turns.calls + 1 ELSE 1 END, operation_id = excluded.operation_id RETURNING calls"
)


_TOOL_ROW = "SELECT * FROM tools WHERE session_id = ? AND tool_use_id = ?"
# The session's next call index, taken only for a tool use not recorded yet (no row otherwise).
_COUNT_NEW = (
    "INSERT INTO counters SELECT ?, 1 WHERE NOT EXISTS "
    "(SELECT 1 FROM tools WHERE session_id = ? AND tool_use_id = ?) "
    "ON CONFLICT(session_id) DO UPDATE SET tool_calls = counters.tool_calls + 1 "
    "RETURNING tool_calls - 1"
)
_MEMORY = ":memory:"


def new_span_id() -> int:
    """A span id for a stored span: 63 random bits, never 0 (SQLite and PostgreSQL integers are
    signed 64-bit)."""
    return getrandbits(63) or 1


@dataclass(frozen=True, slots=True)
class OpenOperation:
    """A turn (``UserPromptSubmit`` to ``Stop``, the bridge's names): an ``invoke_agent`` span."""

    session_id: str
    operation_id: str
    span_id: int
    start_ns: int
    prompt: str


@dataclass(frozen=True, slots=True)
class OpenTool:
    """A tool use between ``PreToolUse`` and ``PostToolUse``: an ``execute_tool`` span."""

    session_id: str
    tool_use_id: str
    span_id: int
    parent_span_id: int
    operation_id: str
    start_ns: int
    tool_name: str
    tool_input: dict[str, Any]
    call_index: int
    attributes: dict[str, Any]
    # LobeHub's ``callIndex``: this tool's calls in the turn, from 1 (``tool_name`` is the
    # bridge's ``identifier/apiName``); 0 for a call that is not counted (a model call) and for
    # a row an older version wrote
    turn_index: int = 0


def turn_index_of(attributes: dict[str, Any]) -> int:
    """Take the turn index out of a tool row's stored attributes (0 when there is none)."""
    index = attributes.pop(TURN_KEY, 0)
    return index if isinstance(index, int) else 0


def stored_attributes(tool: OpenTool, attributes: dict[str, Any]) -> str:
    """The ``attributes`` column of a tool row: the attributes and the tool's turn index."""
    kept = {**attributes, TURN_KEY: tool.turn_index} if tool.turn_index else attributes
    return json.dumps(kept)


def read_tool(row: sqlite3.Row) -> OpenTool:
    """The open tool use a ``tools`` row holds."""
    attributes = json.loads(row["attributes"])
    turn_index = turn_index_of(attributes)
    return OpenTool(
        row["session_id"],
        row["tool_use_id"],
        row["span_id"],
        row["parent_span_id"],
        row["operation_id"],
        row["start_ns"],
        row["tool_name"],
        json.loads(row["tool_input"]),
        row["call_index"],
        attributes,
        turn_index,
    )


def read_operation(row: sqlite3.Row) -> OpenOperation:
    """The open turn an ``operations`` row holds."""
    return OpenOperation(
        row["session_id"], row["operation_id"], row["span_id"], row["start_ns"], row["prompt"]
    )


def current_operation_in(db: sqlite3.Connection, session_id: str) -> OpenOperation:
    """The session's open turn in ``db``, opened now if there is none."""
    row = db.execute("SELECT * FROM operations WHERE session_id = ?", (session_id,)).fetchone()
    if row is not None:
        return read_operation(row)
    new = OpenOperation(
        session_id, f"op_{uuid.uuid4().hex[:16]}", new_span_id(), time.time_ns(), ""
    )
    db.execute(
        "INSERT INTO operations VALUES (?, ?, ?, ?, ?)",
        (new.session_id, new.operation_id, new.span_id, new.start_ns, new.prompt),
    )
    return new


def begin_tool_in(
    db: sqlite3.Connection,
    operation: OpenOperation,
    tool_use_id: str,
    tool_name: str,
    tool_input: dict[str, Any],
    counted: bool,
    attributes: dict[str, Any],
) -> OpenTool:
    """Record a tool use as it starts in ``operation`` (see
    ``BridgeState.begin_tool``); a tool use recorded already gets its record."""
    key = (operation.session_id, tool_use_id)
    index, turn_index = UNCOUNTED, 0
    if counted:
        # counted unless recorded already (then no row comes back): the check and the count
        # are one statement
        counted_row = db.execute(_COUNT_NEW, (operation.session_id, *key)).fetchone()
        if counted_row is None:
            return read_tool(db.execute(_TOOL_ROW, key).fetchone())
        index = counted_row[0]
        turn_index = db.execute(
            _COUNT_IN_TURN, (operation.session_id, tool_name, operation.operation_id)
        ).fetchone()[0]
    else:
        row = db.execute(_TOOL_ROW, key).fetchone()
        if row is not None:
            return read_tool(row)
    tool = OpenTool(
        operation.session_id,
        tool_use_id,
        new_span_id(),
        operation.span_id,
        operation.operation_id,
        time.time_ns(),
        tool_name,
        tool_input,
        index,
        attributes,
        turn_index,
    )
    db.execute(
        "INSERT INTO tools VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            tool.session_id,
            tool.tool_use_id,
            tool.span_id,
            tool.parent_span_id,
            tool.operation_id,
            tool.start_ns,
            tool.tool_name,
            json.dumps(tool_input, default=str),
            tool.call_index,
            stored_attributes(tool, attributes),
        ),
    )
    return tool


def connect(
    path: str | os.PathLike[str], *, exclusive: bool = False, wait_s: float = 30.0
) -> sqlite3.Connection:
    """A connection to a state database (``":memory:"`` for one in memory), its tables made.

    ``exclusive``: no other process opens the file (a server's own sessions): the connection
    takes the file's lock once and keeps it, instead of taking and releasing it (and reading the
    shared WAL index) in every transaction; another process opening the file waits for it.
    ``wait_s``: how long a statement waits for another connection's lock before it fails.
    """
    db = sqlite3.connect(path, timeout=wait_s, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    if str(path) != _MEMORY:
        if exclusive:  # before WAL's first use: its index then lives in this process's memory
            db.execute("PRAGMA locking_mode=EXCLUSIVE")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(_SCHEMA)
    return db
