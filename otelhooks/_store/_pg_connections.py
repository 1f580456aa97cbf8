"""What the shared parts of a PostgreSQL store (event logs, outbox, sessions, web index,
approvals) ask of it: statements, transactions, its ``LISTEN`` connection and its name.

:class:`~otelhooks._store._postgres.PostgresStore` makes those parts and hands itself to each;
they know it by this protocol only, so the store's module is the one that imports theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import psycopg

    from otelhooks._store._pg_listen import Listener

__all__ = ["PgConnections"]


class PgConnections(Protocol):
    """A PostgreSQL store as its shared parts use it (see
    :class:`~otelhooks._store._postgres.PostgresStore` for what each method promises)."""

    name: str

    def transaction(self) -> AbstractContextManager[psycopg.Connection[tuple[object, ...]]]: ...

    def statement(
        self,
        sql: bytes,
        params: Mapping[str, object] | Sequence[object] = (),
        *,
        idempotent: bool = False,
    ) -> list[tuple[Any, ...]]: ...

    def listener(self) -> Listener: ...
