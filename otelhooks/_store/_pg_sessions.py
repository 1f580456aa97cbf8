"""Claude Code session state in PostgreSQL: a ``PreToolUse`` answered by one instance and its
``PostToolUse`` by another end the same ``execute_tool`` span.

:class:`SharedSessions` is :class:`~otelhooks.integrations.claude_code._sessions.ServerSessions`
with one change: its transactions run on the store (the tables ``operations``, ``tools`` and
``counters`` of the ``otelhooks_claude_code`` schema, the bridge's own, made the transaction's
``search_path``), so the bridge logic is the same code. Each transaction first takes one
advisory lock, which serializes the fleet's session changes as ``BEGIN IMMEDIATE`` serializes
them in SQLite (the lock and the path in one round trip).

What stays per instance: the bounds' accounting (sessions held, bytes, expiry) counts what this
instance started, and the join memory of recently ended tool uses (Claude Code's own
telemetry joins its tool spans on the instance that ended them, or finds them open).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from otelhooks.integrations.claude_code._sessions import DropCounter, ServerSessions

if TYPE_CHECKING:
    import psycopg

    from otelhooks._store._postgres import PostgresStore

__all__ = ["SESSIONS_SCHEMA", "SharedSessions"]

SESSIONS_SCHEMA: Final = "otelhooks_claude_code"
_LOCK: Final = 0x6F74_6C68_6B63


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


class SharedSessions(ServerSessions):
    """Claude Code sessions shared by every ``serve`` instance on a PostgreSQL store.

    Args:
        store: the store (its schema holds the session tables).
        on_drop, and the bounds: as for ``ServerSessions`` (accounted per instance).
    """

    def __init__(self, store: PostgresStore, *, on_drop: DropCounter | None = None) -> None:
        super().__init__(None, on_drop=on_drop)  # the in-memory tables stay empty
        self.store = store

    @property
    def durable(self) -> bool:
        return True

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        with self.store.transaction() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s), set_config('search_path', %s, true)",
                (_LOCK, SESSIONS_SCHEMA),
            )
            yield _Transaction(conn)
